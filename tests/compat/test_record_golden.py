"""The stored record of docs/protocol.md 4.1 in a worked example, byte for byte (encode and decode)."""

from __future__ import annotations

from rocketq.common.message import MessageExt
from rocketq.common.record.codec import decode_record, decode_records, encode_record
from rocketq.common.record.layout import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, body_crc

# The first 0x80 bytes of the example record (layout: docs/protocol.md 4.1).
GOLDEN_PREFIX = bytes.fromhex(
    "00 00 00 b3 da a3 20 a7 77 d1 89 82 00 00 00 01"
    "00 00 00 00 00 00 00 00 00 00 00 07 00 00 00 00"
    "00 01 e2 40 00 00 00 00 00 00 01 8b cf e5 68 00"
    "c0 a8 00 0a 00 00 d4 31 00 00 01 8b cf e5 68 05"
    "c0 a8 00 14 00 00 2a 9f 00 00 00 00 00 00 00 00"
    "00 00 00 00 00 00 00 05 48 65 6c 6c 6f 09 54 6f"
    "70 69 63 54 65 73 74 00 4a 54 41 47 53 01 54 61"
    "67 41 02 55 4e 49 51 5f 4b 45 59 01 43 30 41 38"
)
PROPERTIES = "TAGS\x01TagA\x02UNIQ_KEY\x01C0A8000A3039000000000000000A0000\x02CLUSTER\x01DefaultCluster"
# The properties start at 0x69; the example prints the record up to 0x80 and elides the rest.
PROPERTIES_START = 0x69
GOLDEN = GOLDEN_PREFIX + PROPERTIES.encode()[len(GOLDEN_PREFIX) - PROPERTIES_START :]


def example() -> MessageExt:
    return MessageExt(
        "TopicTest",
        b"Hello",
        queue_id=1,
        queue_offset=7,
        commit_log_offset=123456,
        born_timestamp=0x18BCFE56800,
        store_timestamp=0x18BCFE56805,
        born_host=("192.168.0.10", 54321),
        store_host=("192.168.0.20", 10911),
        properties={
            "TAGS": "TagA",
            "UNIQ_KEY": "C0A8000A3039000000000000000A0000",
            "CLUSTER": "DefaultCluster",
        },
    )


def test_golden_is_179_bytes_and_ends_with_the_properties() -> None:
    assert len(GOLDEN) == 179
    assert GOLDEN.endswith(b"CLUSTER\x01DefaultCluster")


def test_magic_codes_and_crc_match_java() -> None:
    assert MESSAGE_MAGIC_CODE & 0xFFFFFFFF == 0xDAA320A7
    assert BLANK_MAGIC_CODE & 0xFFFFFFFF == 0xCBD43194
    assert body_crc(b"Hello") == 0x77D18982


def test_encode_matches_the_worked_example_byte_for_byte() -> None:
    assert encode_record(example()) == GOLDEN


def test_decode_the_worked_example() -> None:
    msg, end = decode_record(GOLDEN)
    assert end == 179
    assert msg.topic == "TopicTest" and msg.body == b"Hello"
    assert (msg.queue_id, msg.queue_offset, msg.commit_log_offset) == (1, 7, 123456)
    assert msg.store_size == 179 and msg.body_crc == 0x77D18982 and msg.sys_flag == 0
    assert msg.born_host == ("192.168.0.10", 54321)
    assert msg.store_host == ("192.168.0.20", 10911)
    assert (msg.born_timestamp, msg.store_timestamp) == (0x18BCFE56800, 0x18BCFE56805)
    assert msg.tags == "TagA"
    assert msg.properties["CLUSTER"] == "DefaultCluster"
    # docs/protocol.md 4.6: the offset msgId of this very record.
    assert msg.offset_msg_id == "C0A8001400002A9F000000000001E240"
    assert msg.msg_id == "C0A8000A3039000000000000000A0000"


def test_a_pull_body_of_two_records_and_a_torn_third() -> None:
    body = GOLDEN + GOLDEN + GOLDEN[:100]
    msgs = decode_records(body)
    assert len(msgs) == 2
