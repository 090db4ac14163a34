"""InflightTable: the messages handed out by POP and not settled yet, and when each pop times out.

Our in-memory form of RocketMQ 5's PopBufferMergeService + PopReviveService bookkeeping (pure: no I/O,
time passed in). Each live checkpoint keeps two bit maps over its messages: `acked` (an ACK arrived, or
CHANGE_INVISIBLETIME moved the message to a new checkpoint) and `revived` (put back for a retry after the
time ran out). A receipt handle is valid while its checkpoint is live, its time has not run out and its
message is neither acked nor revived; anything else is stale and changes nothing. A checkpoint leaves the
table when every message is acked or once it has been revived.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from rocketq.broker.pop.checkpoint import CkKey, PopCheckPoint


class StaleHandle(Exception):
    """The receipt handle no longer names a message in flight (the remark says why)."""


@dataclass(slots=True)
class CkState:
    ck: PopCheckPoint
    acked: int = 0
    revived: int = 0
    settled: bool = field(default=False)  # left the table

    def is_acked(self, index: int) -> bool:
        return bool(self.acked >> index & 1)

    @property
    def all_acked(self) -> bool:
        return self.acked == (1 << self.ck.num) - 1

    def unsettled_indexes(self) -> list[int]:
        done = self.acked | self.revived
        return [i for i in range(self.ck.num) if not done >> i & 1]


class InflightTable:
    def __init__(self) -> None:
        self._cks: dict[CkKey, CkState] = {}
        self._deadlines: list[tuple[int, int, CkKey]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._cks)

    def __contains__(self, key: CkKey) -> bool:
        return key in self._cks

    def add(self, ck: PopCheckPoint, acked: int = 0) -> CkState:
        state = CkState(ck, acked)
        self._cks[ck.key] = state
        self._seq += 1
        heapq.heappush(self._deadlines, (ck.revive_time, self._seq, ck.key))
        return state

    def get(self, key: CkKey) -> CkState | None:
        return self._cks.get(key)

    def unique_pop_time(self, group: str, topic: str, queue_id: int, start_offset: int, pop_time: int) -> int:
        """`pop_time`, or the next free millisecond when a checkpoint with that key exists already."""
        while CkKey(group, topic, queue_id, start_offset, pop_time) in self._cks:
            pop_time += 1
        return pop_time

    def check(self, key: CkKey, queue_offset: int, now_ms: int) -> tuple[CkState, int]:
        """The live checkpoint and message index a receipt handle names; StaleHandle otherwise."""
        state = self._cks.get(key)
        if state is None:
            raise StaleHandle(
                "no message is in flight under this receipt handle (acked, changed, retried or unknown)"
            )
        if now_ms >= state.ck.revive_time:
            raise StaleHandle(f"the invisible time of this receipt handle ran out at {state.ck.revive_time}")
        index = state.ck.index_of(queue_offset)
        if index is None:
            raise StaleHandle(f"offset {queue_offset} was not popped under this receipt handle")
        if state.is_acked(index) or state.revived >> index & 1:
            raise StaleHandle(f"the message at offset {queue_offset} was acked already")
        return state, index

    def mark_acked(self, state: CkState, index: int) -> bool:
        """Set the message's ack bit; True when that settled the whole checkpoint (it leaves the table)."""
        state.acked |= 1 << index
        if state.all_acked:
            self._settle(state)
            return True
        return False

    def unmark_acked(self, state: CkState, index: int) -> None:
        """Undo mark_acked (its durable record could not be written)."""
        state.acked &= ~(1 << index)
        if state.settled:
            state.settled = False
            self._cks[state.ck.key] = state

    def remove(self, key: CkKey) -> None:
        state = self._cks.get(key)
        if state is not None:
            self._settle(state)

    def _settle(self, state: CkState) -> None:
        state.settled = True
        self._cks.pop(state.ck.key, None)

    def due(self, now_ms: int) -> list[CkState]:
        """Live checkpoints whose time ran out, oldest deadline first (they stay until `remove`)."""
        out: list[CkState] = []
        seen: set[CkKey] = set()
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, _, key = heapq.heappop(self._deadlines)
            state = self._cks.get(key)
            if state is not None and state.ck.revive_time <= now_ms and key not in seen:
                seen.add(key)
                out.append(state)
        return out

    def requeue(self, state: CkState, at_ms: int) -> None:
        """Look at a due checkpoint again at `at_ms` (its revival failed part-way)."""
        self._seq += 1
        heapq.heappush(self._deadlines, (at_ms, self._seq, state.ck.key))

    def next_deadline(self) -> int | None:
        while self._deadlines and self._deadlines[0][2] not in self._cks:
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None

    def min_revive_offset(self) -> int | None:
        """The oldest revive-log offset a live checkpoint was written at (replay starts there)."""
        offsets = [s.ck.revive_offset for s in self._cks.values() if s.ck.revive_offset >= 0]
        return min(offsets) if offsets else None

    def count_in_flight(self, group: str | None = None) -> int:
        total = 0
        for state in self._cks.values():
            if group is None or state.ck.cid == group:
                total += len(state.unsettled_indexes())
        return total
