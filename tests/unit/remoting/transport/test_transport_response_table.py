"""ResponseTable (opaque -> pending request, exact timeouts, fail fast) and Permits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from transport_doubles import FakeTimerLoop

from rocketq.remoting.errors import RemotingConnectError, RemotingTimeoutError
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport.response_table import Permits, ResponseFuture, ResponseTable


class _Conn:
    def __init__(self, addr: str) -> None:
        self.remote_addr = addr


def _pending(
    loop: FakeTimerLoop, opaque: int, timeout_ms: int, conn: Any = None, release: Any = None
) -> ResponseFuture:
    fut = asyncio.get_running_loop().create_future()
    request = RemotingCommand(code=10, opaque=opaque)
    return ResponseFuture(
        opaque,
        conn or _Conn("1.2.3.4:10911"),
        request,
        fut,
        loop.now + timeout_ms / 1000,
        timeout_ms,
        release,
    )


async def test_complete_hands_the_response_to_its_request() -> None:
    clock = FakeTimerLoop()
    table = ResponseTable(clock)  # type: ignore[arg-type]
    released: list[int] = []
    a = _pending(clock, 1, 3000, release=lambda: released.append(1))
    b = _pending(clock, 2, 3000)
    table.add(a)
    table.add(b)
    assert len(table) == 2 and 1 in table
    response = RemotingCommand(code=0, opaque=2, flag=1)
    assert table.complete(response) is b
    assert b.future.result() is response
    assert not a.future.done() and len(table) == 1
    assert table.complete(RemotingCommand(code=0, opaque=1, flag=1)) is a
    assert table.complete(RemotingCommand(code=0, opaque=1, flag=1)) is None  # late duplicate: dropped
    assert released == [1]  # the permit came back exactly once


async def test_duplicate_opaque_is_refused() -> None:
    clock = FakeTimerLoop()
    table = ResponseTable(clock)  # type: ignore[arg-type]
    table.add(_pending(clock, 5, 3000))
    with pytest.raises(ValueError, match="opaque 5"):
        table.add(_pending(clock, 5, 3000))


async def test_each_request_fails_exactly_at_its_deadline() -> None:
    clock = FakeTimerLoop()
    table = ResponseTable(clock)  # type: ignore[arg-type]
    slow = _pending(clock, 1, 30_000)
    fast = _pending(clock, 2, 1000)
    table.add(slow)
    table.add(fast)
    clock.advance(0.999)
    assert not fast.future.done()
    clock.advance(0.002)
    with pytest.raises(RemotingTimeoutError, match=r"timeout, 1000\(ms\).*opaque 2"):
        fast.future.result()
    assert not slow.future.done()
    clock.advance(29.0)
    assert slow.future.done() and isinstance(slow.future.exception(), RemotingTimeoutError)
    assert len(table) == 0


async def test_completed_heads_do_not_hide_later_deadlines() -> None:
    clock = FakeTimerLoop()
    table = ResponseTable(clock)  # type: ignore[arg-type]
    first = _pending(clock, 1, 1000)
    table.add(first)
    clock.advance(0.5)
    second = _pending(clock, 2, 1000)
    table.add(second)
    table.complete(RemotingCommand(code=0, opaque=1, flag=1))
    clock.advance(0.6)  # first's deadline passed (nothing to fail), second's not yet
    assert not second.future.done()
    clock.advance(0.5)
    assert isinstance(second.future.exception(), RemotingTimeoutError)


async def test_scan_fails_whatever_is_past_its_deadline() -> None:
    clock = FakeTimerLoop()
    table = ResponseTable(clock)  # type: ignore[arg-type]
    a = _pending(clock, 1, 1000)
    b = _pending(clock, 2, 5000)
    table.add(a)
    table.add(b)
    assert table.scan(clock.now + 2) == 1
    assert isinstance(a.future.exception(), RemotingTimeoutError) and not b.future.done()


async def test_fail_connection_fails_only_that_connections_requests() -> None:
    clock = FakeTimerLoop()
    table = ResponseTable(clock)  # type: ignore[arg-type]
    lost, kept = _Conn("a:1"), _Conn("b:2")
    on_lost = [_pending(clock, i, 3000, conn=lost) for i in (1, 2, 3)]
    on_kept = _pending(clock, 4, 3000, conn=kept)
    for rf in [*on_lost, on_kept]:
        table.add(rf)
    assert table.fail_connection(lost, lambda rf: RemotingConnectError(f"closed {rf.opaque}")) == 3
    for rf in on_lost:
        with pytest.raises(RemotingConnectError, match=f"closed {rf.opaque}"):
            rf.future.result()
    assert not on_kept.future.done() and len(table) == 1
    assert table.fail_all(lambda rf: RemotingConnectError("shutdown")) == 1
    assert isinstance(on_kept.future.exception(), RemotingConnectError)


async def test_discard_forgets_a_cancelled_caller() -> None:
    clock = FakeTimerLoop()
    table = ResponseTable(clock)  # type: ignore[arg-type]
    released: list[int] = []
    rf = _pending(clock, 9, 3000, release=lambda: released.append(9))
    table.add(rf)
    table.discard(9)
    assert len(table) == 0 and released == [9]
    clock.advance(10)  # its timer finds nothing to fail
    assert not rf.future.done()


async def test_permits_fast_path_and_exhaustion() -> None:
    permits = Permits("oneway", 2)
    assert permits.try_acquire() and permits.try_acquire()
    assert not permits.try_acquire()
    assert await permits.acquire(0) is False
    permits.release()
    assert permits.available == 1
    permits.release()
    permits.release()  # never above the limit
    assert permits.available == 2


async def test_permits_release_hands_over_to_a_waiter() -> None:
    permits = Permits("async", 1)
    assert permits.try_acquire()
    waiter = asyncio.ensure_future(permits.acquire(30))
    await asyncio.sleep(0)
    assert not waiter.done()
    assert not permits.try_acquire()  # a waiter is queued: no overtaking
    permits.release()
    assert await waiter is True
    assert permits.available == 0


async def test_permits_cancelled_waiter_leaks_nothing() -> None:
    permits = Permits("async", 1)
    assert permits.try_acquire()
    waiter = asyncio.ensure_future(permits.acquire(30))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    permits.release()
    assert permits.available == 1


async def test_a_late_answer_to_a_request_cancelled_here_is_not_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeTimerLoop()
    table = ResponseTable(clock)  # type: ignore[arg-type]
    table.add(_pending(clock, 7, 30_000))
    table.discard(7)  # the caller (a long poll at consumer shutdown) was cancelled
    with caplog.at_level("DEBUG", logger="rocketq.remoting"):
        assert table.complete(RemotingCommand(code=0, opaque=7, flag=1)) is None
        assert (
            table.complete(RemotingCommand(code=0, opaque=8, flag=1)) is None
        )  # never sent: still a warning
    levels = {r.getMessage().split()[3]: r.levelname for r in caplog.records}
    assert levels == {"7": "DEBUG", "8": "WARNING"}
    for opaque in range(100, 100 + 5000):  # the memory of cancelled requests stays bounded
        table.add(_pending(clock, opaque, 30_000))
        table.discard(opaque)
    assert len(table._cancelled) <= 4096
