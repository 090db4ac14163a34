"""ConsumerFilterManager: versioned registration from heartbeats and the broker's filter decisions, with
the response codes RocketMQ 4.9.8 answers.
"""

from __future__ import annotations

import pytest

from rocketq.broker.filter import (
    ConsumerFilterManager,
    FilterDataNotExistError,
    FilterDataNotLatestError,
    FilterError,
    FilterNotSupportedError,
    FilterParseError,
    RetryTopicMessageFilter,
    Sql92MessageFilter,
    TagMessageFilter,
)
from rocketq.common.clock import ManualClock
from rocketq.common.tags import tags_code
from rocketq.remoting.protocol.bodies.heartbeat import SubscriptionData
from rocketq.remoting.protocol.codes import ResponseCode

G, T = "GID_orders", "TopicOrders"


def sql(topic: str, expression: str, version: int) -> SubscriptionData:
    return SubscriptionData(topic=topic, sub_string=expression, expression_type="SQL92", sub_version=version)


def manager(enabled: bool = True, **kwargs: object) -> ConsumerFilterManager:
    return ConsumerFilterManager(enable_property_filter=enabled, **kwargs)  # type: ignore[arg-type]


def test_register_is_versioned() -> None:
    m = manager()
    assert m.register(G, T, "SQL92", "a > 1", 100)
    assert m.get(G, T) is not None and m.get(G, T).client_version == 100  # type: ignore[union-attr]
    assert not m.register(G, T, "SQL92", "a > 2", 100)  # same version: ignored
    assert not m.register(G, T, "SQL92", "a > 2", 99)  # older: ignored
    assert m.get(G, T).expression == "a > 1"  # type: ignore[union-attr]
    assert m.register(G, T, "SQL92", "a > 1", 101)  # newer, same text: version moves on
    assert m.get(G, T).client_version == 101  # type: ignore[union-attr]
    assert m.register(G, T, "SQL92", "a > 2", 102)
    data = m.get(G, T)
    assert data is not None and data.expression == "a > 2" and data.compiled.matches({"a": "3"})


def test_tag_subscriptions_are_not_held() -> None:
    m = manager()
    assert not m.register(G, T, "TAG", "TagA", 1)
    assert not m.register(G, T, None, "*", 1)
    assert not m.register(G, T, "SQL92", "", 1)
    assert len(m) == 0


def test_bad_expression_raises_and_drops_the_old_one() -> None:
    m = manager()
    m.register(G, T, "SQL92", "a > 1", 1)
    with pytest.raises(FilterParseError) as info:
        m.register(G, T, "SQL92", "a >", 2)
    assert info.value.response_code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert m.get(G, T) is None  # Java removes it: pulls then answer FILTER_DATA_NOT_EXIST
    with pytest.raises(FilterParseError):
        m.register(G, T, "CLASS", "a > 1", 3)


def test_registration_works_with_property_filter_off() -> None:
    m = manager(enabled=False)
    assert m.register(G, T, "SQL92", "a > 1", 1)  # Java registers anyway; the pull refuses later


def test_register_group_marks_dropped_topics_dead_and_revives() -> None:
    clock = ManualClock()
    m = manager(clock=clock)
    errors = m.register_group(G, [sql(T, "a > 1", 1), sql("Other", "b = 'x'", 1), sql("Bad", "b = ", 1)])
    assert [e.expression for e in errors] == ["b = "]
    clock.advance(10)
    assert m.register_group(G, [sql(T, "a > 1", 1)]) == []
    assert not m.get(G, T).is_dead and m.get(G, "Other").is_dead  # type: ignore[union-attr]
    clock.advance(10)
    assert m.register_group(G, [sql(T, "a > 1", 1), sql("Other", "b = 'x'", 1)]) == []
    assert not m.get(G, "Other").is_dead  # type: ignore[union-attr]


def test_unregister_then_clean() -> None:
    clock = ManualClock()
    m = manager(clock=clock)
    m.register(G, T, "SQL92", "a > 1", 1)
    m.register("other", T, "SQL92", "a > 1", 1)
    clock.advance(5)
    m.unregister(G)
    assert m.get(G, T).is_dead  # type: ignore[union-attr]
    assert m.clean() == 0
    clock.advance(24 * 3600 * 1000)
    assert m.clean() == 1
    assert m.get(G, T) is None and m.get("other", T) is not None


