"""PopLongPolling: POP requests that found nothing wait (up to their pollTime) for a message to arrive.

Port of RocketMQ 5's PopLongPollingService, simplified: a parked request is filed under the topic it
pops and under its group's pop retry topic; a message stored into either (the store's arrival listener)
wakes every request filed there, which then runs again (and parks again until its deadline if another
request took the message). At the deadline it is answered "nothing" by its processor. At most
`max_waiting` requests wait at once; beyond that the processor answers POLLING_FULL.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from rocketq.common.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger("rocketq.broker.pop")

MAX_WAITING = 10_000


class PopWaiter:
    __slots__ = ("conn", "deadline_ms", "handle", "request", "topics")

    def __init__(self, conn: Any, request: Any, deadline_ms: int, topics: tuple[str, ...]) -> None:
        self.conn = conn
        self.request = request
        self.deadline_ms = deadline_ms  # monotonic
        self.topics = topics
        self.handle: asyncio.TimerHandle | None = None


class PopLongPolling:
    def __init__(
        self, replay: Callable[[PopWaiter], None], clock: Clock = SYSTEM_CLOCK, max_waiting: int = MAX_WAITING
    ):
        self._replay = replay
        self._clock = clock
        self.max_waiting = max_waiting
        self._by_topic: dict[str, set[PopWaiter]] = {}
        self._count = 0

    @property
    def waiting(self) -> int:
        return self._count

    def park(self, waiter: PopWaiter) -> bool:
        """Hold `waiter` until a message arrives or its deadline; False when too many wait already."""
        if self._count >= self.max_waiting:
            return False
        for topic in waiter.topics:
            self._by_topic.setdefault(topic, set()).add(waiter)
        self._count += 1
        delay = max(0, waiter.deadline_ms - self._clock.monotonic_ms()) / 1000
        waiter.handle = asyncio.get_running_loop().call_later(delay, self._wake, waiter)
        return True

    def on_message_arrival(self, topic: str, *_: Any) -> None:
        """Store arrival listener: wake the requests waiting on `topic` (cheap when none waits)."""
        waiters = self._by_topic.get(topic)
        if waiters:
            for waiter in list(waiters):
                self._wake(waiter)

    def _unfile(self, waiter: PopWaiter) -> bool:
        filed = False
        for topic in waiter.topics:
            waiters = self._by_topic.get(topic)
            if waiters is not None and waiter in waiters:
                waiters.discard(waiter)
                filed = True
                if not waiters:
                    del self._by_topic[topic]
        if filed:
            self._count -= 1
        if waiter.handle is not None:
            waiter.handle.cancel()
            waiter.handle = None
        return filed

    def _wake(self, waiter: PopWaiter) -> None:
        if self._unfile(waiter):
            try:
                self._replay(waiter)
            except Exception:
                log.exception("waking a held POP request failed")

    def drain(self) -> None:
        """Answer every waiting request now (shutdown)."""
        for waiters in list(self._by_topic.values()):
            for waiter in list(waiters):
                waiter.deadline_ms = 0
                self._wake(waiter)
