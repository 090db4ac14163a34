"""The compiled record functions (rocketq.common.record._crecord) against their pure-Python twins:
the same inputs give byte-identical results, or the same RecordDecodeError."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.store.test_store_record_codec import messages

from rocketq.common.message import Message
from rocketq.common.record import accel
from rocketq.common.record.codec import (
    decode_batch_for_store_py,
    decode_batch_py,
    encode_batch,
    encode_record,
    offset_msg_ids_py,
    pack_batch_into_py,
    pack_record_into_py,
)
from rocketq.common.record.layout import RECORD_HEADER, RecordDecodeError, topic_block
from rocketq.common.record.lazy import scan_record_py
from rocketq.common.record.properties import (
    decode_properties_py,
    encode_properties_bytes,
    properties_for_store_py,
)
from rocketq.store.index_file import put_entries_py

crecord = pytest.importorskip("rocketq.common.record._crecord", reason="accelerators not built")

# Separators, name characters and a few that take 2, 3 and 4 UTF-8 bytes.
property_texts = st.lists(
    st.sampled_from(["\x01", "\x02", "a", "b", "TAGS", "é", "€", "😀"]), max_size=30
).map("".join)


def outcome(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return ("ok", fn(*args))
    except RecordDecodeError as exc:
        return ("error", str(exc))


def damaged(good: bytes, data: st.DataObject) -> bytes:
    """`good` as it is, or with one byte changed, then cut anywhere (a torn or corrupted body)."""
    body = bytearray(good)
    if data.draw(st.booleans()):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    return bytes(body[: data.draw(st.integers(0, len(body)))])


@settings(max_examples=500, deadline=None)
@given(st.one_of(property_texts, st.text(max_size=60)))
def test_decode_properties_both_paths(text: str) -> None:
    assert crecord.decode_properties(text) == decode_properties_py(text)


# Property strings as producers write them: names (WAIT, CLUSTER among them), values, and now and then
# a segment decode skips or a name twice.
store_texts = st.lists(
    st.tuples(st.sampled_from(["WAIT", "CLUSTER", "UNIQ_KEY", "TAGS", "a", "é", ""]), property_texts),
    max_size=6,
).map(lambda entries: "\x02".join(f"{k}\x01{v}" for k, v in entries))


@settings(max_examples=800, deadline=None)
@given(
    st.one_of(store_texts, property_texts, st.text(max_size=60)), st.sampled_from(["DefaultCluster", "c€"])
)
def test_properties_for_store_both_paths(text: str, cluster: str) -> None:
    """The stored bytes cut from the request's string are the edited dict's encoding, byte for byte."""
    props, stored = crecord.properties_for_store(text, "WAIT", "CLUSTER", cluster)
    expected, none = properties_for_store_py(text, "WAIT", "CLUSTER", cluster)
    assert none is None
    assert props == expected and list(props) == list(expected)
    if stored is not None:
        assert stored == encode_properties_bytes(expected)


def test_properties_for_store_cuts_the_usual_producer_string() -> None:
    text = "UNIQ_KEY\x017F00000100002A9F\x02WAIT\x01true\x02TAGS\x01t"
    props, stored = crecord.properties_for_store(text, "WAIT", "CLUSTER", "DefaultCluster")
    assert stored == b"UNIQ_KEY\x017F00000100002A9F\x02TAGS\x01t\x02CLUSTER\x01DefaultCluster"
    assert props == {"UNIQ_KEY": "7F00000100002A9F", "TAGS": "t", "CLUSTER": "DefaultCluster"}
    # A name twice, or CLUSTER already there: the dict is encoded by the store instead.
    assert crecord.properties_for_store("a\x011\x02a\x012", "WAIT", "CLUSTER", "c")[1] is None
    assert crecord.properties_for_store("CLUSTER\x01x\x02a\x011", "WAIT", "CLUSTER", "c")[1] is None


@settings(max_examples=200, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=3), st.data())
def test_scan_record_both_paths(msgs: list[Message], data: st.DataObject) -> None:
    raw = damaged(b"".join(encode_record(m) for m in msgs), data)  # type: ignore[arg-type]
    pos = 0
    while True:
        compiled, pure = outcome(crecord.scan_record, raw, pos), outcome(scan_record_py, raw, pos)
        assert compiled[0] == pure[0]
        if compiled[0] == "error":
            break
        assert compiled == pure
        pos = compiled[1][20]


batch_entries = st.lists(
    st.builds(
        lambda body, props, flag: Message("T", body, properties=props, flag=flag),
        st.binary(max_size=64),
        st.dictionaries(
            st.text("abc€", min_size=1, max_size=4), st.text("xy😀\x01", min_size=1, max_size=4), max_size=3
        ),
        st.integers(-(2**31), 2**31 - 1),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(batch_entries, st.data())
def test_decode_batch_both_paths(entries: list[Message], data: st.DataObject) -> None:
    raw = damaged(encode_batch(entries), data)
    assert outcome(crecord.decode_batch, raw) == outcome(decode_batch_py, raw)


def _stored_outcome(fn, body: bytes, batch_props: dict[str, str]):  # type: ignore[no-untyped-def]
    """fn(body, batch_props) (decode_batch_for_store, compiled or pure), each stored properties checked
    against the merged dict's encoding."""
    result = outcome(fn, body, batch_props)
    if result[0] == "ok":
        entries, stored = result[1]
        assert len(stored) == len(entries)
        for (_flag, _body, props), cut in zip(entries, stored, strict=True):
            assert cut is None or cut == encode_properties_bytes(props)
    return result


