"""The tag filter a pull hands to the store: match consume-queue units by the tag hash code.

Port of org.apache.rocketmq.broker.filter.ExpressionMessageFilter, TAG branch (4.9.8). A subscription to
everything (`*`) gets no filter at all (`None`), so the store's read loop skips the call entirely.
Hash collisions pass; clients re-check the tag string. SQL92 (property) filtering plugs in here later
through the same MessageFilter protocol (rocketq.store.message_store.MessageFilter).
"""

from __future__ import annotations

from collections.abc import Iterable

from rocketq.common.tags import SUB_ALL

EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"
_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1


def is_tag_type(expression_type: str | None) -> bool:
    """Java ExpressionType.isTagType: null, empty and "TAG" are all tag expressions."""
    return not expression_type or expression_type == EXPRESSION_TYPE_TAG


class TagMessageFilter:
    """Matches a consume-queue unit whose tag code is one of the subscription's codes."""

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

    def is_matched_by_commit_log(self, record: bytes | None, properties: dict[str, str] | None) -> bool:
        return True

    def __repr__(self) -> str:
        return f"TagMessageFilter({sorted(self.codes)})"


def build_tag_filter(sub_string: str | None, codes: Iterable[int]) -> TagMessageFilter | None:
    """The filter for a TAG subscription, or None when it matches everything."""
    if sub_string is None or sub_string.strip() in ("", SUB_ALL):
        return None
    return TagMessageFilter(codes)
