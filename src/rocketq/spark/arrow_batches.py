"""The source's rows as Arrow record batches, built straight from PULL_MESSAGE bodies.

A pull body is records back to back in the commit-log layout (rocketq.common.record). The reader
walks each body once with the shared record scanner (rocketq.common.record.lazy.scan_records: a tuple
of fixed fields and of where the variable ones lie, per record; no message object) and builds each
column of a batch in one piece: gather_columns copies the bodies and the properties sections into
one buffer each and fills the numeric columns (compiled in rocketq.spark._carrow when it was built,
else gather_columns_py), Arrow wraps those buffers without a copy, and the properties are split (at
U+0002, then at the first U+0001) into the map column, with tags, keys and UNIQ_KEY looked up in it:
compiled, in one pass (rocketq.spark._carrow.split_properties, which also notes each row's tags,
keys and UNIQ_KEY pair), else with Arrow's string kernels. So no message and no property dict is made per row (and, compiled, no Python
object per body either).

The decoded messages (MessageExt views) are the reference: `batch_of_messages` builds the same batch
from them, and a batch whose records the fast path does not cover exactly - a compressed body,
properties that are not UTF-8 (the view raises the error naming the record), a segment the properties
decoder skips (no U+0001, an empty name or value), a name given twice - is built through it, so both
always give the same rows (tests/unit/spark).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain
from operator import itemgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rocketq.common import constants as C
from rocketq.common.message import MessageExt
from rocketq.common.record.accel import load_extension
from rocketq.common.record.layout import COMPRESSED_FLAG, store_host_of
from rocketq.common.record.lazy import decode_records_lazy, scan_records

UNIQ_KEY = C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
_MILLIS = pa.timestamp("ms", tz="UTC")  # the records' timestamps; Spark's are microseconds
# The fields of rocketq.common.record.lazy.scan_record's tuple that the columns read.
_QUEUE_ID, _QUEUE_OFFSET, _PHYS_OFFSET, _SYS_FLAG, _BORN_TS = 2, 4, 5, 6, 7
_STORE_TS, _STORE_IP, _STORE_PORT = 10, 11, 12
_BODY_AT, _BODY_LEN, _TOPIC, _PROPS_AT, _PROPS_LEN, _NEXT = 15, 16, 17, 18, 19, 20


def reader_schema(include_headers: bool = False) -> pa.Schema:
    """The Arrow schema Spark hands the reader for the source's schema (pyspark's to_arrow_schema of
    rocketq.spark.source.SCHEMA_DDL, time zone UTC; includeHeaders adds the headers column): for
    building batches outside Spark (tests, bench/spark_arrow_read.py)."""
    micros = pa.timestamp("us", tz="UTC")
    fields = [
        ("topic", pa.string()), ("broker_name", pa.string()), ("queue_id", pa.int32()),
        ("queue_offset", pa.int64()), ("msg_id", pa.string()), ("tags", pa.string()), ("keys", pa.string()),
        ("properties", pa.map_(pa.string(), pa.string())), ("body", pa.binary()),
        ("born_timestamp", micros), ("store_timestamp", micros),
    ]  # fmt: skip
    if include_headers:
        fields.append(("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))))
    return pa.schema(fields)


# The QUEUEOFFSET of a scanned record (rocketq.spark.client.SyncClient.read_records filters by it; an
# itemgetter, not a function, as it is called once per record).
queue_offset_of: Callable[[tuple[Any, ...]], int] = itemgetter(_QUEUE_OFFSET)


@dataclass(slots=True)
class PulledRecords:
    """The records of one pull answer that a batch takes: the body, their scanned fields, the broker."""

    body: bytes
    records: list[tuple[Any, ...]]
    broker_name: str

    def messages(self) -> list[MessageExt]:
        """The same records as decoded messages (the reference path)."""
        kept = {r[_NEXT] for r in self.records}  # a record is known by where it ends in the body
        every = zip(scan_records(self.body), decode_records_lazy(self.body), strict=True)
        msgs = [m for r, m in every if r[_NEXT] in kept]
        for m in msgs:
            m.broker_name = self.broker_name
        return msgs


def batch_of_pulls(pulls: Sequence[PulledRecords], schema: pa.Schema) -> pa.RecordBatch:
    """The rows of the records of `pulls`, in order, as one Arrow batch of `schema`."""
    rows = list(chain.from_iterable(p.records for p in pulls))
    if not rows or any(flag & COMPRESSED_FLAG for flag in map(itemgetter(_SYS_FLAG), rows)):
        return _reference(pulls, schema)  # (an inflated body is not in the pull body)
    n, body_values, body_offsets, texts, text_offsets, queue_ids, queue_offsets, born, stored = (
        gather_columns([(p.body, p.records) for p in pulls])
    )
    props = _properties(n, texts, text_offsets)
    if props is None:
        return _reference(pulls, schema)
    msg_id = props.lookup(UNIQ_KEY)
    if msg_id.null_count:  # no UNIQ_KEY: the offset msgId (MessageExt.msg_id)
        msg_id = pa.array(list(map(_offset_msg_id, msg_id.to_pylist(), rows)), pa.string())
    brokers = list(chain.from_iterable([p.broker_name] * len(p.records) for p in pulls))
    columns = [
        pa.array(list(map(itemgetter(_TOPIC), rows)), pa.string()),
        pa.array(brokers, pa.string()),
        _array(pa.int32(), n, queue_ids),
        _array(pa.int64(), n, queue_offsets),
        msg_id,
        props.lookup(C.PROPERTY_TAGS),
        props.lookup(C.PROPERTY_KEYS),
        props.map,
        _array(pa.large_binary(), n, body_offsets, body_values),
        _array(_MILLIS, n, born),
        _array(_MILLIS, n, stored),
    ]
    if schema.get_field_index("headers") >= 0:
        pairs = pa.StructArray.from_arrays(
            [props.names, props.values.cast(pa.binary())], names=["key", "value"]
        )
        columns.append(pa.ListArray.from_arrays(props.map.offsets, pairs))
    # The schema's types: string/binary (32-bit offsets: a batch past 2 GiB fails here), microseconds.
    return pa.RecordBatch.from_arrays(
        [c.cast(f.type) for c, f in zip(columns, schema, strict=True)], schema=schema
    )


def _array(kind: pa.DataType, n: int, values_or_offsets: Any, values: Any = None) -> pa.Array:
    """An Arrow array over gather_columns' buffers (no copy): fixed-width values, or offsets and values."""
    if values is None:
        return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(values_or_offsets)])
    return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(values_or_offsets), pa.py_buffer(values)])


