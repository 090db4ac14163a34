"""RebalanceLockManager: which client of a group holds each queue, for orderly consumers.

Port of org.apache.rocketmq.broker.client.rebalance.RebalanceLockManager (4.9.8). A lock is a lease
(60 s by default, Java's `rocketmq.broker.rebalance.lockMaxLiveTime`): the holder renews it by locking
again (orderly consumers do every 20 s); an expired lease goes to whoever asks next. State is only in
memory, as in Java: after a broker restart every queue is free. Time comes from an injected Clock.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.message import MessageQueue

log = logging.getLogger("rocketq.broker.rebalance")


class LockEntry:
    __slots__ = ("client_id", "last_update_ms")

    def __init__(self, client_id: str, now_ms: int) -> None:
        self.client_id = client_id
        self.last_update_ms = now_ms


class RebalanceLockManager:
    def __init__(self, lock_max_live_time_ms: int = 60_000, clock: Clock = SYSTEM_CLOCK) -> None:
        self._lease_ms = lock_max_live_time_ms
        self._clock = clock
        self._table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def _expired(self, entry: LockEntry, now_ms: int) -> bool:
        return now_ms - entry.last_update_ms > self._lease_ms

    def try_lock(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        return mq in self.try_lock_batch(group, [mq], client_id)

    def try_lock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        """Lock (or renew) each queue for `client_id`; the queues it now holds."""
        now = self._clock.monotonic_ms()
        entries = self._table.setdefault(group, {})
        locked: set[MessageQueue] = set()
        for mq in mqs:
            entry = entries.get(mq)
            if entry is None:
                entries[mq] = LockEntry(client_id, now)
                log.info("lock: %s of group %s granted to %s", mq, group, client_id)
                locked.add(mq)
            elif entry.client_id == client_id:
                # The holder renews even an expired lease it still owns (nobody else took it).
                entry.last_update_ms = now
                locked.add(mq)
            elif self._expired(entry, now):
                log.info(
                    "lock: %s of group %s expired for %s, granted to %s",
                    mq,
                    group,
                    entry.client_id,
                    client_id,
                )
                entry.client_id = client_id
                entry.last_update_ms = now
                locked.add(mq)
        return locked

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        """Release the queues `client_id` holds; locks held by others are left alone."""
        entries = self._table.get(group)
        if not entries:
            return
        for mq in mqs:
            entry = entries.get(mq)
            if entry is not None and entry.client_id == client_id:
                del entries[mq]
        if not entries:
            del self._table[group]

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        entry = self._table.get(group, {}).get(mq)
        return (
            entry is not None
            and entry.client_id == client_id
            and not self._expired(entry, self._clock.monotonic_ms())
        )

    def holder(self, group: str, mq: MessageQueue) -> str | None:
        """The client holding a live lease on `mq`, or None."""
        entry = self._table.get(group, {}).get(mq)
        if entry is None or self._expired(entry, self._clock.monotonic_ms()):
            return None
        return entry.client_id
