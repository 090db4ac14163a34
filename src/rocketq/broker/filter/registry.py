"""The broker's registry of consumer SQL92 expressions, and the filter a pull, pop or check gets.

Port of org.apache.rocketmq.broker.filter.ConsumerFilterManager / ConsumerFilterData (4.9.8) plus the
filter decisions of PullMessageProcessor and ClientManageProcessor.checkClientConfig, in Java's order
and with Java's response codes (carried by the FilterError raised; see the package docstring).
Expressions are keyed by (group, topic), compiled once (sql92.compile_sql92 caches by text) and
versioned by the subscription's subVersion: an older or equal version never replaces a newer one.
Deviations: nothing is persisted (consumerFilter.json holds bloom-filter data, which we do not
keep; heartbeats re-register within seconds after a restart); a bad expression raises
FilterParseError instead of being dropped silently, and a pull whose own subscription does not
parse answers SUBSCRIPTION_PARSE_FAILED (4.9.8 only does with assertions enabled).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from rocketq.broker.filter.errors import (
    FilterDataNotExistError,
    FilterDataNotLatestError,
    FilterNotSupportedError,
    FilterParseError,
)
from rocketq.broker.filter.message_filter import (
    EXPRESSION_TYPE_SQL92,
    ExpressionMessageFilter,
    RetryTopicMessageFilter,
    Sql92MessageFilter,
    build_tag_filter,
    is_tag_type,
)
from rocketq.broker.filter.sql92 import CompiledExpression, compile_sql92
from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.tags import parse_tag_expression

DEFAULT_CLEAN_AFTER_MS = 24 * 3600 * 1000  # Java BrokerConfig.filterDataCleanTimeSpan


class SubscriptionLike(Protocol):
    """What registration reads from a heartbeat's SubscriptionData."""

    @property
    def topic(self) -> str: ...
    @property
    def sub_string(self) -> str: ...
    @property
    def expression_type(self) -> str: ...
    @property
    def sub_version(self) -> int: ...


@dataclass(slots=True)
class ConsumerFilterData:
    """One group's compiled expression for one topic (Java ConsumerFilterData without the bloom data)."""

    group: str
    topic: str
    expression: str
    expression_type: str
    compiled: CompiledExpression
    client_version: int
    born_time_ms: int
    dead_time_ms: int = 0
    message_filter: Sql92MessageFilter = field(init=False)

    def __post_init__(self) -> None:
        self.message_filter = Sql92MessageFilter(self.compiled)

    @property
    def is_dead(self) -> bool:
        return self.dead_time_ms >= self.born_time_ms


def compile_filter_expression(expression_type: str | None, expression: str | None) -> CompiledExpression:
    """FilterFactory.get(type).compile(expression): only SQL92 compiles; raises FilterParseError."""
    if expression_type != EXPRESSION_TYPE_SQL92:
        reason = f"expression type {expression_type!r} is not supported (use TAG or SQL92)"
        raise FilterParseError(reason, expression=expression or "")
    if not expression:
        raise FilterParseError("the expression is empty", expression="")
    return compile_sql92(expression)


