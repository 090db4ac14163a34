"""The response table (opaque -> pending request) and the permits bounding requests in flight.

Port of org.apache.rocketmq.remoting.netty.ResponseFuture, the `responseTable` / `scanResponseTable`
/ `failFast` parts of NettyRemotingAbstract, and its semaphoreAsync / semaphoreOneway
(SemaphoreReleaseOnlyOnce). Deviations: a pending request is an asyncio.Future; every request, sync
or async, fails exactly at its deadline (Java: sync waits on a latch with a timeout, async waits for
the next scan, up to a second late); when a connection goes, its requests fail at once instead of
waiting for their timeout.

Used only on the owner's loop (single-threaded): no locks.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rocketq.remoting.errors import RemotingError, RemotingTimeoutError
from rocketq.remoting.protocol.command import RemotingCommand

log = logging.getLogger("rocketq.remoting")

CANCELLED_REMEMBERED = 4096


@dataclass(slots=True, eq=False)  # compared and hashed by identity, as before
class ResponseFuture:
    """One request waiting for its response. A slotted dataclass so that the sync-request hot path builds
    it with rocketq.remoting.protocol.compiled.constructor (no Python __init__ with the accelerator)."""

    opaque: int
    conn: Any
    request: RemotingCommand
    future: asyncio.Future[RemotingCommand]
    deadline: float  # loop.time() seconds
    timeout_ms: int
    release: Callable[[], None] | None = None  # returns the async permit, exactly once

    def _release(self) -> None:
        release, self.release = self.release, None
        if release is not None:
            release()


class ResponseTable:
    """opaque -> ResponseFuture for the requests one endpoint has sent and not yet seen answered.

    Strategy for exact timeouts without a timer per request: requests are also grouped by their
    timeout (a handful of distinct values: 3 s sends, 30 s pulls, ...). Within a group, insertion
    order is deadline order (the loop clock is monotonic), so the group's first entry expires first.
    One loop timer is armed at the earliest group head; when it fires it fails the expired heads and
    re-arms. Adding or completing a request is two dict operations. `scan()` (run periodically, as
    Java's scanResponseTable) checks every entry, for the rare request inserted out of order (an
    async request whose connection had to be opened first).
    """

    __slots__ = ("_by_timeout", "_cancelled", "_loop", "_pending", "_timer", "_timer_at")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._pending: dict[int, ResponseFuture] = {}
        self._by_timeout: dict[int, dict[int, ResponseFuture]] = {}
        # Opaques of requests our own caller cancelled (a long poll at consumer shutdown): their late
        # answers are expected, not worth a warning. Oldest forgotten first; bounded.
        self._cancelled: dict[int, None] = {}
        self._loop = loop
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, opaque: int) -> bool:
        return opaque in self._pending

    def __iter__(self) -> Iterator[ResponseFuture]:
        return iter(list(self._pending.values()))

    def add(self, rf: ResponseFuture) -> None:
        if rf.opaque in self._pending:
            raise ValueError(f"opaque {rf.opaque} is already waiting for a response")
        self.insert(rf)

    def insert(self, rf: ResponseFuture) -> None:
        """add() for a caller that knows its opaque is not pending (the sync-request hot path)."""
        opaque = rf.opaque
        self._pending[opaque] = rf
        group = self._by_timeout.get(rf.timeout_ms)
        if group is None:
            group = self._by_timeout[rf.timeout_ms] = {}
        group[opaque] = rf
        if self._timer is None or rf.deadline < self._timer_at:
            self._arm(rf.deadline)

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = self._loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        now = self._loop.time()
        earliest: float | None = None
        for timeout_ms, group in list(self._by_timeout.items()):
            while group:
                head = next(iter(group.values()))
                if head.deadline > now:
                    if earliest is None or head.deadline < earliest:
                        earliest = head.deadline
                    break
                self.fail(head.opaque, timeout_error(head))
            if not group:
                del self._by_timeout[timeout_ms]
        if earliest is not None:
            self._arm(earliest)

    def _remove(self, opaque: int) -> ResponseFuture | None:
        rf = self._pending.pop(opaque, None)
        if rf is not None:
            del self._by_timeout[rf.timeout_ms][opaque]
            rf._release()
        return rf

    def complete(self, response: RemotingCommand) -> ResponseFuture | None:
        """Hand `response` to the request with its opaque; None (logged) when nobody waits for it."""
        opaque = response.opaque
        rf = self._pending.pop(opaque, None)  # _remove, inlined: this runs once per response
        if rf is None:
            if self._cancelled.pop(opaque, 0) is None:
                log.debug(
                    "response with opaque %s (code %s) to a request cancelled here", opaque, response.code
                )
            else:
                log.warning(
                    "response with opaque %s (code %s) matches no request; it timed out or was never sent",
                    response.opaque,
                    response.code,
                )
            return None
        del self._by_timeout[rf.timeout_ms][opaque]  # an emptied group is dropped by _on_timer
        if rf.release is not None:
            rf._release()
        try:  # done only if its caller cancelled it: no done() call per response
            rf.future.set_result(response)
        except asyncio.InvalidStateError:
            pass
        return rf

    def discard(self, opaque: int) -> None:
        """Forget a request whose caller gave up (cancelled); its answer, if it comes, is logged at DEBUG."""
        if self._remove(opaque) is not None:
            cancelled = self._cancelled
            cancelled[opaque] = None
            if len(cancelled) > CANCELLED_REMEMBERED:
                del cancelled[next(iter(cancelled))]

    def fail(self, opaque: int, exc: BaseException) -> bool:
        rf = self._remove(opaque)
        if rf is None:
            return False
        if not rf.future.done():
            rf.future.set_exception(exc)
        return True

    def scan(self, now: float | None = None) -> int:
        """Fail every request past its deadline with RemotingTimeoutError; returns how many."""
        if now is None:
            now = self._loop.time()
        expired = [rf for rf in self._pending.values() if rf.deadline <= now]
        for rf in expired:
            log.warning(
                "remove timed-out request (code %s, opaque %s) to %s", rf.request.code, rf.opaque, _addr(rf)
            )
            self.fail(rf.opaque, timeout_error(rf))
        return len(expired)

    def fail_connection(self, conn: Any, make_error: Callable[[ResponseFuture], RemotingError]) -> int:
        """Fail at once every request sent on `conn` (it closed); returns how many."""
        gone = [rf for rf in self._pending.values() if rf.conn is conn]
        for rf in gone:
            self.fail(rf.opaque, make_error(rf))
        return len(gone)

    def fail_all(self, make_error: Callable[[ResponseFuture], RemotingError]) -> int:
        gone = list(self._pending.values())
        for rf in gone:
            self.fail(rf.opaque, make_error(rf))
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        return len(gone)


def _addr(rf: ResponseFuture) -> str:
    return str(rf.conn.remote_addr)


def timeout_error(rf: ResponseFuture) -> RemotingTimeoutError:
    return RemotingTimeoutError(
        f"wait response on the channel <{_addr(rf)}> timeout, {rf.timeout_ms}(ms) "
        f"(request code {rf.request.code}, opaque {rf.opaque})"
    )


class Permits:
    """A counting semaphore with a non-blocking fast path and a bounded wait (owner loop only)."""

    __slots__ = ("_value", "_waiters", "limit", "name")

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        self._value = limit
        self._waiters: deque[asyncio.Future[bool]] = deque()

    @property
    def available(self) -> int:
        return self._value

    def try_acquire(self) -> bool:
        if self._value > 0 and not self._waiters:
            self._value -= 1
            return True
        return False

    async def acquire(self, timeout_s: float) -> bool:
        """True once a permit is held; False if none came within `timeout_s`."""
        if self.try_acquire():
            return True
        if timeout_s <= 0:
            return False
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(fut)
        handle = loop.call_later(timeout_s, _resolve, fut, False)
        try:
            return await fut
        except asyncio.CancelledError:
            # A permit handed over in the same iteration as the cancel must not leak.
            if fut.done() and not fut.cancelled() and fut.result():
                self.release()
            raise
        finally:
            handle.cancel()

    def release(self) -> None:
        waiters = self._waiters
        while waiters:
            fut = waiters.popleft()
            if not fut.done():
                fut.set_result(True)  # hand the permit over directly
                return
        if self._value < self.limit:
            self._value += 1


def _resolve(fut: asyncio.Future[bool], value: bool) -> None:
    if not fut.done():
        fut.set_result(value)
