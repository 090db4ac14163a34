"""The Arrow batches built straight from pull bodies equal those built from the decoded messages."""

from __future__ import annotations

import zlib

import pytest

pytest.importorskip("pyarrow")

import itertools
from array import array

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.spark.test_spark_arrow_rows import SCHEMA
from tests.unit.store.test_store_record_codec import messages

from rocketq.common.message import MessageExt
from rocketq.common.record.codec import encode_record
from rocketq.common.record.layout import COMPRESSED_FLAG, RecordDecodeError
from rocketq.common.record.lazy import decode_records_lazy, scan_records
from rocketq.spark.arrow_batches import (
    _COMPILED,
    _LOOKED_UP,
    PulledRecords,
    _array,
    _split_compiled,
    _split_kernels,
    batch_of_messages,
    batch_of_pulls,
    gather_columns_py,
)

# None without the built extension, or with ROCKETQ_NO_EXTENSIONS=1
COMPILED = None if _COMPILED is None else _COMPILED.gather_columns
NO_HEADERS = pa.schema([f for f in SCHEMA if f.name != "headers"])
# Property names and values with the separators in them: segments without U+0001, empty names or
# values, a name given twice, and the plain case - what the fast path must hand to the reference.
_odd_text = st.text(alphabet=st.sampled_from(["a", "b", "é", "\x01", "\x02", "\n", "\U0001f600"]), max_size=6)
_odd_props = st.dictionaries(_odd_text, _odd_text, max_size=4)


def _message(draw: st.DrawFn) -> MessageExt:
    m = draw(messages())
    m.born_timestamp %= 1 << 42  # a Spark timestamp is int64 microseconds
    m.store_timestamp %= 1 << 42
    kind = draw(st.sampled_from(["plain", "odd", "tags", "none", "empty-body"]))
    if kind == "odd":
        m.properties = draw(_odd_props)
    elif kind == "tags":
        m.properties = {"TAGS": "t", "KEYS": "k1 k2", "UNIQ_KEY": "7F00000100002A9F0000000000000001"}
    elif kind == "none":
        m.properties = {}
    elif kind == "empty-body":
        m.body = b""
    return m


_messages = st.composite(_message)


def _pulls(msgs: list[MessageExt], cuts: list[int]) -> tuple[list[PulledRecords], list[MessageExt]]:
    """The records cut into pull bodies, as the reader holds them, and the same as decoded views."""
    pulls, views = [], []
    bounds = sorted({0, len(msgs), *(c % (len(msgs) + 1) for c in cuts)})
    for i, (since, until) in enumerate(itertools.pairwise(bounds)):
        body = b"".join(encode_record(m) for m in msgs[since:until])
        broker = f"broker-{i % 2}"
        pulls.append(PulledRecords(body, scan_records(body), broker))
        for v in decode_records_lazy(body):
            v.broker_name = broker
            views.append(v)
    return pulls, views


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_messages(), min_size=1, max_size=10), st.lists(st.integers(0, 10), max_size=3), st.booleans()
)
def test_batches_from_pulls_equal_those_from_messages(
    msgs: list[MessageExt], cuts: list[int], headers: bool
) -> None:
    schema = SCHEMA if headers else NO_HEADERS
    pulls, views = _pulls(msgs, cuts)
    expected = batch_of_messages(views, schema)
    got = batch_of_pulls(pulls, schema)
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()
    if COMPILED is not None:  # the compiled gathering fills the pure one's buffers byte for byte
        pairs = [(p.body, p.records) for p in pulls]
        assert [bytes(b) if not isinstance(b, int) else b for b in COMPILED(pairs)] == [
            bytes(b) if not isinstance(b, int) else b for b in gather_columns_py(pairs)
        ]
        _assert_same_split(pairs)


def _assert_same_split(pairs: list[tuple[bytes, list[tuple[object, ...]]]]) -> None:
    """The compiled one-pass split of the properties gives the string kernels' arrays (or both None)."""
    n, _bodies, _body_offsets, texts, text_offsets, *_ = gather_columns_py(pairs)
    strings = _array(pa.large_string(), n, text_offsets, texts)
    try:
        strings.validate(full=True)
    except pa.ArrowInvalid:
        return  # (neither split runs: the reference path decides)
    kernels = _split_kernels(n, strings)
    compiled = _split_compiled(n, texts, text_offsets)
    assert (kernels is None) == (compiled is None)
    if kernels is not None and compiled is not None:
        assert compiled.map.equals(kernels.map)
        for name in _LOOKED_UP:
            assert compiled.lookup(name).equals(kernels.lookup(name))


