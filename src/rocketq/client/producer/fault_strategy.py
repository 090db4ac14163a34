"""Send fault avoidance: which queue a send goes to, skipping brokers in their penalty window.

Port of org.apache.rocketmq.client.latency.{MQFaultStrategy, LatencyFaultToleranceImpl} (4.9.8)
as a pure policy on an injected Clock. A send that took `latency` ms puts its broker out of rotation for
the `notAvailableDuration` of the largest `latencyMax` step it reached (50,100,550,1000,2000,3000,15000 ms
-> 0,0,30,60,120,180,600 s); a failed send counts as 30 s of latency (so 600 s).
Deviation: with the fault strategy on, Java 4.9.8 ignores `lastBrokerName`; we first look for an
available queue on another broker than the one that just failed, then for any available queue.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from rocketq.client.route import RoundRobinIndex, TopicPublishInfo
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.message import MessageQueue

DEFAULT_LATENCY_MAX_MS = (50, 100, 550, 1000, 2000, 3000, 15000)
DEFAULT_NOT_AVAILABLE_DURATION_MS = (0, 0, 30_000, 60_000, 120_000, 180_000, 600_000)
ISOLATION_LATENCY_MS = 30_000  # what a failed send counts as


@dataclass(slots=True)
class FaultItem:
    """One broker's last latency and the (monotonic) time from which it is available again."""

    name: str
    current_latency_ms: int
    start_ms: int

    def is_available(self, now_ms: int) -> bool:
        return now_ms - self.start_ms >= 0

    def sort_key(self, now_ms: int) -> tuple[bool, int, int]:
        # Java FaultItem.compareTo: available first, then lower latency, then earlier start.
        return (not self.is_available(now_ms), self.current_latency_ms, self.start_ms)


class LatencyFaultTolerance:
    """The per-broker fault table (Java LatencyFaultToleranceImpl), on an injected clock."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._items: dict[str, FaultItem] = {}
        self._lock = threading.Lock()
        self._worst_index = (
            RoundRobinIndex()
        )  # Java's whichItemWorst: a ThreadLocalIndex, from a random start

    def update_fault_item(self, name: str, current_latency_ms: int, not_available_duration_ms: int) -> None:
        start = self._clock.monotonic_ms() + not_available_duration_ms
        with self._lock:
            item = self._items.get(name)
            if item is None:
                self._items[name] = FaultItem(name, current_latency_ms, start)
            else:
                item.current_latency_ms = current_latency_ms
                item.start_ms = start

    def is_available(self, name: str) -> bool:
        item = self._items.get(name)
        return item is None or item.is_available(self._clock.monotonic_ms())

    def remove(self, name: str | None) -> None:
        if name is not None:
            with self._lock:
                self._items.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        """A broker to try when none is available: one of the better half, rotating."""
        now = self._clock.monotonic_ms()
        with self._lock:
            items = sorted(self._items.values(), key=lambda it: it.sort_key(now))
        if not items:
            return None
        half = len(items) // 2
        if half <= 0:
            return items[0].name
        return items[self._worst_index.next() % half].name

    def snapshot(self) -> dict[str, FaultItem]:
        with self._lock:
            return {k: FaultItem(v.name, v.current_latency_ms, v.start_ms) for k, v in self._items.items()}


class MQFaultStrategy:
    """Queue selection for sends, with or without fault-latency avoidance."""

    def __init__(
        self,
        clock: Clock = SYSTEM_CLOCK,
        *,
        enabled: bool = False,
        latency_max_ms: Sequence[int] = DEFAULT_LATENCY_MAX_MS,
        not_available_duration_ms: Sequence[int] = DEFAULT_NOT_AVAILABLE_DURATION_MS,
    ) -> None:
        if len(latency_max_ms) != len(not_available_duration_ms):
            raise ValueError("latencyMax and notAvailableDuration must have the same length")
        self.enabled = enabled
        self.latency_max_ms = tuple(latency_max_ms)
        self.not_available_duration_ms = tuple(not_available_duration_ms)
        self.tolerance = LatencyFaultTolerance(clock)

    def compute_not_available_duration(self, latency_ms: int) -> int:
        for step, duration in zip(
            reversed(self.latency_max_ms), reversed(self.not_available_duration_ms), strict=True
        ):
            if latency_ms >= step:
                return duration
        return 0

    def update_fault_item(self, broker_name: str, latency_ms: int, isolation: bool) -> None:
        """Record a send's outcome: its latency, or (isolation) a failure that counts as 30 s."""
        if not self.enabled:
            return
        duration = self.compute_not_available_duration(ISOLATION_LATENCY_MS if isolation else latency_ms)
        self.tolerance.update_fault_item(broker_name, latency_ms, duration)

    def select_one_message_queue(self, info: TopicPublishInfo, last_broker_name: str | None) -> MessageQueue:
        if not self.enabled:
            return info.select_one(last_broker_name)
        mqs = info.message_queues
        start = info.index.next()
        available: MessageQueue | None = None
        for i in range(len(mqs)):
            mq = mqs[((start + i) & 0x7FFFFFFF) % len(mqs)]
            if self.tolerance.is_available(mq.broker_name):
                if last_broker_name is None or mq.broker_name != last_broker_name:
                    return mq
                if available is None:
                    available = mq
        if available is not None:
            return available
        not_best = self.tolerance.pick_one_at_least()
        queue_count = info.queue_count_of_broker(not_best)
        if not_best is not None and queue_count > 0:
            # Java takes tpInfo.selectOneMessageQueue() first and then replaces its queue with one of
            # not_best's, drawn from the index again: the index moves twice here (three times a call with the
            # loop's), so the queue ids of an all-faulty route rotate through every queue rather than
            # stepping over half of them.
            info.select_one()
            return MessageQueue(info.topic, not_best, info.index.next() % queue_count)
        self.tolerance.remove(not_best)
        return info.select_one()