class ConsumerFilterManager:
    """(group, topic) -> ConsumerFilterData, fed by heartbeats, read by pulls. Single-threaded (the loop)."""

    def __init__(
        self,
        *,
        enable_property_filter: bool = False,
        filter_support_retry: bool = False,
        clock: Clock = SYSTEM_CLOCK,
        clean_after_ms: int = DEFAULT_CLEAN_AFTER_MS,
    ) -> None:
        self.enable_property_filter = enable_property_filter
        self.filter_support_retry = filter_support_retry
        self.clock = clock
        self.clean_after_ms = clean_after_ms
        self._data: dict[tuple[str, str], ConsumerFilterData] = {}

    # -- registration (HEART_BEAT) -------------------------------------------------------------------
    def register(
        self, group: str, topic: str, expression_type: str | None, expression: str | None, version: int
    ) -> bool:
        """Record a group's expression for a topic; True if the registry now holds it at this version.

        TAG subscriptions and empty expressions are ignored (False). An expression with a version not
        newer than the one held is ignored too (it revives a dead entry of the same version). Raises
        FilterParseError for an expression that does not compile, after dropping the entry it would
        have replaced (Java does the same, so pulls answer FILTER_DATA_NOT_EXIST instead of filtering
        with a stale expression). Works whatever enablePropertyFilter says: pulls check that.
        """
        if is_tag_type(expression_type) or not expression:
            return False
        key = (group, topic)
        old = self._data.get(key)
        if old is not None:
            if version <= old.client_version:
                if version == old.client_version and old.is_dead:
                    old.dead_time_ms = 0
                    return True
                return False
            if old.expression == expression and old.expression_type == expression_type:
                old.client_version = version
                old.dead_time_ms = 0
                return True
        try:
            compiled = compile_filter_expression(expression_type, expression)
        except FilterParseError:
            self._data.pop(key, None)
            raise
        assert expression_type is not None  # not a tag type, so set
        self._data[key] = ConsumerFilterData(
            group, topic, expression, expression_type, compiled, version, self.clock.now_ms()
        )
        return True

    def register_group(self, group: str, subscriptions: Iterable[SubscriptionLike]) -> list[FilterParseError]:
        """A heartbeat's subscriptions (Java register(group, subList)): registers each, marks the group's
        expressions for topics no longer subscribed as dead, and returns the parse errors (HEART_BEAT
        itself still answers SUCCESS in 4.9.8).
        """
        errors: list[FilterParseError] = []
        topics: set[str] = set()
        for sub in subscriptions:
            topics.add(sub.topic)
            try:
                self.register(group, sub.topic, sub.expression_type, sub.sub_string, sub.sub_version)
            except FilterParseError as exc:
                errors.append(exc)
        now = self.clock.now_ms()
        for (g, topic), data in self._data.items():
            if g == group and topic not in topics and not data.is_dead:
                data.dead_time_ms = now
        return errors

    def unregister(self, group: str) -> None:
        """The group's last consumer left: its expressions are dead (kept until clean())."""
        now = self.clock.now_ms()
        for (g, _topic), data in self._data.items():
            if g == group and not data.is_dead:
                data.dead_time_ms = now

    def clean(self) -> int:
        """Drop expressions dead for longer than clean_after_ms; returns how many went."""
        now = self.clock.now_ms()
        gone = [k for k, d in self._data.items() if d.is_dead and now - d.dead_time_ms >= self.clean_after_ms]
        for key in gone:
            del self._data[key]
        return len(gone)

    def get(self, group: str, topic: str) -> ConsumerFilterData | None:
        return self._data.get((group, topic))

    def __len__(self) -> int:
        return len(self._data)

    # -- decisions -----------------------------------------------------------------------------------
    def check_client_config(self, expression_type: str | None, expression: str | None) -> None:
        """CHECK_CLIENT_CONFIG (46): raises FilterNotSupportedError (1) or FilterParseError (23)."""
        if is_tag_type(expression_type):
            return
        if not self.enable_property_filter:
            raise FilterNotSupportedError(expression_type)
        compile_filter_expression(expression_type, expression)

    def filter_for_request(
        self,
        group: str,
        topic: str,
        expression_type: str | None,
        expression: str | None,
        *,
        require_property_filter: bool = True,
    ) -> ExpressionMessageFilter | None:
        """The filter of a pull carrying its own subscription (FLAG_SUBSCRIPTION), or of a POP.

        Raises FilterParseError (23), then FilterNotSupportedError (1), in Java's order. POP passes
        require_property_filter=False: the 5.x PopMessageProcessor filters SQL92 whatever
        enablePropertyFilter says.
        """
        if is_tag_type(expression_type):
            parsed = parse_tag_expression(expression)
            return self._with_retry(group, topic, build_tag_filter(parsed.sub_string, parsed.codes))
        compiled = compile_filter_expression(expression_type, expression)
        if require_property_filter and not self.enable_property_filter:
            raise FilterNotSupportedError(expression_type)
        return Sql92MessageFilter(compiled)

    def filter_for_subscription(
        self,
        group: str,
        topic: str,
        expression_type: str | None,
        sub_string: str | None,
        code_set: Iterable[int],
        request_sub_version: int,
    ) -> ExpressionMessageFilter | None:
        """The filter of a pull using the heartbeat's subscription (after the SUBSCRIPTION_* checks).

        Raises FilterDataNotExistError (27), FilterDataNotLatestError (28), FilterNotSupportedError (1),
        in Java's order.
        """
        if is_tag_type(expression_type):
            return self._with_retry(group, topic, build_tag_filter(sub_string, code_set))
        data = self._data.get((group, topic))
        if data is None:
            raise FilterDataNotExistError(group, topic)
        if data.client_version < request_sub_version:
            raise FilterDataNotLatestError(data.client_version, request_sub_version)
        if not self.enable_property_filter:
            raise FilterNotSupportedError(expression_type)
        return data.message_filter

    def _with_retry(
        self, group: str, topic: str, tag_filter: ExpressionMessageFilter | None
    ) -> ExpressionMessageFilter | None:
        if self.filter_support_retry and topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX):
            # Java takes the group from the retry topic's name, not from the request.
            return RetryTopicMessageFilter(self, topic[len(C.RETRY_GROUP_TOPIC_PREFIX) :], tag_filter)
        return tag_filter