def test_a_table_of_records() -> None:
    plain = MessageExt(
        "T", b"x" * 1024, properties={"TAGS": "a", "KEYS": "k", "UNIQ_KEY": "U1", "WAIT": "true"}
    )
    cases = [
        plain,
        MessageExt("T", b"", properties={}),  # no properties, empty body: the offset msgId
        MessageExt("Tópico", "héllo ✓".encode(), properties={"TAGS": "ünï", "名": "值 \U0001f600"}),
        MessageExt("T", b"\0\1\2", properties={"KEYS": "k1 k2"}, store_host=("::1", 10911), sys_flag=0x20),
    ]
    for i, m in enumerate(cases):
        m.queue_offset, m.commit_log_offset, m.store_timestamp = i, 100 * i, 1_700_000_000_000 + i
    pulls, views = _pulls(cases, [1, 3])
    got = batch_of_pulls(pulls, SCHEMA)
    assert got.to_pylist() == batch_of_messages(views, SCHEMA).to_pylist()
    rows = got.to_pylist()
    assert next(r["msg_id"] for r in rows) == "U1"
    assert (
        rows[1]["msg_id"] == views[1].offset_msg_id and rows[1]["properties"] == [] and rows[1]["body"] == b""
    )
    assert rows[2]["tags"] == "ünï" and rows[2]["topic"] == "Tópico" and rows[3]["keys"] == "k1 k2"
    assert [r["broker_name"] for r in rows] == ["broker-0", "broker-1", "broker-1", "broker-0"]


def test_a_compressed_body_is_inflated_as_the_message_is() -> None:
    m = MessageExt("T", zlib.compress(b"y" * 500), properties={"TAGS": "z"}, sys_flag=COMPRESSED_FLAG)
    pulls, views = _pulls([m, MessageExt("T", b"plain")], [])
    got = batch_of_pulls(pulls, NO_HEADERS)
    assert got.to_pylist() == batch_of_messages(views, NO_HEADERS).to_pylist()
    assert got.column("body").to_pylist() == [b"y" * 500, b"plain"]


def test_properties_that_are_not_utf8_fail_as_the_message_does() -> None:
    record = bytearray(encode_record(MessageExt("T", b"b", properties={"TAGS": "é"})))
    at = bytes(record).index("é".encode())
    record[at : at + 2] = b"\xff\xfe"
    pulls = [PulledRecords(bytes(record), scan_records(bytes(record)), "b")]
    with pytest.raises(RecordDecodeError, match="not UTF-8"):
        batch_of_pulls(pulls, NO_HEADERS)


@pytest.mark.parametrize(
    "odd",
    [
        {"a": "1\x02a\x012", "b": "c"},  # "a" twice in one row: the message keeps one entry, the last value
        {"x\x02y": "z", "TAGS": "t"},  # a segment without U+0001: skipped
        {"": "v", "TAGS": "t"},  # an empty name: skipped
        {"n": "", "TAGS": "t"},  # an empty value: skipped
    ],
)
def test_properties_the_kernels_do_not_cover_give_the_messages_rows(odd: dict[str, str]) -> None:
    # Every row has the same number of segments, the batch the usual-case checks see.
    msgs = [MessageExt("T", b"1", properties={"a": "x", "b": "y"}), MessageExt("T", b"2", properties=odd)]
    pulls, views = _pulls(msgs, [])
    assert batch_of_pulls(pulls, SCHEMA).to_pylist() == batch_of_messages(views, SCHEMA).to_pylist()
    if _COMPILED is not None:
        _assert_same_split([(p.body, p.records) for p in pulls])


@pytest.mark.skipif(_COMPILED is None, reason="the compiled split is not built (or ROCKETQ_NO_EXTENSIONS=1)")
@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"a\x01b",
        b"a\x01b\x02",
        b"\x02",
        b"a\x01b\x02c",
        b"a\x01\x02c\x01d",
        b"\x01b",
        b"a\x01b\x01c\x02d\x01e",
    ],
)
def test_the_compiled_split_decides_as_the_kernels_do(text: bytes) -> None:
    # A trailing U+0002 (an empty last segment), a segment without U+0001, an empty name or value,
    # a value holding U+0001: one row with the section, one without, one with the plain pairs.
    plain = b"TAGS\x01t\x02KEYS\x01k"
    sections = [text, b"", plain]
    offsets = array("q", [0, len(text), len(text), len(text) + len(plain)])
    texts = b"".join(sections)
    kernels = _split_kernels(3, _array(pa.large_string(), 3, offsets, texts))
    compiled = _split_compiled(3, texts, offsets)
    assert (kernels is None) == (compiled is None)
    if kernels is not None and compiled is not None:
        assert compiled.map.to_pylist() == kernels.map.to_pylist()
        assert compiled.lookup("TAGS").to_pylist() == kernels.lookup("TAGS").to_pylist()
