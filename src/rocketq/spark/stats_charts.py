"""PNG charts of the broker stats tables (matplotlib, Agg backend: no display needed).

Takes the tables as lists of dicts (stats_tables.rows), small enough for the driver.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # after choosing the backend
from matplotlib.axes import Axes

Rows = Sequence[dict[str, Any]]


def _series(rows: Rows, label_of: Any, value: str) -> dict[str, tuple[list[Any], list[float]]]:
    out: dict[str, tuple[list[Any], list[float]]] = defaultdict(lambda: ([], []))
    for row in sorted(rows, key=lambda r: r["bucket"]):
        xs, ys = out[label_of(row)]
        xs.append(row["bucket"])
        ys.append(float(row[value] or 0))
    return dict(out)


def _plot(ax: Axes, series: dict[str, tuple[list[Any], list[float]]], title: str, ylabel: str) -> None:
    for label in sorted(series):
        xs, ys = series[label]
        ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.5, label=label)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if series:
        ax.legend(fontsize="small", loc="upper left")
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    for tick in ax.get_xticklabels():
        tick.set_rotation(20)


def tps_panel(ax: Axes, topic_tps: Rows) -> None:
    _plot(ax, _series(topic_tps, lambda r: r["topic"], "put_tps"), "Put TPS per topic", "messages / s")


def lag_panel(ax: Axes, group_lag: Rows) -> None:
    series = _series(group_lag, lambda r: f"{r['group']} @ {r['topic']}", "lag_messages")
    lagging = {name: xy for name, xy in series.items() if any(xy[1])}
    # Groups that never lagged (often the %RETRY% topics) stay in the table but would only crowd the chart.
    title = "Consumer lag" + (f" ({len(series) - len(lagging)} groups without lag not drawn)" if len(lagging) < len(series) else "")
    _plot(ax, lagging or series, title, "messages")


def latency_panel(ax: Axes, put_latency: Rows) -> None:
    series: dict[str, tuple[list[Any], list[float]]] = {}
    for name in ("p50_us", "p90_us", "p99_us"):
        for broker, (xs, ys) in _series(put_latency, lambda r: r["brokerName"], name).items():
            series[f"{broker} {name[:-3]}"] = (xs, [y / 1000 for y in ys])
    _plot(ax, series, "Put latency (store)", "ms")


def write_charts(out_dir: Path, tables: dict[str, Rows], resolution_s: int) -> list[Path]:
    """topic_tps.png, group_lag.png, put_latency.png and overview.png (all three) under out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    panels: tuple[tuple[str, Callable[[Axes, Rows], None]], ...] = (
        ("topic_tps", tps_panel),
        ("group_lag", lag_panel),
        ("put_latency", latency_panel),
    )
    written = []
    for name, draw in panels:
        fig, ax = plt.subplots(figsize=(9, 4), dpi=100)
        draw(ax, tables[name])
        ax.set_xlabel(f"time (UTC, {resolution_s} s buckets)")
        fig.tight_layout()
        path = out_dir / f"{name}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    fig, axes = plt.subplots(3, 1, figsize=(10, 11), dpi=100, sharex=True)
    for ax, (name, draw) in zip(axes, panels, strict=True):
        draw(ax, tables[name])
    axes[-1].set_xlabel(f"time (UTC, {resolution_s} s buckets)")
    fig.suptitle("rocketq broker stats (from the rmq_sys_broker_stats_* topics)")
    fig.tight_layout()
    path = out_dir / "overview.png"
    fig.savefig(path)
    plt.close(fig)
    written.append(path)
    return written