@settings(max_examples=300, deadline=None)
@given(
    batch_entries,
    st.dictionaries(
        st.sampled_from(["CLUSTER", "WAIT", "TAGS", "a", "é"]), st.sampled_from(["x", "true", "€"])
    ),
    st.data(),
)
def test_decode_batch_for_store_both_paths(
    entries: list[Message], batch_props: dict[str, str], data: st.DataObject
) -> None:
    # The same entries, the same stored bytes (and the same Nones), or the same error.
    raw = damaged(encode_batch(entries), data)
    pure = _stored_outcome(decode_batch_for_store_py, raw, dict(batch_props))
    assert _stored_outcome(crecord.decode_batch_for_store, raw, dict(batch_props)) == pure


def test_decode_batch_for_store_cuts_the_usual_batch() -> None:
    msgs = [Message("T", b"x", properties={"UNIQ_KEY": f"K{i}"}) for i in range(3)]
    msgs.append(Message("T", b"y", properties={"CLUSTER": "mine"}))  # the batch's name: encoded instead
    for decode in (crecord.decode_batch_for_store, decode_batch_for_store_py):
        entries, stored = decode(encode_batch(msgs), {"WAIT": "true", "CLUSTER": "c"})
        assert stored is not None
        assert stored[:3] == [f"UNIQ_KEY\x01K{i}\x02WAIT\x01true\x02CLUSTER\x01c".encode() for i in range(3)]
        assert stored[3] is None and entries[3][2] == {"CLUSTER": "c", "WAIT": "true"}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1), st.integers(0, 2**45)), max_size=40
    ),
    st.integers(1, 7),
    st.integers(0, 3),
    st.integers(0, 2**44),
)
def test_index_put_entries_both_paths(
    entries: list[tuple[int, int, int]], slot_num: int, count: int, begin: int
) -> None:
    """The index entries and slots written, and the header fields returned, are the same both ways."""
    size = 40 + slot_num * 4 + (count + len(entries)) * 20
    seed = bytes(range(256)) * (size // 256 + 1)  # slots holding old values, in range and not
    compiled_buf, pure_buf = bytearray(seed[:size]), bytearray(seed[:size])
    entry_at = 40 + slot_num * 4 + count * 20
    args = (entries, 0, len(entries), count, entry_at, slot_num, begin, 77)
    assert crecord.index_put_entries(compiled_buf, *args) == put_entries_py(pure_buf, *args)
    assert compiled_buf == pure_buf


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["", "0A00000500002A9F", "é1"]), st.lists(st.integers(-5, 2**63 - 1), max_size=20))
def test_offset_msg_ids_both_paths(prefix: str, offsets: list[int]) -> None:
    assert crecord.offset_msg_ids(prefix, offsets) == offset_msg_ids_py(prefix, offsets)


