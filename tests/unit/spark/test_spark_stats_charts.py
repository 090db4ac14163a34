"""The stats charts: gaps stay gaps, counts start at zero, coinciding series stay visible (synthetic tables)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib")

import matplotlib.pyplot as plt
import numpy as np

from rocketq.spark.stats_charts import PANELS, lag_panel, tps_panel, with_gaps, write_charts

T0 = datetime(2026, 1, 1, 12, 0)


def at(minute: int) -> datetime:
    return T0 + timedelta(minutes=minute)


def test_a_missing_bucket_breaks_the_line() -> None:
    xs, ys = with_gaps([at(0), at(1), at(5), at(6)], [1.0, 2.0, 3.0, 4.0], 60)
    assert xs[:3] == [at(0), at(1), at(2)] and math.isnan(ys[2])
    assert ys[3:] == [3.0, 4.0] and len(xs) == 5
    assert with_gaps([at(0), at(1)], [1.0, 1.0], 60) == ([at(0), at(1)], [1.0, 1.0])


def test_lag_starts_at_zero_and_coinciding_series_differ_in_style() -> None:
    rows = [
        {"bucket": at(i), "group": g, "topic": "T", "lag_messages": 500 + i, "lag_latency_ms": 1}
        for i in range(5)
        for g in ("a", "b")
    ]
    fig, ax = plt.subplots()
    lag_panel(ax, rows, 60)
    assert ax.get_ylim()[0] == 0
    lines = ax.get_lines()
    assert len(lines) == 2
    assert (
        lines[0].get_linestyle() != lines[1].get_linestyle()
        and lines[0].get_marker() != lines[1].get_marker()
    )
    assert lines[0].get_linewidth() > lines[1].get_linewidth()  # the one underneath is wider: both show
    plt.close(fig)
    fig, ax = plt.subplots()
    tps_panel(
        ax,
        [{"bucket": at(0), "topic": "T", "put_tps": 10.0}, {"bucket": at(3), "topic": "T", "put_tps": 12.0}],
        60,
    )
    assert math.isnan(float(np.asarray(ax.get_lines()[0].get_ydata(), dtype=float)[1]))
    plt.close(fig)


def test_every_panel_is_written(tmp_path: Path) -> None:
    tables: dict[str, Sequence[dict[str, Any]]] = {
        "topic_tps": [{"bucket": at(i), "topic": "T", "put_tps": 5.0, "get_tps": 4.0} for i in range(3)],
        "group_lag": [
            {"bucket": at(i), "group": "g", "topic": "T", "lag_messages": i, "lag_latency_ms": 100 * i}
            for i in range(3)
        ],
        "put_latency": [
            {"bucket": at(i), "brokerName": "b", "p50_us": 10, "p90_us": 20, "p99_us": 30} for i in range(3)
        ],
    }
    written = write_charts(tmp_path, tables, 60)
    assert [p.name for p in written] == [f"{name}.png" for name, _t, _d in PANELS] + ["overview.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)
