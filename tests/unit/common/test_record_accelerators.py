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
from rocketq.common.record.codec import decode_batch_py, encode_batch, encode_record
from rocketq.common.record.layout import RecordDecodeError
from rocketq.common.record.lazy import scan_record_py
from rocketq.common.record.properties import decode_properties_py

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
