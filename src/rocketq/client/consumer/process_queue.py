"""ProcessQueue: the messages pulled from one queue and not yet consumed, with their flow-control figures.

Port of org.apache.rocketmq.client.impl.consumer.ProcessQueue (4.9.8). It counts messages and body bytes
(pullThresholdForQueue / pullThresholdSizeForQueue), the span between the lowest and highest held
offsets (consumeConcurrentlyMaxSpan), and gives the offset that is safe to commit: the lowest offset not
yet consumed, or one past the highest pulled when nothing is held. A queue belongs to one rebalance
generation; once `dropped` is set, pulls and consumption for it stop.
Deviation: Java guards the tree map with a read-write lock; here every call happens on the client's
event loop, so there is no lock. Java's TreeMap becomes a dict plus an offset deque kept in ascending
order (pulls arrive in order), with entries removed lazily at both ends.
"""

from __future__ import annotations

import asyncio
import bisect
import operator
from collections import deque
from collections.abc import Iterable
from itertools import repeat

from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.message import MessageExt

_offset_of = operator.attrgetter("queue_offset")
_body_of = operator.attrgetter("body")
_lt = operator.lt


class ProcessQueue:
    """Held messages of one queue (offset -> message) and the state of consuming them."""

    def __init__(self, generation: int = 0, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self.generation = generation
        self._msgs: dict[int, MessageExt] = {}
        self._offsets: deque[int] = deque()  # ascending; may hold offsets already removed
        self._consuming_orderly: dict[int, MessageExt] = {}
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0
        self.msg_acc_cnt = 0
        self.dropped = False
        self.locked = False
        self.consuming = False
        self.try_unlock_times = 0
        now = clock.monotonic_ms()
        self.last_pull_ms = now
        self.last_consume_ms = now
        self.last_lock_ms = now
        # Orderly consumption: one batch of this queue at a time.
        self.consume_lock = asyncio.Lock()

    # -- pulled messages in ---------------------------------------------------------------------
    def put_messages(self, msgs: Iterable[MessageExt]) -> bool:
        """Hold newly pulled messages; True when an orderly consumer should start a consume round."""
        batch = msgs if isinstance(msgs, list) else list(msgs)
        last: MessageExt | None = batch[-1] if batch else None
        offsets = list(map(_offset_of, batch))
        top = self._offsets[-1] if self._offsets else -1
        if (
            offsets
            and offsets[0] > top
            and not self._consuming_orderly
            and all(map(_lt, offsets, offsets[1:]))
        ):
            # A pull's batch, after everything held (the usual case): per batch, the loops in C.
            self._msgs.update(zip(offsets, batch, strict=True))
            self._offsets.extend(offsets)
            self.msg_count += len(batch)
            self.msg_size += sum(map(len, map(_body_of, batch)))
            self.queue_offset_max = offsets[-1]
        else:
            for msg, offset in zip(batch, offsets, strict=True):
                if offset in self._msgs or offset in self._consuming_orderly:
                    continue
                self._msgs[offset] = msg
                self._append_offset(offset)
                self.msg_count += 1
                self.msg_size += len(msg.body)
                self.queue_offset_max = offset
        dispatch = False
        if self._msgs and not self.consuming:
            dispatch = True
            self.consuming = True
        if last is not None:
            max_offset = last.properties.get(C.PROPERTY_MAX_OFFSET)
            if max_offset is not None:
                try:
                    acc = int(max_offset) - last.queue_offset
                except ValueError:
                    acc = 0
                if acc > 0:
                    self.msg_acc_cnt = acc
        return dispatch

    def _append_offset(self, offset: int) -> None:
        if not self._offsets or offset > self._offsets[-1]:
            self._offsets.append(offset)
        else:  # out of order (after an offset reset): keep the deque sorted
            items = list(self._offsets)
            bisect.insort(items, offset)
            self._offsets = deque(items)

    def _first(self) -> int | None:
        offsets = self._offsets
        while offsets and offsets[0] not in self._msgs:
            offsets.popleft()
        return offsets[0] if offsets else None

    def _last(self) -> int | None:
        offsets = self._offsets
        while offsets and offsets[-1] not in self._msgs:
            offsets.pop()
        return offsets[-1] if offsets else None

    # -- concurrent consumption ------------------------------------------------------------------
    def remove_messages(self, msgs: Iterable[MessageExt]) -> int:
        """Forget consumed messages; returns the offset now safe to commit, -1 if nothing was held."""
        self.last_consume_ms = self._clock.monotonic_ms()
        if not self._msgs:
            return -1
        # Per batch: the pops in C; only the messages that were held count (a message may be removed twice).
        held = [m for m in map(self._msgs.pop, map(_offset_of, msgs), repeat(None)) if m is not None]
        self.msg_count -= len(held)
        self.msg_size -= sum(map(len, map(_body_of, held)))
        if self.msg_count == 0:
            self.msg_size = 0
        first = self._first()
        return first if first is not None else self.queue_offset_max + 1

    def lowest_unconsumed_offset(self) -> int | None:
        """The smallest offset still held (pulled, not yet consumed), None when none is."""
        candidates = [o for o in (self._first(), min(self._consuming_orderly, default=None)) if o is not None]
        return min(candidates) if candidates else None

    @property
    def max_span(self) -> int:
        first, last = self._first(), self._last()
        return 0 if first is None or last is None else last - first

    def first_message(self) -> MessageExt | None:
        """The held message with the lowest offset (the one holding the committed offset back)."""
        first = self._first()
        return None if first is None else self._msgs[first]

    def has_temp_message(self) -> bool:
        return bool(self._msgs)

    def held_messages(self) -> list[MessageExt]:
        return [self._msgs[o] for o in sorted(self._msgs)]

    # -- orderly consumption ----------------------------------------------------------------------
    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """Move up to `batch_size` lowest messages to the consuming set (orderly)."""
        self.last_consume_ms = self._clock.monotonic_ms()
        taken: list[MessageExt] = []
        while len(taken) < batch_size:
            first = self._first()
            if first is None:
                break
            msg = self._msgs.pop(first)
            self._offsets.popleft()
            self._consuming_orderly[first] = msg
            taken.append(msg)
        if not taken:
            self.consuming = False
        return taken

    def commit(self) -> int:
        """The consuming batch succeeded: returns the next offset to consume, -1 if there was none."""
        if not self._consuming_orderly:
            return -1
        last = max(self._consuming_orderly)
        for msg in self._consuming_orderly.values():
            self.msg_size -= len(msg.body)
        self.msg_count -= len(self._consuming_orderly)
        if self.msg_count == 0:
            self.msg_size = 0
        self._consuming_orderly.clear()
        return last + 1

    def rollback(self) -> None:
        """Put the whole consuming batch back in front, to be taken again."""
        self.make_messages_to_consume_again(list(self._consuming_orderly.values()))

    def make_messages_to_consume_again(self, msgs: Iterable[MessageExt]) -> None:
        for msg in msgs:
            self._consuming_orderly.pop(msg.queue_offset, None)
            if msg.queue_offset not in self._msgs:
                self._msgs[msg.queue_offset] = msg
                self._append_offset(msg.queue_offset)

    # -- lifecycle ---------------------------------------------------------------------------------
    def clear(self) -> None:
        self._msgs.clear()
        self._offsets.clear()
        self._consuming_orderly.clear()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0

    def mark_pulled(self) -> None:
        self.last_pull_ms = self._clock.monotonic_ms()

    def mark_locked(self, locked: bool = True) -> None:
        self.locked = locked
        if locked:
            self.last_lock_ms = self._clock.monotonic_ms()

    def is_lock_expired(self, lock_max_live_time_ms: int) -> bool:
        return self._clock.monotonic_ms() - self.last_lock_ms > lock_max_live_time_ms

    def is_pull_expired(self, pull_max_idle_time_ms: int) -> bool:
        return self._clock.monotonic_ms() - self.last_pull_ms > pull_max_idle_time_ms

    def __repr__(self) -> str:
        return (
            f"ProcessQueue(gen={self.generation}, count={self.msg_count}, size={self.msg_size}, "
            f"span={self.max_span}, dropped={self.dropped}, locked={self.locked})"
        )
