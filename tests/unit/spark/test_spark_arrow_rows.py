"""The source's Arrow batches hold, row by row, what the decoded messages hold (no network, no Spark)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyarrow")

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.store.test_store_record_codec import messages

from rocketq.common.message import MessageExt
from rocketq.common.record.codec import encode_record
from rocketq.common.record.lazy import decode_records_lazy
from rocketq.spark.arrow_batches import batch_of_messages as _arrow_batch
from rocketq.spark.arrow_batches import reader_schema

SCHEMA = reader_schema(include_headers=True)


@settings(max_examples=30, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=8))
def test_arrow_rows_hold_every_field_of_the_messages(msgs: list[MessageExt]) -> None:
    for m in msgs:  # a Spark timestamp is int64 microseconds: epoch ms within its range (year 2109 here)
        m.born_timestamp %= 1 << 42
        m.store_timestamp %= 1 << 42
    views = decode_records_lazy(b"".join(encode_record(m) for m in msgs))
    for v in views:
        v.broker_name = "broker-a"
    batch = _arrow_batch(views, SCHEMA)
    micros = {
        name: batch.column(name).cast(pa.int64()).to_pylist()
        for name in ("born_timestamp", "store_timestamp")
    }
    rows = batch.drop_columns(list(micros)).to_pylist()
    assert len(rows) == len(msgs)
    assert micros["born_timestamp"] == [m.born_timestamp * 1000 for m in views]
    assert micros["store_timestamp"] == [m.store_timestamp * 1000 for m in views]
    for row, m in zip(rows, views, strict=True):
        assert row["topic"] == m.topic and row["broker_name"] == "broker-a"
        assert (row["queue_id"], row["queue_offset"]) == (m.queue_id, m.queue_offset)
        assert row["msg_id"] == m.msg_id  # UNIQ_KEY, else the offset msgId
        assert (row["tags"], row["keys"]) == (m.properties.get("TAGS"), m.properties.get("KEYS"))
        assert row["properties"] == list(m.properties.items())
        assert row["headers"] == [{"key": k, "value": v.encode()} for k, v in m.properties.items()]
        assert row["body"] == m.body