def test_the_environment_variable_forces_pure_python() -> None:
    probe = "from rocketq.common.record import accel, lazy; print(accel.using_extensions(), lazy.scan_record.__module__)"
    env = {**os.environ, "ROCKETQ_NO_EXTENSIONS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    assert out.stdout.split() == ["False", "rocketq.common.record.lazy"]
    if os.environ.get("ROCKETQ_NO_EXTENSIONS", "") in ("", "0"):
        assert accel.using_extensions()


@settings(max_examples=200, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=3), st.data())
def test_lazy_views_both_paths(msgs: list[Message], data: st.DataObject) -> None:
    from rocketq.common.record import lazy

    raw = damaged(b"".join(encode_record(m) for m in msgs), data)  # type: ignore[arg-type]
    compiled_views = crecord.decode_records_lazy(lazy.LazyMessageExt, lazy.UNSET, raw)
    pure_views = lazy._decode_records_lazy(raw)
    assert len(compiled_views) == len(pure_views)
    for a, b in zip(compiled_views, pure_views, strict=True):
        for name in ("topic", "queue_id", "queue_offset", "commit_log_offset", "store_size", "sys_flag", "body_crc",
                     "born_timestamp", "store_timestamp", "reconsume_times", "prepared_transaction_offset", "flag",
                     "born_host", "store_host", "offset_msg_id", "body", "properties"):  # fmt: skip
            assert outcome(getattr, a, name) == outcome(getattr, b, name), name


@given(st.text(max_size=40), st.integers(-(2**40), 2**40))
def test_java_string_hash_is_the_pure_functions(text: str, prefix: int) -> None:
    from rocketq.store.index_file import java_string_hash_py

    crecord.set_java_string_hash_fallback(java_string_hash_py)  # done at import unless switched off
    assert crecord.java_string_hash(text, prefix) == java_string_hash_py(text, prefix)
    assert crecord.java_string_hash(text) == java_string_hash_py(text)


def test_java_string_hash_of_known_keys_and_a_lone_surrogate() -> None:
    from rocketq.store.index_file import java_string_hash_py

    crecord.set_java_string_hash_fallback(java_string_hash_py)
    assert crecord.java_string_hash("abc") == 96354  # "abc".hashCode() in Java
    assert crecord.java_string_hash("😀") == java_string_hash_py("😀") == (0xD83D * 31 + 0xDE00)
    with pytest.raises(UnicodeEncodeError):
        crecord.java_string_hash("a\ud800")
    with pytest.raises(UnicodeEncodeError):
        java_string_hash_py("a\ud800")


