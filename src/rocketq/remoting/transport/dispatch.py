"""Request dispatch: processors by request code, bounded executors, and the answers the transport gives.

Port of the request half of org.apache.rocketmq.remoting.netty.NettyRemotingAbstract
(processRequestCommand), NettyRequestProcessor (processRequest / rejectRequest) and the
`registerProcessor(code, processor, executor)` tables with their ThreadPoolExecutors.
Rules (protocol.md 1.8): unknown code -> REQUEST_CODE_NOT_SUPPORTED " request type <code> not
supported"; processor.reject_request() -> SYSTEM_BUSY "[REJECTREQUEST]..."; executor queue full ->
SYSTEM_BUSY "[OVERLOAD]..." (Java's remark for a rejected execution); a processor that raises ->
SYSTEM_ERROR with the exception's description; a typed-header error -> SYSTEM_ERROR naming the
field. A response carries the request's opaque and serialize type and our version (409).
Deviation: a oneway request is never answered, not even with REQUEST_CODE_NOT_SUPPORTED or
SYSTEM_BUSY (Java answers those two; its clients drop responses to oneway requests anyway).

An Executor is a bounded queue drained by up to N worker tasks on the owner's loop (processors are
coroutines, so N bounds how many may be suspended at once, e.g. waiting for a flush); blocking work
goes to its thread pool through `run_blocking`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import traceback
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

from rocketq.common.errors import IllegalStateError
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import CURRENT_VERSION, RPC_TYPE, RemotingCommand
from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError
from rocketq.remoting.transport.hooks import RPCHook, run_after, run_before

log = logging.getLogger("rocketq.remoting")

T = TypeVar("T")

REJECT_REQUEST_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"
OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"


class RequestProcessor(Protocol):
    """Handles the requests of the codes it is registered for.

    `process_request` returns the response, or None when there is none now (oneway, or answered later
    with `conn.send_response(cmd)`, as long polling does). An optional `reject_request() -> bool`
    returning True makes the transport answer SYSTEM_BUSY without running the processor.
    """

    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand | None: ...


class ProcessorEntry(NamedTuple):
    processor: RequestProcessor
    executor: Executor
    reject: Callable[[], bool] | None


class ProcessorRegistry:
    """code -> (processor, executor), one owner per code; a second registration raises."""

    __slots__ = ("_default", "_table")

    def __init__(self) -> None:
        self._table: dict[int, ProcessorEntry] = {}
        self._default: ProcessorEntry | None = None

    @staticmethod
    def _entry(processor: RequestProcessor, executor: Executor) -> ProcessorEntry:
        reject = getattr(processor, "reject_request", None)
        return ProcessorEntry(processor, executor, reject if callable(reject) else None)

    def register(self, code: int, processor: RequestProcessor, executor: Executor) -> None:
        code = int(code)
        old = self._table.get(code)
        if old is not None:
            raise IllegalStateError(
                f"request code {code} already has a processor ({type(old.processor).__name__}); "
                f"cannot register {type(processor).__name__} too"
            )
        self._table[code] = self._entry(processor, executor)

    def register_default(self, processor: RequestProcessor, executor: Executor) -> None:
        if self._default is not None:
            raise IllegalStateError(
                f"a default processor ({type(self._default.processor).__name__}) is already set"
            )
        self._default = self._entry(processor, executor)

    def lookup(self, code: int) -> ProcessorEntry | None:
        return self._table.get(code, self._default)

    def codes(self) -> list[int]:
        return sorted(self._table)

    def executors(self) -> list[Executor]:
        seen: dict[int, Executor] = {}
        entries = list(self._table.values()) + ([self._default] if self._default else [])
        for entry in entries:
            seen.setdefault(id(entry.executor), entry.executor)
        return list(seen.values())


Job = Callable[[], Awaitable[None]]


class Executor:
    """A bounded queue of jobs drained by up to `workers` tasks, plus a thread pool for blocking work.

    Workers start lazily on the loop of the first `submit` (the owner's loop) and park when the queue
    is empty; `submit` returns False instead of queueing past `capacity`.
    """

    def __init__(
        self, name: str, workers: int = 8, capacity: int = 10_000, blocking_threads: int = 0
    ) -> None:
        if workers < 1 or capacity < 1:
            raise ValueError("an executor needs at least one worker and a capacity of at least one")
        self.name = name
        self.workers = workers
        self.capacity = capacity
        self.blocking_threads = blocking_threads
        self.running = 0
        self.rejected = 0
        self._queue: deque[Job] = deque()
        self._idle: list[asyncio.Future[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False
        self._drained: asyncio.Event | None = None

    def __repr__(self) -> str:
        return (
            f"<Executor {self.name} workers={len(self._tasks)}/{self.workers} queued={len(self._queue)}"
            f"/{self.capacity} running={self.running}>"
        )

    @property
    def queued(self) -> int:
        return len(self._queue)

    def submit(self, job: Job) -> bool:
        """Queue `job`; False when the queue is full or the executor is shut down."""
        queue = self._queue
        if self._closed or len(queue) >= self.capacity:
            self.rejected += 1
            return False
        queue.append(job)
        idle = self._idle
        if idle:
            waiter = idle.pop()
            if not waiter.done():
                waiter.set_result(None)
        elif len(self._tasks) < self.workers:
            task = asyncio.get_running_loop().create_task(
                self._work(), name=f"{self.name}-worker-{len(self._tasks)}"
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return True

    async def _work(self) -> None:
        queue = self._queue
        loop = asyncio.get_running_loop()
        while True:
            while queue:
                job = queue.popleft()
                self.running += 1
                try:
                    await job()
                except asyncio.CancelledError:
                    raise
                except Exception:  # a job handles its own errors; this is a bug in it
                    log.exception("executor %s: job crashed", self.name)
                finally:
                    self.running -= 1
            if self._drained is not None and self.running == 0:
                self._drained.set()
            waiter = loop.create_future()
            self._idle.append(waiter)
            await waiter

    async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking call (fsync, file I/O) on this executor's thread pool."""
        if self._pool is None:
            threads = self.blocking_threads or min(32, max(self.workers, os.cpu_count() or 1))
            self._pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix=self.name)
        return await asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(fn, *args))

    def is_idle(self) -> bool:
        return not self._queue and self.running == 0

    async def shutdown(self, timeout_s: float = 5.0) -> None:
        """Refuse new jobs, let queued and running ones finish within `timeout_s`, cancel the rest."""
        self._closed = True
        if self._tasks and not self.is_idle():
            self._drained = asyncio.Event()
            try:
                await asyncio.wait_for(self._drained.wait(), timeout_s)
            except TimeoutError:
                log.warning(
                    "executor %s: %d jobs still queued or running at shutdown", self.name, len(self._queue)
                )
        self._queue.clear()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def exception_description(exc: BaseException) -> str:
    """Java's RemotingHelper.exceptionSimpleDesc: the exception and where it was raised."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += f", {last.name}({os.path.basename(last.filename)}:{last.lineno})"
    return text


class Dispatcher:
    """Turns decoded requests into processor runs and responses (owner loop)."""

    __slots__ = ("hooks", "registry", "version")

    def __init__(
        self, registry: ProcessorRegistry, hooks: Sequence[RPCHook], version: int = CURRENT_VERSION
    ) -> None:
        self.registry = registry
        self.hooks = hooks
        self.version = version

    def dispatch(self, conn: Any, cmd: RemotingCommand) -> None:
        entry = self.registry.lookup(cmd.code)
        if entry is None:
            remark = f" request type {cmd.code} not supported"
            log.warning("%s:%s", conn.remote_addr, remark)
            self._answer_now(conn, cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark)
            return
        if entry.reject is not None and entry.reject():
            self._answer_now(conn, cmd, ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
            return
        if not entry.executor.submit(functools.partial(self._run, entry, conn, cmd)):
            if entry.executor.rejected % 10_000 == 1:  # Java samples this warning too
                log.warning(
                    "%s: too many requests and executor %s busy, request code %s",
                    conn.remote_addr,
                    entry.executor.name,
                    cmd.code,
                )
            self._answer_now(conn, cmd, ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)

    def _answer_now(self, conn: Any, cmd: RemotingCommand, code: int, remark: str) -> None:
        if not cmd.is_oneway:
            response = cmd.make_response(code, remark)
            response.version = self.version
            conn.send_response(response)

    async def _run(self, entry: ProcessorEntry, conn: Any, cmd: RemotingCommand) -> None:
        hooks = self.hooks
        try:
            if hooks:
                run_before(hooks, conn.remote_addr, cmd)
            response = await entry.processor.process_request(conn, cmd)
            if hooks:
                run_after(hooks, conn.remote_addr, cmd, response)
        except asyncio.CancelledError:
            raise
        except (MissingHeaderFieldError, BadHeaderValueError) as exc:
            log.warning("%s: bad request header (code %s): %s", conn.remote_addr, cmd.code, exc)
            response = cmd.make_response(ResponseCode.SYSTEM_ERROR, str(exc))
        except Exception as exc:
            log.exception("%s: processing request code %s failed", conn.remote_addr, cmd.code)
            response = cmd.make_response(ResponseCode.SYSTEM_ERROR, exception_description(exc))
        if response is None or cmd.flag & 2:  # no answer now, or a oneway request
            return
        response.opaque = cmd.opaque
        response.flag |= RPC_TYPE
        response.serialize_type = cmd.serialize_type
        response.version = self.version
        conn.send_response(response)