def test_check_client_config_codes() -> None:
    manager(enabled=False).check_client_config("TAG", "TagA")
    with pytest.raises(FilterNotSupportedError) as off:
        manager(enabled=False).check_client_config("SQL92", "a > 1")
    assert off.value.response_code == ResponseCode.SYSTEM_ERROR
    assert str(off.value) == "The broker does not support consumer to filter message by SQL92"
    manager().check_client_config("SQL92", "a > 1")
    with pytest.raises(FilterParseError) as bad:
        manager().check_client_config("SQL92", "a > > 1")
    assert bad.value.response_code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "column 5" in str(bad.value)


def test_filter_for_request() -> None:
    m = manager()
    assert m.filter_for_request(G, T, "TAG", "*") is None
    assert m.filter_for_request(G, T, None, None) is None
    tag = m.filter_for_request(G, T, "TAG", "TagA || TagB")
    assert isinstance(tag, TagMessageFilter) and tag.is_matched_by_consume_queue(tags_code("TagB"))
    f = m.filter_for_request(G, T, "SQL92", "a = 1")
    assert isinstance(f, Sql92MessageFilter) and f.is_matched_by_commit_log(None, {"a": "1"})
    with pytest.raises(FilterParseError):
        m.filter_for_request(G, T, "SQL92", "a = ")
    off = manager(enabled=False)
    with pytest.raises(FilterParseError):  # Java parses before it looks at enablePropertyFilter
        off.filter_for_request(G, T, "SQL92", "a = ")
    with pytest.raises(FilterNotSupportedError):
        off.filter_for_request(G, T, "SQL92", "a = 1")
    pop = off.filter_for_request(G, T, "SQL92", "a = 1", require_property_filter=False)
    assert isinstance(pop, Sql92MessageFilter)


def test_filter_for_subscription_codes_in_java_order() -> None:
    m = manager()
    with pytest.raises(FilterDataNotExistError) as missing:
        m.filter_for_subscription(G, T, "SQL92", "a = 1", [], 5)
    assert missing.value.response_code == ResponseCode.FILTER_DATA_NOT_EXIST
    m.register(G, T, "SQL92", "a = 1", 5)
    with pytest.raises(FilterDataNotLatestError) as stale:
        m.filter_for_subscription(G, T, "SQL92", "a = 1", [], 6)
    assert stale.value.response_code == ResponseCode.FILTER_DATA_NOT_LATEST
    f = m.filter_for_subscription(G, T, "SQL92", "a = 1", [], 5)
    assert isinstance(f, Sql92MessageFilter) and f is m.filter_for_subscription(G, T, "SQL92", "a = 1", [], 4)
    off = manager(enabled=False)
    off.register(G, T, "SQL92", "a = 1", 5)
    with pytest.raises(FilterNotSupportedError):
        off.filter_for_subscription(G, T, "SQL92", "a = 1", [], 5)
    tag = m.filter_for_subscription(G, T, "TAG", "TagA", [tags_code("TagA")], 5)
    assert isinstance(tag, TagMessageFilter)
    assert m.filter_for_subscription(G, T, "TAG", "*", [], 5) is None


def test_every_refusal_is_a_filter_error_with_a_remark() -> None:
    for err in (
        FilterNotSupportedError("SQL92"),
        FilterDataNotExistError(G, T),
        FilterDataNotLatestError(1, 2),
    ):
        assert isinstance(err, FilterError) and str(err)


def test_retry_topic_uses_the_original_topics_expression() -> None:
    m = manager(filter_support_retry=True)
    m.register(G, T, "SQL92", "a = 1", 1)
    f = m.filter_for_subscription(G, f"%RETRY%{G}", "TAG", "*", [], 1)
    assert isinstance(f, RetryTopicMessageFilter)
    assert f.is_matched_by_consume_queue(123)
    assert f.is_matched_by_commit_log(None, {"RETRY_TOPIC": T, "a": "1"})
    assert not f.is_matched_by_commit_log(None, {"RETRY_TOPIC": T, "a": "2"})
    assert f.is_matched_by_commit_log(None, {"RETRY_TOPIC": "Unfiltered", "a": "2"})
    assert f.is_matched_by_commit_log(None, {"a": "2"})
    # without filterSupportRetry (the default) the retry topic is not filtered at all
    assert manager().filter_for_subscription(G, f"%RETRY%{G}", "TAG", "*", [], 1) is None