def gather_columns_py(pulls: list[tuple[bytes, list[tuple[Any, ...]]]]) -> tuple[Any, ...]:
    """What a batch takes from the records of `pulls` ((pull body, its scanned records) pairs), as
    native-endian buffers: (count, bodies joined, their int64 offsets, properties sections joined,
    their int64 offsets, int32 queue ids, int64 queue offsets, int64 born and store timestamps (ms)).
    rocketq.spark._carrow.gather_columns is the compiled twin (the same buffers)."""
    bodies: list[memoryview] = []
    texts: list[memoryview] = []
    for body, records in pulls:
        buf = memoryview(body)
        bodies += [buf[r[_BODY_AT] : r[_BODY_AT] + r[_BODY_LEN]] for r in records]
        texts += [buf[r[_PROPS_AT] : r[_PROPS_AT] + r[_PROPS_LEN]] for r in records]
    rows = list(chain.from_iterable(records for _body, records in pulls))

    def int64s(field: int) -> array[int]:
        return array("q", map(itemgetter(field), rows))

    return (
        len(rows),
        b"".join(bodies),
        array("q", accumulate(map(itemgetter(_BODY_LEN), rows), initial=0)),
        b"".join(texts),
        array("q", accumulate(map(itemgetter(_PROPS_LEN), rows), initial=0)),
        array("i", map(itemgetter(_QUEUE_ID), rows)),
        int64s(_QUEUE_OFFSET),
        int64s(_BORN_TS),
        int64s(_STORE_TS),
    )


