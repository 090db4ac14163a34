"""One lifecycle base and one way to run background work (RocketMQ's ServiceThread, in asyncio).

Strategy: every background task is started by `spawn(name, coro)`, which names the task and logs a
crash, so no task dies silently. A `PeriodicService` runs `run_once()` every `interval_s`, can be
woken early (`wakeup()`, as RebalanceService is by NOTIFY_CONSUMER_IDS_CHANGED), and survives a
failing round (logged, next round runs). Stop order is the reverse of start order; `stop()` is
bounded and idempotent.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar

log = logging.getLogger("rocketq.service")

T = TypeVar("T")
S = TypeVar("S")

# Strong references: asyncio keeps only weak ones to running tasks.
_BACKGROUND: set[asyncio.Task[Any]] = set()


def _log_crash(task: asyncio.Task[Any]) -> None:
    _BACKGROUND.discard(task)
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        log.error("task %s crashed: %r", task.get_name(), exc, exc_info=exc)


async def wait_event(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait until `event` is set or `timeout_s` passes; True when it was set.

    Why not `asyncio.wait_for(event.wait(), timeout)`: on Python 3.11 wait_for loses a cancellation
    that arrives in the same loop turn as the event (it returns the result instead of raising), so a
    background loop stopped by `task.cancel()` just after a wake-up would run on, and its `stop()`
    would wait for it forever. `asyncio.timeout` has no inner task and never drops a cancellation.
    """
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return event.is_set()
    return True


def spawn(name: str, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """Start `coro` as a named task whose crash is logged (and which is not garbage collected)."""
    task = asyncio.get_running_loop().create_task(coro, name=name)
    _BACKGROUND.add(task)
    task.add_done_callback(_log_crash)
    return task


async def start_all(services: Iterable[Service]) -> None:
    """Start `services` in order (stop them with stop_all, which goes the other way)."""
    for service in services:
        await service.start()


async def stop_all(services: Sequence[Service]) -> None:
    """Stop `services` in the reverse of their start order."""
    for service in reversed(services):
        await service.stop()


# The start() or shutdown() in flight of each object (see lifecycle_step).
_LIFECYCLE_BUSY: weakref.WeakKeyDictionary[Any, asyncio.Future[None]] = weakref.WeakKeyDictionary()


def lifecycle_step(method: Callable[[S], Awaitable[None]]) -> Callable[[S], Coroutine[Any, Any, None]]:
    """Decorates a client's start() and shutdown(): one of them runs at a time per object.

    Java declares DefaultMQPushConsumerImpl's and DefaultLitePullConsumerImpl's start and shutdown
    `synchronized`. Without it two coroutines starting one object at once (two first uses of a lazily
    started Admin, say) both get past the state check and each acquires a client instance: one is
    counted twice or leaked. Here the second waits for the first and then finds it RUNNING, and a
    shutdown() waits for a start in flight and then undoes it. Not an asyncio.Lock: a lock binds to the
    first loop it waits on, and an Admin may be reused across event loops (asyncio.run per command);
    this keeps only the future of the object's step in flight (in _LIFECYCLE_BUSY).
    """

    @functools.wraps(method)
    async def one_at_a_time(self: S) -> None:
        while (busy := _LIFECYCLE_BUSY.get(self)) is not None:
            await asyncio.wait([busy])  # not `await busy`: a cancelled waiter must not cancel it
        done = _LIFECYCLE_BUSY[self] = asyncio.get_running_loop().create_future()
        try:
            await method(self)
        finally:
            del _LIFECYCLE_BUSY[self]
            done.set_result(None)

    return one_at_a_time


class ServiceState(enum.StrEnum):
    """The one lifecycle of every long-lived object: services, the store, clients, consumers, producers.

    Java's org.apache.rocketmq.common.ServiceState names (CREATE_JUST, RUNNING, SHUTDOWN_ALREADY,
    START_FAILED) plus the two steps Java has no name for. A StrEnum, so a state logs and compares as
    its name.
    """

    CREATE_JUST = "CREATE_JUST"
    # Loaded and usable without background work: the store after open() (tools and tests drive it).
    OPEN = "OPEN"
    RUNNING = "RUNNING"
    # shutdown() has begun and not finished: no new work is taken, work in progress drains.
    STOPPING = "STOPPING"
    SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"
    START_FAILED = "START_FAILED"


class Service:
    """A start/stop lifecycle with state checks; subclasses override `_on_start` / `_on_stop`."""

    name: str = "service"

    def __init__(self) -> None:
        self.state = ServiceState.CREATE_JUST

    async def start(self) -> None:
        if self.state is ServiceState.RUNNING:
            return
        if self.state is not ServiceState.CREATE_JUST:
            raise RuntimeError(f"{self.name} cannot start from state {self.state.value}")
        try:
            await self._on_start()
        except BaseException:
            self.state = ServiceState.START_FAILED
            raise
        self.state = ServiceState.RUNNING

    async def stop(self) -> None:
        if self.state is ServiceState.STOPPING:
            return  # another stop() is under way
        if self.state is not ServiceState.RUNNING:
            self.state = ServiceState.SHUTDOWN_ALREADY
            return
        self.state = ServiceState.STOPPING
        try:
            await self._on_stop()
        finally:
            self.state = ServiceState.SHUTDOWN_ALREADY

    @property
    def running(self) -> bool:
        return self.state is ServiceState.RUNNING

    async def _on_start(self) -> None:
        return None

    async def _on_stop(self) -> None:
        return None


class PeriodicService(Service):
    """Runs `run_once` every `interval_s` seconds until stopped; `wakeup()` runs it early.

    With `initial_delay_s` the first round waits that long (the broker's first periodic registration
    comes 10 s after start, for example); otherwise the first round runs at once. A round that
    returns a number of seconds sets the wait before the next one instead (a delivery loop that
    knows when its next message is due); a round that raises is logged and the next one follows
    after `failure_pause_s` (default: the interval). The failure is logged with its traceback at ERROR;
    a loop whose failures are expected (a dashboard sampling a cluster that is down) passes a lower
    `failure_log_level` and gets one line without the traceback. A wake-up that arrives during a round makes the
    next one start at once.
    """

    def __init__(
        self,
        name: str,
        interval_s: float,
        run_once: Callable[[], Awaitable[float | None]],
        initial_delay_s: float = 0.0,
        failure_pause_s: float | None = None,
        failure_log_level: int = logging.ERROR,
    ) -> None:
        super().__init__()
        self.name = name
        self.interval_s = interval_s
        self._run_once = run_once
        self._initial_delay_s = initial_delay_s
        self._failure_pause_s = failure_pause_s
        self._failure_log_level = failure_log_level
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def wakeup(self) -> None:
        self._wake.set()

    async def _on_start(self) -> None:
        self._task = spawn(self.name, self._loop())

    async def _on_stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _wait(self, seconds: float) -> None:
        if seconds > 0:
            await wait_event(self._wake, seconds)

    async def _loop(self) -> None:
        await self._wait(self._initial_delay_s)
        while True:
            self._wake.clear()
            try:
                wait_s = await self._run_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                wait_s = self.interval_s if self._failure_pause_s is None else self._failure_pause_s
                if self._failure_log_level >= logging.ERROR:
                    log.exception("%s: periodic run failed; next run in %.1fs", self.name, wait_s)
                else:
                    log.log(
                        self._failure_log_level,
                        "%s: periodic run failed: %s; next run in %.1fs",
                        self.name,
                        exc,
                        wait_s,
                    )
            await self._wait(self.interval_s if wait_s is None else wait_s)
