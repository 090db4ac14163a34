"""Request dispatch: processors by request code, bounded executors, and the answers the transport gives.

Port of the request half of org.apache.rocketmq.remoting.netty.NettyRemotingAbstract
(processRequestCommand), NettyRequestProcessor (processRequest / rejectRequest) and the
`registerProcessor(code, processor, executor)` tables with their ThreadPoolExecutors.
Rules (docs/protocol.md 1.8): unknown code -> REQUEST_CODE_NOT_SUPPORTED " request type <code> not
supported"; processor.reject_request() -> SYSTEM_BUSY "[REJECTREQUEST]..."; executor queue full ->
SYSTEM_BUSY "[OVERLOAD]..." (Java's remark for a rejected execution); a processor that raises ->
SYSTEM_ERROR with the exception's description; a typed-header error -> SYSTEM_ERROR naming the
field. A response carries the request's opaque and serialize type and our version (409).
Deviation: a oneway request is never answered, not even with REQUEST_CODE_NOT_SUPPORTED or
SYSTEM_BUSY (Java answers those two; its clients drop responses to oneway requests anyway).
RPC hooks: the before-hooks run when the request is dispatched, before it is queued (Java runs them
in the executor), so a request a hook refuses (RequestRefused: ACL's NO_PERMISSION) never takes a
queue slot; the after-hooks run just before the answer is written.
Request timing (rocketmq_rpc_latency, org.apache.rocketmq.remoting.metrics.RemotingMetricsManager):
with a RequestTimer set, dispatch() reads the clock once and the answer's path hands the start time
to the timer when the processor's answer is written, so the time includes the wait in the queue, as
Java's processTimer does. A request answered without its processor (code not supported, SYSTEM_BUSY,
TIMEOUT_CLEAN_QUEUE, a hook's refusal) is timed too, as 5.x's NettyRemotingAbstract.writeResponse
records every answer it writes. Timing adds no coroutine or task per request (a wrapping processor did,
and cost more than the counting itself).

An Executor bounds how many processor coroutines are in progress at once (`workers`) and how many
may wait (`capacity`), on the owner's loop; blocking work goes to its thread pool (`run_blocking`).
With `max_wait_ms`, a request that waited that long in the queue is answered SYSTEM_BUSY
"[TIMEOUT_CLEAN_QUEUE]..." at once instead of running late (org.apache.rocketmq.broker.latency.
BrokerFastFailure.cleanExpiredRequestInQueue): a client then retries elsewhere instead of timing out.

Runs (no Java counterpart: Java hands each request to its thread pool): consecutive requests of one read
whose processor takes them together (`process_requests`, for the codes in its `batch_codes`) are
handed to it as one list, so work per request that can be shared is done once (the broker's sends: one
store call and one flush wait for the run). Everything else stays per request: admission, rejection,
before-hooks, the answer of each (its own code and remark, one bad request never failing its
neighbours), timing and after-hooks. A run is one executor job (one worker slot); when no slot is free
its requests are queued one by one as single requests, so SYSTEM_BUSY and the fast failure are
unchanged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import time
import traceback
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from types import CoroutineType
from typing import Any, NamedTuple, Protocol, TypeVar, cast

from rocketq.common.errors import IllegalStateError
from rocketq.common.service import ServiceState
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import CURRENT_VERSION, RPC_TYPE, RemotingCommand
from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError
from rocketq.remoting.transport.codec_negotiation import OFFER_FIELD, answer_offer
from rocketq.remoting.transport.eager_step import continue_in_task, resume
from rocketq.remoting.transport.hooks import RequestRefused, RPCHook, run_after, run_before, run_before_each

log = logging.getLogger("rocketq.remoting")
_RUNNING = ServiceState.RUNNING  # read on every request: a module constant, not an enum attribute

_clock_ns = time.perf_counter_ns

T = TypeVar("T")

_CoroutineType = CoroutineType

REJECT_REQUEST_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"
OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"
# BrokerFastFailure's remark for a request that waited too long in its queue (waited ms, queue size).
TIMEOUT_CLEAN_QUEUE_REMARK = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: %sms, size of queue: %d"


class RequestProcessor(Protocol):
    """Handles the requests of the codes it is registered for.

    `process_request` returns the response, or None when there is none now (oneway, or answered later
    with `conn.send_response(cmd)`, as long polling does). An optional `reject_request() -> bool`
    returning True makes the transport answer SYSTEM_BUSY without running the processor.
    """

    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand | None: ...


class BatchRequestProcessor(RequestProcessor, Protocol):
    """A processor that also takes consecutive requests of one read together (see the module docstring).

    `process_requests` gets two or more requests, each of a code in `batch_codes`, and returns one answer
    per request, in order (None: no answer now, as `process_request`); it answers a request it refuses
    itself, so that it raises only for a bug, which fails every request of the run with SYSTEM_ERROR.
    """

    batch_codes: frozenset[int]

    async def process_requests(
        self, conn: Any, requests: list[RemotingCommand]
    ) -> list[RemotingCommand | None]: ...


class RequestTimer(Protocol):
    """Records how long a request took to answer (rocketq.remoting.metrics.RpcLatency).

    `key` is (request code, response code, result) with result "success" or "oneway", as
    RemotingMetricsManager labels them; `started_ns` is perf_counter_ns()
    at dispatch. Called on the owner loop for every processor run, so it must be cheap and not block.
    """

    def record(self, key: tuple[int, int, str], started_ns: int) -> None: ...

    def record_many(self, key: tuple[int, int, str], started_ns: int, count: int) -> None:
        """`count` requests of one run with the same key, answered together (one elapsed time)."""
        ...


RunFn = Callable[[Any, list[RemotingCommand]], Coroutine[Any, Any, list[RemotingCommand | None]]]


class ProcessorEntry(NamedTuple):
    processor: RequestProcessor
    executor: Executor
    reject: Callable[[], bool] | None
    run: RunFn | None  # process_requests of a BatchRequestProcessor, for its batch_codes only


class ProcessorRegistry:
    """code -> (processor, executor), one owner per code; a second registration raises."""

    __slots__ = ("_default", "_table", "batchable")

    def __init__(self) -> None:
        self._table: dict[int, ProcessorEntry] = {}
        self._default: ProcessorEntry | None = None
        # The codes whose requests may be taken together, with their entry (entry.run is set).
        self.batchable: dict[int, ProcessorEntry] = {}

    @staticmethod
    def _entry(processor: RequestProcessor, executor: Executor, run: bool = False) -> ProcessorEntry:
        reject = getattr(processor, "reject_request", None)
        process_requests = cast(BatchRequestProcessor, processor).process_requests if run else None
        return ProcessorEntry(processor, executor, reject if callable(reject) else None, process_requests)

    def register(self, code: int, processor: RequestProcessor, executor: Executor) -> None:
        code = int(code)
        old = self._table.get(code)
        if old is not None:
            raise IllegalStateError(
                f"request code {code} already has a processor ({type(old.processor).__name__}); "
                f"cannot register {type(processor).__name__} too"
            )
        runs = code in getattr(processor, "batch_codes", ())  # a BatchRequestProcessor's codes
        entry = self._entry(processor, executor, runs)
        if runs:  # one entry per (processor, executor): a run holds the requests of one entry
            for other in self.batchable.values():
                if other.processor is processor and other.executor is executor:
                    entry = other
            self.batchable[code] = entry
        self._table[code] = entry

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


JobFn = Callable[..., Coroutine[Any, Any, None]]
# Called for a queued job dropped after waiting too long: (its args, ms it waited, jobs still queued).
ExpiredHandler = Callable[[tuple[Any, ...], int, int], None]


class Executor:
    """Runs jobs (processor coroutines) with at most `workers` in progress and `capacity` waiting.

    Java's executor is a thread pool with a bounded queue; here a job is a coroutine on the owner's
    loop. Strategy (what makes the hot path cheap): a job submitted while fewer than `workers` jobs are
    in progress starts at once, inside `submit` (an "eager" start: no task, no extra loop iteration;
    rocketq.remoting.transport.eager_step); most processors finish without suspending and never
    become a task. A job that suspends (waits for
    a flush, a lock, a timer) continues in a task and keeps its slot until it ends. Past `workers`,
    jobs wait in the queue and start as slots free up; past `capacity`, `submit` returns False and the
    caller answers SYSTEM_BUSY. Blocking calls go to this executor's thread pool (`run_blocking`).

    Fast failure (`max_wait_ms` > 0): a queued job carries the time it was queued; the head of the
    queue is checked when a job is dequeued and by one timer that runs only while the queue is not
    empty (armed for the head's deadline), so the hot path (a job that starts at once) pays nothing
    and a stalled executor still sheds its queue on time. A dropped job goes to `on_expired`.
    """

    def __init__(
        self,
        name: str,
        workers: int = 8,
        capacity: int = 10_000,
        blocking_threads: int = 0,
        max_wait_ms: float = 0,
    ) -> None:
        if workers < 1 or capacity < 1:
            raise ValueError("an executor needs at least one worker and a capacity of at least one")
        self.name = name
        self.workers = workers
        self.capacity = capacity
        self.blocking_threads = blocking_threads
        self.running = 0
        self.rejected = 0
        self.expired = 0
        self.max_wait_ms = max_wait_ms
        self.on_expired: ExpiredHandler | None = None
        self._expiry_timer: asyncio.TimerHandle | None = None
        self._queue: deque[tuple[JobFn, tuple[Any, ...], float]] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self.state = ServiceState.RUNNING  # it takes jobs from creation; shutdown() ends that
        self._drained: asyncio.Event | None = None

    def __repr__(self) -> str:
        return (
            f"<Executor {self.name} running={self.running}/{self.workers} queued={len(self._queue)}"
            f"/{self.capacity}>"
        )

    @property
    def queued(self) -> int:
        return len(self._queue)

    def take_slot(self) -> bool:
        """Take a worker slot for a job its caller starts in place, if one is free and none waits.

        The caller then runs the job and gives the slot back (`running -= 1`) when it ends, or hands
        a suspended job to `_continue`, whose task gives it back.
        """
        if self.running < self.workers and not self._queue and self.state is _RUNNING:
            self.running += 1
            return True
        return False

    def submit(self, fn: JobFn, *args: Any) -> bool:
        """Start or queue the job `fn(*args)` (a coroutine function); False when full or shut down."""
        if self.running < self.workers and not self._queue and self.state is _RUNNING:
            self._start(fn, args)
            return True
        if self.state is not _RUNNING or len(self._queue) >= self.capacity:
            self.rejected += 1
            return False
        self._queue.append((fn, args, time.monotonic()))
        if self.max_wait_ms > 0 and self._expiry_timer is None:
            self._arm_expiry()
        return True

    # -- fast failure ----------------------------------------------------------------------------
    def _arm_expiry(self) -> None:
        """Arm the one timer for the deadline of the job at the head of the queue."""
        delay = self._queue[0][2] + self.max_wait_ms / 1000 - time.monotonic()
        self._expiry_timer = asyncio.get_running_loop().call_later(max(delay, 0.0), self._expire_on_timer)

    def _expire_on_timer(self) -> None:
        self._expiry_timer = None
        self.expire_waiting()
        if self._queue and self.max_wait_ms > 0:
            self._arm_expiry()

    def expire_waiting(self) -> int:
        """Drop the queued jobs that waited `max_wait_ms` or longer (oldest first); how many were dropped."""
        queue = self._queue
        limit = self.max_wait_ms / 1000
        if not queue or limit <= 0:
            return 0
        now = time.monotonic()
        dropped = 0
        while queue and now - queue[0][2] >= limit:
            _fn, args, queued_at = queue.popleft()
            dropped += 1
            self.expired += 1
            handler = self.on_expired
            if handler is not None:
                try:
                    handler(args, int((now - queued_at) * 1000), len(queue))
                except Exception:
                    log.exception("executor %s: answering an expired request failed", self.name)
        if dropped and self.expired == dropped:  # the first time only; the answers say the rest
            log.warning(
                "executor %s: requests waited %dms or more in its queue; answering them SYSTEM_BUSY "
                "(fast failure)",
                self.name,
                self.max_wait_ms,
            )
        return dropped

    def _start(self, fn: JobFn, args: tuple[Any, ...]) -> None:
        self.running += 1
        coro = fn(*args)
        try:
            awaiting = coro.send(None)
        except StopIteration:
            self.running -= 1
            return
        except BaseException:  # a job handles its own errors; this is a bug in it
            self.running -= 1
            log.exception("executor %s: job crashed", self.name)
            return
        self._continue(resume(coro, awaiting), awaiting)

    def _continue(
        self, job: Coroutine[Any, Any, None], awaiting: Any, loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        """Run `job`, which finishes a job started in place and suspended on `awaiting`, in a task (on
        `loop`, the running loop, when the caller knows it).

        The job already holds its slot (`running`); the task's end frees it.
        """
        task = continue_in_task(job, awaiting, f"{self.name}-job", loop)
        self._tasks.add(task)
        task.add_done_callback(self._job_task_done)

    def _job_task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self.running -= 1
        if not task.cancelled() and task.exception() is not None:
            log.error("executor %s: job crashed", self.name, exc_info=task.exception())
        self._drain()

    def _drain(self) -> None:
        """Start queued jobs while slots are free (jobs that finish at once free theirs at once)."""
        queue = self._queue
        if queue and self.max_wait_ms > 0:
            self.expire_waiting()
        while queue and self.running < self.workers:
            fn, args, _queued_at = queue.popleft()
            self._start(fn, args)
        if self._drained is not None and self.is_idle():
            self._drained.set()

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
        self.state = ServiceState.STOPPING
        if not self.is_idle():
            self._drained = asyncio.Event()
            try:
                await asyncio.wait_for(self._drained.wait(), timeout_s)
            except TimeoutError:
                log.warning(
                    "executor %s: %d jobs running and %d queued at shutdown; cancelling them",
                    self.name,
                    self.running,
                    len(self._queue),
                )
        self._queue.clear()
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self.state = ServiceState.SHUTDOWN_ALREADY


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

    __slots__ = ("after_hooks", "hooks", "loop", "registry", "timer", "version")

    def __init__(
        self,
        registry: ProcessorRegistry,
        hooks: Sequence[RPCHook],
        version: int = CURRENT_VERSION,
        after_hooks: Sequence[RPCHook] | None = None,
    ) -> None:
        self.registry = registry
        self.hooks = hooks
        # the hooks that act after a response (hooks.has_after_response); all of them when not given
        self.after_hooks = hooks if after_hooks is None else after_hooks
        self.version = version
        self.timer: RequestTimer | None = None  # set by RemotingServer.time_requests (metrics on)
        # The owner loop, set when the endpoint binds it: requests are dispatched on it, so it is the
        # running loop for a suspended request's task (asyncio.get_running_loop() is a system call).
        self.loop: asyncio.AbstractEventLoop | None = None

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
        # Before-hooks (ACL) run here, before the request takes a queue slot: a refused request
        # never occupies an executor, and an accepted one keeps the fast path below.
        if self.hooks and not self._before(conn, cmd):
            return
        self._execute(entry, conn, cmd, _clock_ns() if self.timer is not None else 0)

    def _execute(self, entry: ProcessorEntry, conn: Any, cmd: RemotingCommand, started: int) -> None:
        """Run a request that passed the checks: at once in a free slot, else queued (or SYSTEM_BUSY)."""
        executor = entry.executor
        if executor.take_slot():
            # The processor's own coroutine is started here (Executor._start without the _run
            # wrapper: one coroutine less per request; eager_step explains the eager start); the
            # answers are _run's.
            try:
                coro = entry.processor.process_request(conn, cmd)
                if type(coro) is not _CoroutineType:  # another awaitable: the general way
                    executor.running -= 1
                    executor._start(self._run_awaitable, (coro, conn, cmd, started))
                    return
                awaiting = coro.send(None)
            except StopIteration as stop:
                executor.running -= 1
                self._respond(conn, cmd, stop.value, started)
            except (MissingHeaderFieldError, BadHeaderValueError) as exc:
                executor.running -= 1
                self._respond(conn, cmd, self._bad_header_response(conn, cmd, exc), started, failed=True)
            except Exception as exc:
                executor.running -= 1
                self._respond(conn, cmd, self._error_response(conn, cmd, exc), started, failed=True)
            except BaseException:  # as Executor._start: a cancellation or exit out of a processor
                executor.running -= 1
                log.exception("executor %s: job crashed", executor.name)
                return
            else:  # suspended: it continues in a task, holding its slot
                executor._continue(self._run_rest(coro, awaiting, conn, cmd, started), awaiting, self.loop)
        elif not executor.submit(self._run, entry, conn, cmd, started):
            if executor.rejected % 10_000 == 1:  # Java samples this warning too
                log.warning(
                    "%s: too many requests and executor %s busy, request code %s",
                    conn.remote_addr,
                    executor.name,
                    cmd.code,
                )
            self._answer_now(conn, cmd, ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK, started)

    def dispatch_run(self, conn: Any, entry: ProcessorEntry, cmds: list[RemotingCommand]) -> None:
        """Dispatch consecutive requests of one read that `entry` takes together (all of codes in
        registry.batchable with this entry; admitted, in read order)."""
        if entry.reject is not None and entry.reject():
            for cmd in cmds:
                self._answer_now(conn, cmd, ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
            return
        if self.hooks:  # a request a hook refuses is answered alone; the others stay in the run
            refused = run_before_each(self.hooks, conn.remote_addr, cmds)
            if refused is not None:
                for cmd, exc in zip(cmds, refused, strict=True):
                    if exc is not None:
                        self._refuse(conn, cmd, exc)
                cmds = [cmd for cmd, exc in zip(cmds, refused, strict=True) if exc is None]
        started = _clock_ns() if self.timer is not None else 0
        if len(cmds) < 2 or not entry.executor.take_slot():
            # Nothing to share, or no free slot: one by one (queued, or SYSTEM_BUSY when full).
            for cmd in cmds:
                self._execute(entry, conn, cmd, started)
            return
        executor = entry.executor
        assert entry.run is not None
        try:
            coro = entry.run(conn, cmds)
            awaiting = coro.send(None)
        except StopIteration as stop:
            executor.running -= 1
            self._respond_run(conn, cmds, stop.value, started)
        except Exception as exc:
            executor.running -= 1
            self._fail_run(conn, cmds, exc, started)
        except BaseException:  # as Executor._start
            executor.running -= 1
            log.exception("executor %s: job crashed", executor.name)
        else:  # suspended (a flush or replica wait): it continues in a task, holding its slot
            executor._continue(self._finish_run(coro, awaiting, conn, cmds, started), awaiting, self.loop)

    async def _finish_run(
        self,
        coro: Coroutine[Any, Any, list[RemotingCommand | None]],
        awaiting: Any,
        conn: Any,
        cmds: list[RemotingCommand],
        started: int,
    ) -> None:
        """dispatch_run for a run that suspended: its answers leave together, as one write."""
        try:
            responses = await resume(coro, awaiting)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._fail_run(conn, cmds, exc, started)
            return
        conn.cork()
        try:
            self._respond_run(conn, cmds, responses, started)
        finally:
            conn.uncork()

    def _respond_run(
        self, conn: Any, cmds: list[RemotingCommand], responses: list[RemotingCommand | None], started: int
    ) -> None:
        if len(responses) != len(cmds):  # a processor bug; every request still gets one answer
            self._fail_run(
                conn, cmds, IllegalStateError(f"{len(responses)} answers to {len(cmds)} requests"), started
            )
            return
        if self.after_hooks:  # the after-hooks see each answer: the general way
            for cmd, response in zip(cmds, responses, strict=True):
                self._respond(conn, cmd, response, started)
            return
        # _respond and _send for a run's answers (never oneway, never failed), lookups hoisted.
        timer = self.timer if started else None
        version = self.version
        done = conn.request_done
        answers: list[RemotingCommand] = []
        send = answers.append  # then queued together (Connection.send_responses)
        # The answers of a run leave together, so they share one elapsed time: consecutive answers with
        # the same (request code, response code) are recorded as one observation counted `same` times.
        code = answer = same = 0
        for cmd, response in zip(cmds, responses, strict=True):
            done()
            if response is None or cmd.flag & 2:  # no answer now (untimed, as _respond), or oneway
                continue
            if timer is not None:
                if same and cmd.code == code and response.code == answer:
                    same += 1
                else:
                    if same:
                        timer.record_many((code, answer, "success"), started, same)
                    code, answer, same = cmd.code, response.code, 1
            _stamp(cmd, response, version)
            send(response)
        conn.send_responses(answers)
        if same and timer is not None:
            timer.record_many((code, answer, "success"), started, same)

    def _fail_run(self, conn: Any, cmds: list[RemotingCommand], exc: Exception, started: int) -> None:
        log.error(
            "%s: processing %d requests (code %s) together failed",
            conn.remote_addr, len(cmds), cmds[0].code, exc_info=exc,
        )  # fmt: skip
        remark = exception_description(exc)
        for cmd in cmds:
            self._respond(
                conn, cmd, cmd.make_response(ResponseCode.SYSTEM_ERROR, remark), started, failed=True
            )

    def expire(self, args: tuple[Any, ...], waited_ms: int, queued: int) -> None:
        """An executor's ExpiredHandler: answer a request that waited too long in its queue SYSTEM_BUSY."""
        _entry, conn, cmd, started = args
        self._answer_now(
            conn, cmd, ResponseCode.SYSTEM_BUSY, TIMEOUT_CLEAN_QUEUE_REMARK % (waited_ms, queued), started
        )

    def _answer_now(self, conn: Any, cmd: RemotingCommand, code: int, remark: str, started: int = 0) -> None:
        conn.request_done()
        timer = self.timer
        if timer is not None:  # answered without a processor: timed too, as 5.x's writeResponse does
            timer.record((cmd.code, code, "oneway" if cmd.flag & 2 else "success"), started or _clock_ns())
        if not cmd.is_oneway:
            response = cmd.make_response(code, remark)
            response.version = self.version
            if cmd.ext_fields and OFFER_FIELD in cmd.ext_fields:
                answer_offer(cmd, response)
            conn.send_response(response)

    def _before(self, conn: Any, cmd: RemotingCommand) -> bool:
        """Run the before-hooks; False when one refused the request (it is answered here)."""
        try:
            run_before(self.hooks, conn.remote_addr, cmd)
        except Exception as exc:
            self._refuse(conn, cmd, exc)
            return False
        return True

    def _refuse(self, conn: Any, cmd: RemotingCommand, exc: Exception) -> None:
        """Answer a request a before-hook raised `exc` on."""
        if isinstance(exc, RequestRefused):  # a hook said no (ACL); the hook logged it
            self._answer_now(conn, cmd, exc.code, exc.remark)
        else:  # Java: a hook that throws fails the request with SYSTEM_ERROR
            response = self._error_response(conn, cmd, exc)
            self._answer_now(conn, cmd, response.code, response.remark or "")

    async def _run(self, entry: ProcessorEntry, conn: Any, cmd: RemotingCommand, started: int) -> None:
        """A job: the processor, then its answer or the error's."""
        await self._run_awaitable(entry.processor.process_request(conn, cmd), conn, cmd, started)

    async def _run_rest(
        self,
        coro: Coroutine[Any, Any, RemotingCommand | None],
        awaiting: Any,
        conn: Any,
        cmd: RemotingCommand,
        started: int,
    ) -> None:
        """_run for a processor coroutine that dispatch() started and that suspended on `awaiting`."""
        await self._run_awaitable(resume(coro, awaiting), conn, cmd, started)

    async def _run_awaitable(
        self, awaitable: Awaitable[RemotingCommand | None], conn: Any, cmd: RemotingCommand, started: int
    ) -> None:
        """Await what the processor returned, then send its answer (or the error's)."""
        try:
            response = await awaitable
        except asyncio.CancelledError:
            raise
        except (MissingHeaderFieldError, BadHeaderValueError) as exc:
            self._respond(conn, cmd, self._bad_header_response(conn, cmd, exc), started, failed=True)
        except Exception as exc:
            self._respond(conn, cmd, self._error_response(conn, cmd, exc), started, failed=True)
        else:
            self._respond(conn, cmd, response, started)

    @staticmethod
    def _bad_header_response(conn: Any, cmd: RemotingCommand, exc: Exception) -> RemotingCommand:
        log.warning("%s: bad request header (code %s): %s", conn.remote_addr, cmd.code, exc)
        return cmd.make_response(ResponseCode.SYSTEM_ERROR, str(exc))

    @staticmethod
    def _error_response(conn: Any, cmd: RemotingCommand, exc: Exception) -> RemotingCommand:
        log.error("%s: processing request code %s failed", conn.remote_addr, cmd.code, exc_info=exc)
        return cmd.make_response(ResponseCode.SYSTEM_ERROR, exception_description(exc))

    def _respond(
        self,
        conn: Any,
        cmd: RemotingCommand,
        response: RemotingCommand | None,
        started: int,
        failed: bool = False,
    ) -> None:
        conn.request_done()  # the connection's in-flight count (a held long poll is done here too)
        if started:  # timing on (RemotingMetricsManager's writeResponse); inlined, it runs per request
            timer = self.timer
            if timer is not None:
                if failed:
                    timer.record(
                        (cmd.code, ResponseCode.SYSTEM_ERROR, "oneway" if cmd.flag & 2 else "success"),
                        started,
                    )
                elif response is not None:
                    timer.record((cmd.code, response.code, "success"), started)
                elif cmd.flag & 2:  # oneway
                    timer.record((cmd.code, ResponseCode.SUCCESS, "oneway"), started)
                # else: a held long-polling pull; the hold service answers it later, untimed
        if self.after_hooks and response is not None:
            try:
                run_after(self.after_hooks, conn.remote_addr, cmd, response)
            except Exception:
                log.exception("rpc hook failed after request code %s", cmd.code)
        self._send(conn, cmd, response)

    def _send(self, conn: Any, cmd: RemotingCommand, response: RemotingCommand | None) -> None:
        if response is None or cmd.flag & 2:  # no answer now, or a oneway request
            return
        _stamp(cmd, response, self.version)
        conn.send_response(response)


def _stamp(cmd: RemotingCommand, response: RemotingCommand, version: int) -> None:
    """Make `response` the answer to `cmd`: its opaque, the response flag, its serialize type, our version."""
    response.opaque = cmd.opaque
    response.flag |= RPC_TYPE
    response.serialize_type = cmd.serialize_type
    response.version = version
    ext = cmd.ext_fields
    if ext and OFFER_FIELD in ext:  # a rocketq client offers msgpack headers (codec_negotiation)
        answer_offer(cmd, response)
