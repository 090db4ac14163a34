"""PNG charts of the broker stats tables (matplotlib, Agg backend: no display needed).

Takes the tables as lists of dicts (stats_tables.rows), small enough for the driver. Drawing rules,
each against a way a chart misled: series that coincide stay visible (each series has its own line
style and marker, and earlier series are drawn wider, so a later one on top leaves it showing);
a bucket without a sample is a gap in the line, not a straight line across the idle time; counts
that cannot go below zero (TPS, lag) are drawn from a zero baseline.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # after choosing the backend
from matplotlib.axes import Axes

Rows = Sequence[dict[str, Any]]
Series = dict[str, tuple[list[Any], list[float]]]

STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "x", "+", "*")


def _series(rows: Rows, label_of: Callable[[dict[str, Any]], str], value: str, scale: float = 1.0) -> Series:
    out: Series = defaultdict(lambda: ([], []))
    for row in sorted(rows, key=lambda r: r["bucket"]):
        xs, ys = out[label_of(row)]
        xs.append(row["bucket"])
        ys.append(float(row[value] or 0) * scale)
    return dict(out)


def with_gaps(xs: list[Any], ys: list[float], step_s: float) -> tuple[list[Any], list[float]]:
    """A NaN between two samples more than one bucket apart, so the line breaks over the idle time."""
    if not xs:
        return xs, ys
    out_x, out_y = [xs[0]], [ys[0]]
    for (x0, _y0), (x1, y1) in itertools.pairwise(zip(xs, ys, strict=True)):
        if isinstance(x0, datetime) and (x1 - x0) > timedelta(seconds=1.5 * step_s):
            out_x.append(x0 + timedelta(seconds=step_s))
            out_y.append(math.nan)
        out_x.append(x1)
        out_y.append(y1)
    return out_x, out_y


def _plot(ax: Axes, series: Series, title: str, ylabel: str, step_s: float, *, zero_based: bool) -> None:
    labels = sorted(series)
    for i, label in enumerate(labels):
        xs, ys = with_gaps(*series[label], step_s)
        ax.plot(
            xs, ys, label=label, linestyle=STYLES[i % len(STYLES)], marker=MARKERS[i % len(MARKERS)],
            markersize=4, linewidth=1.2 + 1.5 * (len(labels) - 1 - i) / max(len(labels) - 1, 1), alpha=0.9,
        )  # fmt: skip
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if zero_based:
        ax.set_ylim(bottom=0)
    if series:
        ax.legend(fontsize="small", loc="upper left")
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    for tick in ax.get_xticklabels():
        tick.set_rotation(20)


def tps_panel(ax: Axes, topic_tps: Rows, step_s: float) -> None:
    _plot(
        ax,
        _series(topic_tps, lambda r: r["topic"], "put_tps"),
        "Put TPS per topic",
        "messages / s",
        step_s,
        zero_based=True,
    )


def get_tps_panel(ax: Axes, topic_tps: Rows, step_s: float) -> None:
    series = _series(topic_tps, lambda r: r["topic"], "get_tps")
    read = {name: xy for name, xy in series.items() if any(xy[1])}
    _plot(ax, read or series, "Get TPS per topic", "messages / s", step_s, zero_based=True)


def _lagging(group_lag: Rows, value: str, scale: float = 1.0) -> tuple[Series, int]:
    series = _series(group_lag, lambda r: f"{r['group']} @ {r['topic']}", value, scale)
    lagging = {name: xy for name, xy in series.items() if any(xy[1])}
    # Groups that never lagged (often the %RETRY% topics) stay in the table but would only crowd the chart.
    return (lagging or series), len(series) - len(lagging) if lagging else 0


def lag_panel(ax: Axes, group_lag: Rows, step_s: float) -> None:
    series, hidden = _lagging(group_lag, "lag_messages")
    title = "Consumer lag" + (f" ({hidden} groups without lag not drawn)" if hidden else "")
    _plot(ax, series, title, "messages", step_s, zero_based=True)


def lag_latency_panel(ax: Axes, group_lag: Rows, step_s: float) -> None:
    series, hidden = _lagging(group_lag, "lag_latency_ms", 1 / 1000)
    title = "Consumer lag latency (age of the oldest unconsumed message)" + (
        f", {hidden} groups without lag not drawn" if hidden else ""
    )
    _plot(ax, series, title, "s", step_s, zero_based=True)


def latency_panel(ax: Axes, put_latency: Rows, step_s: float) -> None:
    series: Series = {}
    for name in ("p50_us", "p90_us", "p99_us"):
        for broker, xy in _series(put_latency, lambda r: r["brokerName"], name, 1 / 1000).items():
            series[f"{broker} {name[:-3]}"] = xy
    _plot(ax, series, "Put latency (store)", "ms", step_s, zero_based=True)


Panel = Callable[[Axes, Rows, float], None]
PANELS: tuple[tuple[str, str, Panel], ...] = (
    ("topic_tps", "topic_tps", tps_panel),
    ("get_tps", "topic_tps", get_tps_panel),
    ("group_lag", "group_lag", lag_panel),
    ("lag_latency", "group_lag", lag_latency_panel),
    ("put_latency", "put_latency", latency_panel),
)


def write_charts(out_dir: Path, tables: dict[str, Rows], resolution_s: int) -> list[Path]:
    """topic_tps, get_tps, group_lag, lag_latency, put_latency and overview (all five) PNGs under out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table, draw in PANELS:
        fig, ax = plt.subplots(figsize=(9, 4), dpi=100)
        draw(ax, tables[table], resolution_s)
        ax.set_xlabel(f"time (UTC, {resolution_s} s buckets)")
        fig.tight_layout()
        path = out_dir / f"{name}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    fig, axes = plt.subplots(len(PANELS), 1, figsize=(10, 3.6 * len(PANELS)), dpi=100, sharex=True)
    for ax, (_name, table, draw) in zip(axes, PANELS, strict=True):
        draw(ax, tables[table], resolution_s)
    axes[-1].set_xlabel(f"time (UTC, {resolution_s} s buckets)")
    fig.suptitle("rocketq broker stats (from the rmq_sys_broker_stats_* topics)")
    fig.tight_layout(rect=(0, 0, 1, 0.985))  # room for the title above the first panel's own
    path = out_dir / "overview.png"
    fig.savefig(path)
    plt.close(fig)
    written.append(path)
    return written