_CARROW_API_VERSION = 2  # _carrow.pyx's, raised when gather_columns or split_properties changes
# rocketq.spark._carrow when it was built (setup.py) and ROCKETQ_NO_EXTENSIONS is not set.
_COMPILED: Any = load_extension("rocketq.spark._carrow", _CARROW_API_VERSION)
gather_columns: Callable[[list[tuple[bytes, list[tuple[Any, ...]]]]], tuple[Any, ...]] = (
    gather_columns_py if _COMPILED is None else _COMPILED.gather_columns
)
# The properties batch_of_pulls looks up per row (msg_id, tags, keys), found by the compiled split.
_LOOKED_UP = (UNIQ_KEY, C.PROPERTY_TAGS, C.PROPERTY_KEYS)


def _offset_msg_id(uniq_key: str | None, r: tuple[Any, ...]) -> str:
    if uniq_key is not None:
        return uniq_key
    return store_host_of(r[_STORE_IP], r[_STORE_PORT])[1] + f"{r[_PHYS_OFFSET] & 0xFFFFFFFFFFFFFFFF:016X}"


def _reference(pulls: Sequence[PulledRecords], schema: pa.Schema) -> pa.RecordBatch:
    return batch_of_messages(list(chain.from_iterable(p.messages() for p in pulls)), schema)


@dataclass(slots=True)
class _Properties:
    """The properties of a batch's rows as the map column, its names and values, and each pair's row."""

    map: pa.MapArray
    names: pa.Array
    values: pa.Array
    rows: pa.Array | None  # (None when `found` has every name looked up)
    found: dict[str, pa.Array]  # per name: the index of each row's pair that has it (null: none)

    def lookup(self, name: str) -> pa.Array:
        """Each row's value of property `name`, null where it has none (no row names one twice)."""
        at = self.found.get(name)
        if at is not None:
            return self.values.take(at)
        assert self.rows is not None
        n = len(self.map)
        mask = pc.equal(self.names, name)
        found = pc.filter(self.values, mask)
        if len(found) == n:  # every row has it
            return found
        has = pc.is_in(pa.array(range(n), pa.int64()), value_set=pc.filter(self.rows, mask))
        return pc.replace_with_mask(pa.nulls(n, pa.string()), has, found)


def _properties(n: int, texts: Any, text_offsets: Any) -> _Properties | None:
    """The properties sections (gather_columns' buffers) as the map column, or None where the string
    kernels would not give what rocketq.common.record.properties.decode_properties gives (the
    reference path decides). Compiled, one pass of rocketq.spark._carrow.split_properties makes the
    same arrays (and finds msg_id's, tags' and keys' pairs); else Arrow's string kernels."""
    strings = _array(pa.large_string(), n, text_offsets, texts)
    try:
        strings.validate(full=True)  # UTF-8
    except pa.ArrowInvalid:
        return None
    if _COMPILED is not None:
        return _split_compiled(n, texts, text_offsets)
    return _split_kernels(n, strings)


def _split_kernels(n: int, strings: pa.Array) -> _Properties | None:
    """_properties with Arrow's string kernels (`strings`: the sections as a valid large_string array)."""
    # No properties: a null row, which splits into no segment (an empty string would split into one).
    present = pc.not_equal(pc.binary_length(strings), 0)
    strings = pa.Array.from_buffers(pa.large_string(), n, [present.buffers()[1], *strings.buffers()[1:]])
    segments = pc.split_pattern(strings, C.PROPERTY_SEPARATOR)
    pairs = pc.split_pattern(pc.list_flatten(segments), C.NAME_VALUE_SEPARATOR, max_splits=1)
    if len(pairs) and pc.min(pc.list_value_length(pairs)).as_py() != 2:
        return None  # a segment without U+0001
    both = pa.FixedSizeListArray.from_arrays(pc.list_flatten(pairs), 2)
    names = pc.list_element(both, 0).cast(pa.string())
    values = pc.list_element(both, 1).cast(pa.string())
    if (
        len(pairs)
        and min(pc.min(pc.binary_length(names)).as_py(), pc.min(pc.binary_length(values)).as_py()) == 0
    ):
        return None  # an empty name or value
    counts = pc.fill_null(pc.list_value_length(segments), 0).cast(pa.int32())
    rows = pc.list_parent_indices(segments)
    if _repeats_a_name(counts, rows, names):
        return None
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(counts)])
    return _Properties(pa.MapArray.from_arrays(offsets, names, values), names, values, rows, {})


