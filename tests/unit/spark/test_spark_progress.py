"""Kafka-style lag metrics from a streaming query's progress (no session: progress is plain JSON)."""

from __future__ import annotations

import json

from rocketq.spark.progress import describe, offsets_behind_latest


def test_offsets_behind_latest_per_queue_from_end_and_latest_offsets() -> None:
    source = {
        "description": "PythonMicroBatchStream",
        "endOffset": json.dumps({"T": {"broker-a:0": 10, "broker-a:1": 20}}),
        "latestOffset": {"T": {"broker-a:0": 15, "broker-a:1": 20, "broker-b:0": 3}},
    }
    assert offsets_behind_latest(source) == {
        "minOffsetsBehindLatest": 0.0,
        "maxOffsetsBehindLatest": 5.0,
        "avgOffsetsBehindLatest": 8 / 3,  # the new queue counts from 0
    }
    assert offsets_behind_latest({"endOffset": "{}", "latestOffset": None}) is None  # Spark 4.0 / 4.1
    assert offsets_behind_latest({"endOffset": '{"logOffset": 3}', "latestOffset": '{"x": 1}'}) is None


def test_describe_is_one_readable_line() -> None:
    progress = {
        "batchId": 4,
        "numInputRows": 150,
        "processedRowsPerSecond": 812.4,
        "sources": [{"endOffset": {"T": {"b:0": 1}}, "latestOffset": {"T": {"b:0": 9}}}],
    }
    assert describe(progress) == (
        "batch 4: 150 rows, 812 rows/s, behind latest: max 8, avg 8.0, min 8 messages per queue"
    )
    assert describe(None) == "no progress yet"