int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
hosts = st.sampled_from([4, 16]).flatmap(lambda n: st.binary(min_size=n, max_size=n))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(int32s, st.binary(max_size=300), st.binary(max_size=60)), min_size=1, max_size=6),
    st.text(min_size=1, max_size=20),
    st.tuples(int32s, st.integers(0, 2**40), st.integers(0, 2**40), int32s, int64s, int64s, int32s),
    hosts,
    hosts,
    st.integers(0, 64),
)
def test_pack_batch_into_both_paths(entries, topic, fields, born_ip, store_ip, pos) -> None:  # type: ignore[no-untyped-def]
    """The records a batch's entries become, compiled and pure: the same bytes at the same places,
    nothing written outside them."""
    queue_id, queue_offset, phys, sys_flag, born_ts, store_ts, port = fields
    block = topic_block(topic)
    head = RECORD_HEADER[(len(born_ip) == 16, len(store_ip) == 16)].size
    triples: list[tuple[int, bytes, dict[str, str]]] = [(flag, body, {}) for flag, body, _ in entries]
    props = [prop for _, _, prop in entries]
    sizes = [head + len(body) + len(block) + 2 + len(prop) for _, body, prop in entries]
    bufs = [bytearray(b"\xee" * (pos + sum(sizes) + 16)) for _ in range(2)]
    args = (triples, block, props, sizes, queue_id, queue_offset, phys, sys_flag, born_ts)
    tail = (born_ip, port, store_ts, store_ip, port ^ 1, queue_id ^ 7)
    crecord.pack_batch_into(bufs[0], pos, *args, *tail)
    pack_batch_into_py(bufs[1], pos, *args, *tail)
    assert bufs[0] == bufs[1]
    assert bufs[0][:pos] == b"\xee" * pos and bufs[0][pos + sum(sizes) :] == b"\xee" * 16


def test_pack_batch_into_refuses_a_record_past_the_buffer() -> None:
    block = topic_block("T")
    size = RECORD_HEADER[(False, False)].size + 3 + len(block) + 2
    with pytest.raises(ValueError, match="does not fit"):
        crecord.pack_batch_into(
            bytearray(size - 1), 0, [(0, b"abc", {})], block, [b""], [size], 0, 0, 0, 0, 0,
            b"\x7f\0\0\1", 1, 0, b"\x7f\0\0\1", 2, 0,
        )  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=300),
    st.text(min_size=1, max_size=20),
    st.binary(max_size=60),
    st.tuples(int32s, int32s, st.integers(0, 2**40), st.integers(0, 2**40), int32s, int64s, int64s, int64s),
    hosts,
    hosts,
    st.integers(0, 64),
    st.booleans(),
)
def test_pack_record_into_both_paths(body, topic, props, fields, born_ip, store_ip, pos, as_view) -> None:  # type: ignore[no-untyped-def]
    """One record, compiled and pure: the same bytes at the same places, nothing written outside it
    (a body that is not bytes goes to the pure path)."""
    crecord.set_pack_record_fallback(pack_record_into_py)  # what codec does when the accelerators are on
    queue_id, flag, queue_offset, phys, sys_flag, born_ts, store_ts, prepared = fields
    block = topic_block(topic)
    size = (
        RECORD_HEADER[(len(born_ip) == 16, len(store_ip) == 16)].size
        + len(body)
        + len(block)
        + 2
        + len(props)
    )
    bufs = [bytearray(b"\xee" * (pos + size + 16)) for _ in range(2)]
    tail = (
        queue_id,
        flag,
        queue_offset,
        phys,
        sys_flag,
        born_ts,
        born_ip,
        7,
        store_ts,
        store_ip,
        9,
        flag ^ 3,
    )
    crecord.pack_record_into(
        bufs[0], pos, size, memoryview(body) if as_view else body, block, props, *tail, prepared
    )
    pack_record_into_py(bufs[1], pos, size, body, block, props, *tail, prepared)
    assert bufs[0] == bufs[1]
    assert bufs[0][:pos] == b"\xee" * pos and bufs[0][pos + size :] == b"\xee" * 16


def test_pack_record_into_refuses_a_record_past_the_buffer_or_of_the_wrong_size() -> None:
    block = topic_block("T")
    size = RECORD_HEADER[(False, False)].size + 3 + len(block) + 2
    fields = (0, 0, 0, 0, 0, 0, b"\x7f\0\0\1", 1, 0, b"\x7f\0\0\1", 2, 0, 0)
    with pytest.raises(ValueError, match="does not fit"):
        crecord.pack_record_into(bytearray(size - 1), 0, size, b"abc", block, b"", *fields)
    with pytest.raises(ValueError, match="does not match"):
        crecord.pack_record_into(bytearray(size + 1), 0, size + 1, b"abc", block, b"", *fields)
