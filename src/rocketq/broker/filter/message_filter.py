"""The filters a pull (or pop) hands to the store: tag hash codes, SQL92 on properties, retry topics.

Port of org.apache.rocketmq.broker.filter.ExpressionMessageFilter (TAG and SQL92 branches),
ExpressionForRetryMessageFilter and MessageEvaluationContext (4.9.8). All implement the store's
MessageFilter protocol (rocketq.store.protocols): `is_matched_by_consume_queue(tags_code)` on the
consume-queue unit, then `is_matched_by_commit_log(record, properties)` on the stored record (the
store passes the record bytes, long polling passes the decoded properties). A TAG subscription to
everything gets no filter at all (None), so the store skips the calls. Deviation: no bloom-filter
bit maps (Java only has them with enableCalcFilterBitMap + consume-queue ext, both off by default),
so SQL92 is decided on the commit log for every message, as Java does by default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from rocketq.broker.filter.properties import PropertySelector
from rocketq.broker.filter.sql92 import CompiledExpression
from rocketq.common import constants as C
from rocketq.common.record.codec import record_properties, record_properties_text
from rocketq.common.tags import SUB_ALL

if TYPE_CHECKING:
    from rocketq.broker.filter.registry import ConsumerFilterManager

EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"
_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1
_NO_PROPERTIES: dict[str, str] = {}


def is_tag_type(expression_type: str | None) -> bool:
    """Java ExpressionType.isTagType: null, empty and "TAG" are all tag expressions."""
    return not expression_type or expression_type == EXPRESSION_TYPE_TAG


class ExpressionMessageFilter:
    """Base of the broker's message filters (Java ExpressionMessageFilter): both checks pass by default."""

    __slots__ = ()

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        return True

    def is_matched_by_commit_log(self, record: bytes | None, properties: Mapping[str, str] | None) -> bool:
        return True


class TagMessageFilter(ExpressionMessageFilter):
    """Matches a consume-queue unit whose tag code is one of the subscription's codes (collisions pass)."""

    __slots__ = ("codes",)

    def __init__(self, codes: Iterable[int]) -> None:
        self.codes = frozenset(codes)

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        if tags_code is None:
            return True
        if tags_code < _INT_MIN or tags_code > _INT_MAX:
            # Java compares tagsCode.intValue(): the low 32 bits, signed.
            tags_code = ((tags_code + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
        return tags_code in self.codes

    def __repr__(self) -> str:
        return f"TagMessageFilter({sorted(self.codes)})"


class Sql92MessageFilter(ExpressionMessageFilter):
    """Evaluates an SQL92 expression on each record's properties (TAGS is one of them)."""

    __slots__ = ("_matches", "_select", "expression")

    def __init__(self, expression: CompiledExpression) -> None:
        self.expression = expression
        self._matches = expression.matches
        self._select = PropertySelector(expression.property_names).select

    def is_matched_by_commit_log(self, record: bytes | None, properties: Mapping[str, str] | None) -> bool:
        if properties is None:
            # Only the properties the expression names: the others cannot change the outcome.
            properties = (
                self._select(record_properties_text(record)) if record is not None else _NO_PROPERTIES
            )
        return self._matches(properties)

    def __repr__(self) -> str:
        return f"Sql92MessageFilter({self.expression.text!r})"


class RetryTopicMessageFilter(ExpressionMessageFilter):
    """A pull of %RETRY%<group> with filterSupportRetry: each message is judged by the SQL92 expression the
    group registered for the message's original topic (property RETRY_TOPIC); no expression, no filter.
    """

    __slots__ = ("group", "manager", "tag_filter")

    def __init__(
        self, manager: ConsumerFilterManager, group: str, tag_filter: ExpressionMessageFilter | None
    ) -> None:
        self.manager = manager
        self.group = group
        self.tag_filter = tag_filter

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        return self.tag_filter is None or self.tag_filter.is_matched_by_consume_queue(tags_code)

    def is_matched_by_commit_log(self, record: bytes | None, properties: Mapping[str, str] | None) -> bool:
        if properties is None:
            properties = record_properties(record) if record is not None else _NO_PROPERTIES
        real_topic = properties.get(C.PROPERTY_RETRY_TOPIC)
        data = self.manager.get(self.group, real_topic) if real_topic else None
        if data is None:
            return True
        return data.compiled.matches(properties)

    def __repr__(self) -> str:
        return f"RetryTopicMessageFilter(group={self.group!r})"


def build_tag_filter(sub_string: str | None, codes: Iterable[int]) -> TagMessageFilter | None:
    """The filter for a TAG subscription, or None when it matches everything."""
    if sub_string is None or sub_string.strip() in ("", SUB_ALL):
        return None
    return TagMessageFilter(codes)
