"""Record and batch codec (rocketq.common.record): round trips and malformed input."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.common.constants import MessageSysFlag
from rocketq.common.message import Message, MessageExt
from rocketq.common.record.codec import (
    decode_batch,
    decode_record,
    decode_records,
    encode_batch,
    encode_record,
    iter_record_spans,
)
from rocketq.common.record.layout import (
    BORNHOST_V6_FLAG,
    STOREHOST_V6_FLAG,
    RecordDecodeError,
    body_crc,
    record_size,
)

_prop_text = st.text(
    alphabet=st.characters(exclude_characters="\x01\x02", exclude_categories=["Cs"]),
    min_size=1,
    max_size=12,
)
_props = st.dictionaries(_prop_text, _prop_text, max_size=5)
_topic = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-%|", min_size=1, max_size=127
)
_ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
_ipv6 = st.sampled_from(["::1", "fe80::1", "2001:db8::8a2e:370:7334", "::ffff:10.0.0.1"])
_host = st.tuples(st.one_of(_ipv4, _ipv6), st.integers(0, 65535))
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(0, 2**62)


@st.composite
def messages(draw: st.DrawFn) -> MessageExt:
    return MessageExt(
        draw(_topic),
        draw(st.binary(max_size=300)),
        properties=draw(_props),
        flag=draw(_i32),
        queue_id=draw(st.integers(0, 1023)),
        queue_offset=draw(_i64),
        commit_log_offset=draw(_i64),
        sys_flag=draw(st.sampled_from([0, 0x2, 0x8])),
        born_timestamp=draw(_i64),
        store_timestamp=draw(_i64),
        born_host=draw(_host),
        store_host=draw(_host),
        reconsume_times=draw(st.integers(0, 16)),
        prepared_transaction_offset=draw(_i64),
    )


@settings(max_examples=150, deadline=None)
@given(messages())
def test_record_round_trip(msg: MessageExt) -> None:
    raw = encode_record(msg)
    back, end = decode_record(raw)
    assert end == len(raw) == back.store_size
    for name in (
        "topic",
        "body",
        "flag",
        "properties",
        "queue_id",
        "queue_offset",
        "commit_log_offset",
        "born_timestamp",
        "store_timestamp",
        "reconsume_times",
        "prepared_transaction_offset",
    ):
        assert getattr(back, name) == getattr(msg, name), name
    assert back.body_crc == body_crc(msg.body)
    assert back.born_host[1] == msg.born_host[1] and back.store_host[1] == msg.store_host[1]
    born_v6 = ":" in msg.born_host[0]
    store_v6 = ":" in msg.store_host[0]
    assert bool(back.sys_flag & BORNHOST_V6_FLAG) == born_v6
    assert bool(back.sys_flag & STOREHOST_V6_FLAG) == store_v6
    assert len(raw) == record_size(
        len(msg.body),
        len(msg.topic),
        len(raw) - record_size(len(msg.body), len(msg.topic), 0, born_v6, store_v6),
        born_v6,
        store_v6,
    )
    assert len(back.offset_msg_id) == (56 if store_v6 else 32)
    assert back.offset_msg_id.endswith(f"{msg.commit_log_offset:016X}")
    # Re-encoding a decoded record gives the same bytes (CHECK_TRANSACTION_STATE re-encodes).
    assert encode_record(back) == raw


@settings(max_examples=50, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=5), st.integers(1, 60))
def test_records_back_to_back_and_a_torn_tail(msgs: list[MessageExt], cut: int) -> None:
    raws = [encode_record(m) for m in msgs]
    body = b"".join(raws)
    assert [m.body for m in decode_records(body)] == [m.body for m in msgs]
    assert [size for _, size in iter_record_spans(body)] == [len(r) for r in raws]
    torn = body[: len(body) - min(cut, len(raws[-1]) - 1)]
    assert len(decode_records(torn)) == len(msgs) - 1


def test_ipv4_host_in_a_v6_field_is_ipv4_mapped() -> None:
    msg = MessageExt(
        "T", b"x", sys_flag=STOREHOST_V6_FLAG, store_host=("10.0.0.1", 1), born_host=("1.2.3.4", 2)
    )
    back, _ = decode_record(encode_record(msg))
    assert back.store_host == ("::ffff:a00:1", 1)
    assert back.born_host == ("1.2.3.4", 2)
    assert len(back.offset_msg_id) == 56


def test_zlib_body_is_inflated_on_decode_only_when_asked() -> None:
    plain = b"hello world " * 100
    packed = zlib.compress(plain, 5)
    for flag in (
        MessageSysFlag.COMPRESSED_FLAG,
        MessageSysFlag.COMPRESSED_FLAG | MessageSysFlag.COMPRESSION_ZLIB_TYPE,
    ):
        raw = encode_record(MessageExt("T", packed, sys_flag=flag))
        assert decode_record(raw)[0].body == plain
        kept = decode_record(raw, decompress_body=False)[0]
        assert kept.body == packed and kept.body_crc == body_crc(packed)
    # LZ4 (type 1) has no codec here: the body stays as stored rather than failing the record.
    raw = encode_record(MessageExt("T", b"lz4-bytes", sys_flag=0x101))
    assert decode_record(raw)[0].body == b"lz4-bytes"


def test_bad_compressed_body_and_truncation_raise_record_decode_error() -> None:
    raw = encode_record(MessageExt("T", b"not zlib", sys_flag=MessageSysFlag.COMPRESSED_FLAG))
    with pytest.raises(RecordDecodeError):
        decode_record(raw)
    good = encode_record(MessageExt("Topic", b"body", properties={"a": "b"}))
    for cut in (10, 60, 95, len(good) - 1):
        with pytest.raises(RecordDecodeError):
            decode_record(good[:cut])
    assert decode_records(good[:50]) == []


def test_encode_rejects_long_topic_and_properties() -> None:
    with pytest.raises(ValueError):
        encode_record(MessageExt("x" * 128, b""))
    with pytest.raises(ValueError):
        encode_record(MessageExt("T", b"", properties={"k": "v" * 40000}))
    with pytest.raises(ValueError):
        encode_record(MessageExt("T", b"", store_host=("not-an-ip", 1)))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_i32, st.binary(max_size=200), _props), max_size=6))
def test_batch_round_trip(entries: list[tuple[int, bytes, dict[str, str]]]) -> None:
    msgs = [Message("T", body, properties=props, flag=flag) for flag, body, props in entries]
    body = encode_batch(msgs)
    assert decode_batch(body) == entries


def test_batch_entry_layout_matches_protocol() -> None:
    body = encode_batch([Message("T", b"abc", properties={"K": "V"}, flag=5)])
    # TOTALSIZE = 22 + bodyLen + propsLen; MAGICCODE and BODYCRC are 0.
    assert body == bytes.fromhex("0000001c 00000000 00000000 00000005 00000003") + b"abc" + b"\x00\x03K\x01V"


def test_malformed_batches_raise() -> None:
    good = encode_batch([Message("T", b"abc", properties={"K": "V"})])
    for bad in (good[:-1], good[:10], good[:3] + b"\xff" + good[4:], good + b"\x00"):
        with pytest.raises(RecordDecodeError):
            decode_batch(bad)
    assert decode_batch(b"") == []
