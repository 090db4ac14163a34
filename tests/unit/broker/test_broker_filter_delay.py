import pytest

from rocketq.broker.delay import (
    DelayLevelTable,
    delay_level_of,
    parse_delay_levels,
    redirect_to_schedule_topic,
)
from rocketq.broker.filter import TagMessageFilter, build_tag_filter, is_tag_type
from rocketq.store.message import BrokerMessage


def test_tag_filter() -> None:
    assert build_tag_filter("*", []) is None
    assert build_tag_filter(None, []) is None
    f = build_tag_filter("TagA || TagB", [2598919, 2598920])
    assert isinstance(f, TagMessageFilter)
    assert f.is_matched_by_consume_queue(2598919)
    assert not f.is_matched_by_consume_queue(0)
    assert f.is_matched_by_consume_queue(None)
    # Java compares the low 32 bits of the 64-bit consume-queue code
    assert f.is_matched_by_consume_queue(2598919 + (1 << 32))
    assert is_tag_type(None) and is_tag_type("") and is_tag_type("TAG") and not is_tag_type("SQL92")


def test_delay_levels() -> None:
    assert parse_delay_levels("1s 2m 1h 1d") == [1000, 120_000, 3_600_000, 86_400_000]
    with pytest.raises(ValueError, match="5x"):
        parse_delay_levels("1s 5x")
    t = DelayLevelTable()
    assert t.max_level == 18 and t.delay_ms(3) == 10_000 and t.delay_ms(99) == 7_200_000


def test_redirect_keeps_the_real_topic_and_caps_the_level() -> None:
    msg = BrokerMessage(topic="T", queue_id=3, body=b"x", properties={"DELAY": "40"})
    redirect_to_schedule_topic(msg, 40, DelayLevelTable(), 1_000)
    assert (msg.topic, msg.queue_id) == ("SCHEDULE_TOPIC_XXXX", 17)
    assert msg.properties == {"DELAY": "18", "REAL_TOPIC": "T", "REAL_QID": "3"}
    assert msg.tags_code == 1_000 + 7_200_000
    assert delay_level_of({"DELAY": "x"}) == 0 and delay_level_of({}) == 0
