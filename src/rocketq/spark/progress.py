"""Kafka-style lag metrics of a streaming query reading format("rocketq"), from its progress reports.

Spark's Kafka source reports minOffsetsBehindLatest / maxOffsetsBehindLatest / avgOffsetsBehindLatest in
each source's `metrics` (through the JVM's ReportsSourceMetrics). PySpark's Python data sources have no
such hook (their progress shows `metrics: {}` and the JVM class as description), but every progress report
carries the source's `endOffset` and, since the source implements reportLatestOffset, its `latestOffset`:
the same figures are computed from those two, per queue. Pure: takes the progress as Spark gives it
(`query.lastProgress`, a dict) and needs no session.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rocketq.spark.offsets import from_offsets


def _offsets(value: Any) -> dict[str, dict[str, int]] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        return None
    return value


def offsets_behind_latest(source: Mapping[str, Any]) -> dict[str, float] | None:
    """For one entry of a progress report's `sources`: how far each queue's end is behind the latest offset.

    None when the entry is not a rocketq source or carries no latestOffset (Spark 4.0 / 4.1).
    """
    end, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
    if end is None or latest is None:
        return None
    try:
        done, newest = from_offsets(end), from_offsets(latest)
    except ValueError:
        return None  # not queue offsets of ours
    behind = [max(offset - done.get(queue, 0), 0) for queue, offset in newest.items()]
    if not behind:
        return {"minOffsetsBehindLatest": 0.0, "maxOffsetsBehindLatest": 0.0, "avgOffsetsBehindLatest": 0.0}
    return {
        "minOffsetsBehindLatest": float(min(behind)),
        "maxOffsetsBehindLatest": float(max(behind)),
        "avgOffsetsBehindLatest": sum(behind) / len(behind),
    }


def describe(progress: Mapping[str, Any] | None) -> str:
    """One line for a progress report: batch, rows, rows/s and the lag of each rocketq source."""
    if not progress:
        return "no progress yet"
    parts = [f"batch {progress.get('batchId')}: {progress.get('numInputRows', 0)} rows"]
    rate = progress.get("processedRowsPerSecond")
    if rate is not None:
        parts.append(f"{float(rate):.0f} rows/s")
    for source in progress.get("sources", []):
        lag = offsets_behind_latest(source)
        if lag is not None:
            parts.append(
                "behind latest: max {maxOffsetsBehindLatest:.0f}, avg {avgOffsetsBehindLatest:.1f}, "
                "min {minOffsetsBehindLatest:.0f} messages per queue".format(**lag)
            )
    return ", ".join(parts)
