"""The last hour of TPS per broker and lag per consumer group, sampled through Admin for the charts.

rocketmq-dashboard reads these from its own collector task; so do we: every SAMPLE_INTERVAL_S the
dashboard asks each master for GET_BROKER_RUNTIME_INFO (putTps, getTotalTps of its last stats window)
and each known group for its consume progress, and keeps an hour of points in memory. Charts are
drawn server-side as inline SVG polylines (no script, no remote asset).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rocketq.common.service import PeriodicService

SAMPLE_INTERVAL_S = 10.0
KEEP_S = 3600


@dataclass(slots=True)
class Series:
    points: deque[tuple[float, float]] = field(
        default_factory=lambda: deque(maxlen=int(KEEP_S / SAMPLE_INTERVAL_S) + 1)
    )

    def add(self, value: float, at: float | None = None) -> None:
        self.points.append((time.time() if at is None else at, value))


class History:
    def __init__(self) -> None:
        self.series: dict[str, Series] = {}
        self._sampler: PeriodicService | None = None

    def add(self, name: str, value: float, at: float | None = None) -> None:
        self.series.setdefault(name, Series()).add(value, at)

    def svg(self, names: list[str], width: int = 640, height: int = 160) -> dict[str, Any]:
        """Polyline points of each series (scaled to the box) and the axis maximum, for the template."""
        now = time.time()
        peak = max((v for n in names for _, v in self.series.get(n, Series()).points), default=0.0) or 1.0
        lines = {}
        for name in names:
            pts = self.series.get(name, Series()).points
            lines[name] = " ".join(
                f"{width * (1 - (now - t) / KEEP_S):.1f},{height - height * v / peak:.1f}" for t, v in pts
            )
        return {"lines": lines, "peak": peak, "width": width, "height": height}

    async def start(self, sample: Callable[[], Awaitable[None]]) -> None:
        # A failed round is logged at DEBUG only: with the cluster down the pages show the banner and
        # the charts just pause, every SAMPLE_INTERVAL_S, until it is back.
        self._sampler = PeriodicService(
            "dashboard-history", SAMPLE_INTERVAL_S, sample, failure_log_level=logging.DEBUG
        )
        await self._sampler.start()

    async def stop(self) -> None:
        if self._sampler is not None:
            await self._sampler.stop()