def _split_compiled(n: int, texts: Any, text_offsets: Any) -> _Properties | None:
    """_properties' arrays from rocketq.spark._carrow.split_properties (the same checks, one pass)."""
    wanted = tuple(name.encode() for name in _LOOKED_UP)
    split = _COMPILED.split_properties(texts, text_offsets, n, wanted)
    if split is None:
        return None
    pairs, map_offsets, name_offsets, names_buf, value_offsets, values_buf, found = split
    names = _array(pa.string(), pairs, name_offsets, names_buf)
    values = _array(pa.string(), pairs, value_offsets, values_buf)
    offsets = _array(pa.int32(), n + 1, map_offsets)
    at = {
        name: pa.Array.from_buffers(pa.int32(), n, [pa.py_buffer(valid), pa.py_buffer(index)])
        for name, (valid, index) in zip(_LOOKED_UP, found, strict=True)
    }
    return _Properties(pa.MapArray.from_arrays(offsets, names, values), names, values, None, at)


def _repeats_a_name(counts: pa.Array, rows: pa.Array, names: pa.Array) -> bool:
    """Whether some row names a property twice (a dict keeps one entry: the reference path decides)."""
    if len(names) < 2:
        return False
    bounds = pc.min_max(counts).as_py()
    width = bounds["max"]
    if bounds["min"] == width and width <= 8:  # the usual batch: every row has the same number of pairs
        at = pa.FixedSizeListArray.from_arrays(names, width)
        each = [pc.list_element(at, i) for i in range(width)]
        return any(
            pc.any(pc.equal(each[i], each[j])).as_py() for i in range(width) for j in range(i + 1, width)
        )
    codes = pc.dictionary_encode(names)
    keys = pc.add(pc.multiply(rows.cast(pa.int64()), len(codes.dictionary)), codes.indices.cast(pa.int64()))
    return bool(pc.count_distinct(keys).as_py() != len(keys))


def batch_of_messages(msgs: list[MessageExt], schema: pa.Schema) -> pa.RecordBatch:
    """The rows of decoded `msgs` as one Arrow batch, built column by column (the reference path).

    The property maps are built from three flat arrays (offsets, keys, values) with
    MapArray.from_arrays, and the headers column (includeHeaders) shares them. Each column is one
    comprehension (no per-row Python statements) and the timestamps are converted by Arrow.
    """
    props = [m.properties for m in msgs]
    names = list(chain.from_iterable(props))
    values = list(chain.from_iterable(p.values() for p in props))
    offsets_array = pa.array(list(accumulate(map(len, props), initial=0)), pa.int32())
    names_array = pa.array(names, pa.string())
    properties = pa.MapArray.from_arrays(offsets_array, names_array, pa.array(values, pa.string()))
    columns = [
        pa.array([m.topic for m in msgs], schema.field("topic").type),
        pa.array([m.broker_name for m in msgs], schema.field("broker_name").type),
        pa.array([m.queue_id for m in msgs], schema.field("queue_id").type),
        pa.array([m.queue_offset for m in msgs], schema.field("queue_offset").type),
        # MessageExt.msg_id without its two property look-ups: UNIQ_KEY, else the offset msgId.
        pa.array(
            [p.get(UNIQ_KEY) or m.offset_msg_id for p, m in zip(props, msgs, strict=True)],
            schema.field("msg_id").type,
        ),
        pa.array([p.get(C.PROPERTY_TAGS) for p in props], schema.field("tags").type),
        pa.array([p.get(C.PROPERTY_KEYS) for p in props], schema.field("keys").type),
        properties.cast(schema.field("properties").type),
        pa.array([m.body for m in msgs], schema.field("body").type),
        pa.array([m.born_timestamp for m in msgs], _MILLIS).cast(schema.field("born_timestamp").type),
        pa.array([m.store_timestamp for m in msgs], _MILLIS).cast(schema.field("store_timestamp").type),
    ]
    if schema.get_field_index("headers") >= 0:
        pairs = pa.StructArray.from_arrays(
            [names_array, pa.array([v.encode() for v in values], pa.binary())], names=["key", "value"]
        )
        columns.append(pa.ListArray.from_arrays(offsets_array, pairs).cast(schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
