"""Lazily decoded records (rocketq.common.record.lazy): the same messages as the eager decoder, field
for field; truncated and corrupt bodies stop or fail where the eager decoder does, naming the record."""

from __future__ import annotations

import copy
import pickle
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.store.test_store_record_codec import messages

from rocketq.common.constants import MessageSysFlag
from rocketq.common.message import Message, MessageExt
from rocketq.common.record.codec import decode_records, encode_record
from rocketq.common.record.layout import RecordDecodeError
from rocketq.common.record.lazy import LazyMessageExt, decode_records_lazy

FIELDS = (*Message.__slots__, *MessageExt.__slots__)


def fields(msg: MessageExt) -> dict[str, object]:
    return {name: getattr(msg, name) for name in FIELDS}


@settings(max_examples=120, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=4))
def test_lazy_views_hold_what_the_eager_decoder_gives(msgs: list[MessageExt]) -> None:
    body = b"".join(encode_record(m) for m in msgs)
    eager = decode_records(body)
    lazy = decode_records_lazy(body)
    assert len(lazy) == len(eager) == len(msgs)
    for view, plain in zip(lazy, eager, strict=True):
        assert isinstance(view, MessageExt)
        assert fields(view) == fields(plain)
        assert view.msg_id == plain.msg_id and view.tags == plain.tags and view.keys == plain.keys


@settings(max_examples=120, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=3), st.data())
def test_a_torn_body_stops_at_the_same_record(msgs: list[MessageExt], data: st.DataObject) -> None:
    body = b"".join(encode_record(m) for m in msgs)
    cut = data.draw(st.integers(0, len(body) - 1))
    torn = body[:cut]
    eager = decode_records(torn)
    lazy = decode_records_lazy(torn)
    assert [fields(m) for m in lazy] == [fields(m) for m in eager]


@settings(max_examples=200, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=3), st.data())
def test_corrupt_bytes_never_give_a_wrong_field(msgs: list[MessageExt], data: st.DataObject) -> None:
    body = bytearray(b"".join(encode_record(m) for m in msgs))
    for _ in range(data.draw(st.integers(1, 4))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    raw = bytes(body)
    eager = decode_records(raw)
    lazy = decode_records_lazy(raw)
    assert len(lazy) >= len(eager)
    for view, plain in zip(lazy, eager, strict=False):
        assert fields(view) == fields(plain)
    if len(lazy) > len(eager):
        # The eager decoder stopped at a record whose body or properties do not decode: the view of
        # that record says so when the field is read, naming the record.
        bad = lazy[len(eager)]
        with pytest.raises(RecordDecodeError, match=f"commit-log offset {bad.commit_log_offset}"):
            _ = bad.body, bad.properties


def test_properties_that_are_not_utf8_raise_naming_the_record() -> None:
    raw = bytearray(encode_record(MessageExt("T", b"x", properties={"a": "b"}, commit_log_offset=4096)))
    raw[-1] = 0xFF  # the last byte of the properties
    assert decode_records(bytes(raw)) == []
    (view,) = decode_records_lazy(bytes(raw))
    assert view.topic == "T" and view.body == b"x"
    with pytest.raises(RecordDecodeError, match=r"commit-log offset 4096 \(byte 0 of its body\).*UTF-8"):
        _ = view.properties


def test_a_zlib_body_that_does_not_inflate_raises_naming_the_record() -> None:
    good = MessageExt(
        "T", zlib.compress(b"payload"), sys_flag=MessageSysFlag.COMPRESSED_FLAG, commit_log_offset=7
    )
    bad = MessageExt("T", b"not zlib", sys_flag=MessageSysFlag.COMPRESSED_FLAG, commit_log_offset=99)
    ok, broken = decode_records_lazy(encode_record(good) + encode_record(bad))
    assert ok.body == b"payload"
    with pytest.raises(RecordDecodeError, match="commit-log offset 99"):
        _ = broken.body


def test_fields_can_be_assigned_and_copies_are_plain_messages() -> None:
    (view,) = decode_records_lazy(encode_record(MessageExt("T", b"body", tags="a", commit_log_offset=5)))
    assert isinstance(view, LazyMessageExt)
    view.properties["MIN_OFFSET"] = "0"
    view.topic = "U"
    view.body = b"other"
    for clone in (copy.copy(view), pickle.loads(pickle.dumps(view))):
        assert type(clone) is MessageExt
        assert fields(clone) == fields(view)
