"""reput_message / real_destination: the one builder behind the schedule, the timer and send-back."""

from __future__ import annotations

import pytest

from rocketq.common.message import MessageExt
from rocketq.common.tags import java_hash_code
from rocketq.store.reput import real_destination, reput_message


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"REAL_TOPIC": "T", "REAL_QID": "3"}, ("T", 3)),
        ({"REAL_TOPIC": "T", "REAL_QID": "0"}, ("T", 0)),
        ({"REAL_TOPIC": "T"}, None),
        ({"REAL_TOPIC": "T", "REAL_QID": "x"}, None),
        ({"REAL_TOPIC": "T", "REAL_QID": "-1"}, None),
        ({"REAL_TOPIC": "", "REAL_QID": "1"}, None),
        ({"REAL_QID": "1"}, None),
    ],
)
def test_real_destination(props: dict[str, str], expected: tuple[str, int] | None) -> None:
    assert real_destination(props) == expected


def stored() -> MessageExt:
    return MessageExt(
        "SCHEDULE_TOPIC_XXXX", b"body as stored", flag=7, sys_flag=0x1, born_timestamp=123,
        born_host=("10.0.0.1", 5000), store_host=("10.0.0.2", 10911), reconsume_times=2,
        properties={"TAGS": "old"},
    )  # fmt: skip


def test_reput_carries_the_stored_fields_and_takes_the_tags_of_the_new_properties() -> None:
    ext = stored()
    props = {"TAGS": "TagA", "KEYS": "k"}
    msg = reput_message(ext, "Real", 3, props)
    assert (msg.topic, msg.queue_id, msg.body, msg.flag, msg.sys_flag) == (
        "Real",
        3,
        b"body as stored",
        7,
        0x1,
    )
    assert (msg.born_timestamp, msg.born_host, msg.store_host) == (
        123,
        ("10.0.0.1", 5000),
        ("10.0.0.2", 10911),
    )
    assert msg.properties is props and msg.tags_code == java_hash_code("TagA")
    assert msg.reconsume_times == 2
    assert reput_message(ext, "%RETRY%g", 0, {}, reconsume_times=3).reconsume_times == 3
    assert reput_message(ext, "Real", 0, {}).tags_code == 0
