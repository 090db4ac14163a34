"""Injectable time: policies and timers take a Clock so tests can drive time without sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch (store timestamps, delivery times)."""
        ...

    def monotonic_ms(self) -> int:
        """Monotonic milliseconds (timeouts, latency, liveness)."""
        ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to; both readings advance together."""

    def __init__(self, now_ms: int = 1_700_000_000_000, monotonic_ms: int = 1_000_000) -> None:
        self._now = now_ms
        self._mono = monotonic_ms

    def now_ms(self) -> int:
        return self._now

    def monotonic_ms(self) -> int:
        return self._mono

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock does not go back")
        self._now += ms
        self._mono += ms


SYSTEM_CLOCK = SystemClock()
