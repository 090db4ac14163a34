"""ProcessorRegistry, Executor and the Dispatcher's answers, with a fake connection (no sockets)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from transport_doubles import FakeConnection

from rocketq.common.errors import IllegalStateError
from rocketq.remoting.protocol.codes import ResponseCode, SerializeType
from rocketq.remoting.protocol.command import CURRENT_VERSION, RemotingCommand
from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError
from rocketq.remoting.transport.dispatch import (
    OVERLOAD_REMARK,
    REJECT_REQUEST_REMARK,
    Dispatcher,
    Executor,
    ProcessorRegistry,
    exception_description,
)
from rocketq.remoting.transport.hooks import RequestRefused, RPCHook


class Answer:
    def __init__(self, response: Any = "echo") -> None:
        self.response = response
        self.seen: list[RemotingCommand] = []

    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand | None:
        self.seen.append(request)
        if self.response == "echo":
            return RemotingCommand(code=0, remark="fresh", body=request.body)  # not made with make_response
        return self.response  # type: ignore[no-any-return]


class Raising:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand:
        raise self.exc


class Gate:
    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = 0
        self.finished = 0

    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand:
        self.started += 1
        await self.gate.wait()
        self.finished += 1
        return request.make_response(0)


def _dispatcher(*entries: tuple[int, Any, Executor | None], hooks: list[RPCHook] | None = None) -> Dispatcher:
    registry = ProcessorRegistry()
    default = Executor("test", workers=4, capacity=10)
    for code, processor, executor in entries:
        registry.register(code, processor, executor or default)
    return Dispatcher(registry, hooks if hooks is not None else [])


def _request(code: int = 10, **kw: Any) -> RemotingCommand:
    return RemotingCommand.request(code, **kw)


# --- registry ------------------------------------------------------------------------------------------
def test_registry_has_one_owner_per_code() -> None:
    registry = ProcessorRegistry()
    executor = Executor("x")
    registry.register(10, Answer(), executor)
    with pytest.raises(IllegalStateError, match="request code 10 already has a processor"):
        registry.register(10, Answer(), executor)
    registry.register_default(Answer(), executor)
    with pytest.raises(IllegalStateError, match="default processor"):
        registry.register_default(Answer(), executor)
    assert registry.codes() == [10]
    assert registry.lookup(10) is not registry.lookup(99) is not None
    assert registry.executors() == [executor]


def test_registry_notes_reject_request() -> None:
    class Rejecting(Answer):
        def reject_request(self) -> bool:
            return True

    registry = ProcessorRegistry()
    registry.register(1, Rejecting(), Executor("x"))
    registry.register(2, Answer(), Executor("y"))
    assert registry.lookup(1).reject is not None  # type: ignore[union-attr]
    assert registry.lookup(2).reject is None  # type: ignore[union-attr]


# --- answers -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ, SerializeType.MSGPACK]
)
async def test_response_carries_opaque_flag_serialize_type_and_version(serialize_type: SerializeType) -> None:
    processor = Answer()
    dispatcher = _dispatcher((10, processor, None))
    conn = FakeConnection()
    request = _request(10, body=b"hi", serialize_type=serialize_type)
    dispatcher.dispatch(conn, request)
    (response,) = conn.sent
    assert (response.opaque, response.is_response, response.serialize_type) == (
        request.opaque,
        True,
        serialize_type,
    )
    assert (response.version, response.body, response.remark) == (CURRENT_VERSION, b"hi", "fresh")


async def test_unknown_code_is_not_supported() -> None:
    conn = FakeConnection()
    _dispatcher().dispatch(conn, _request(4242))
    (response,) = conn.sent
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 4242 not supported"
    assert response.version == CURRENT_VERSION


async def test_oneway_requests_are_never_answered() -> None:
    conn = FakeConnection()
    processor = Answer()
    rejecting_executor = Executor("full", workers=1, capacity=1)
    gate = Gate()
    dispatcher = _dispatcher((10, processor, None), (11, gate, rejecting_executor))
    dispatcher.dispatch(conn, _request(10, oneway=True))  # the processor answers; the answer is dropped
    dispatcher.dispatch(conn, _request(4242, oneway=True))  # unknown code
    for _ in range(3):  # fills the executor, then overflows it
        dispatcher.dispatch(conn, _request(11, oneway=True))
    assert conn.sent == [] and len(processor.seen) == 1
    gate.gate.set()
    await rejecting_executor.shutdown(5)


async def test_processor_may_answer_nothing() -> None:
    conn = FakeConnection()
    _dispatcher((10, Answer(response=None), None)).dispatch(conn, _request(10))
    assert conn.sent == []


async def test_reject_request_answers_system_busy() -> None:
    class Rejecting(Answer):
        def reject_request(self) -> bool:
            return True

    conn = FakeConnection()
    processor = Rejecting()
    _dispatcher((10, processor, None)).dispatch(conn, _request(10))
    (response,) = conn.sent
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
    assert processor.seen == []


async def test_full_executor_answers_system_busy() -> None:
    gate = Gate()
    executor = Executor("send", workers=1, capacity=2)
    dispatcher = _dispatcher((10, gate, executor))
    conn = FakeConnection()
    requests = [_request(10) for _ in range(5)]
    for request in requests:
        dispatcher.dispatch(conn, request)
    # one running, two queued, two refused
    assert (executor.running, executor.queued, executor.rejected) == (1, 2, 2)
    assert [(r.code, r.remark, r.opaque) for r in conn.sent] == [
        (ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK, requests[3].opaque),
        (ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK, requests[4].opaque),
    ]
    gate.gate.set()
    await executor.shutdown(5)  # lets the running and queued ones finish
    assert gate.finished == 3
    assert sorted(r.opaque for r in conn.sent[2:]) == sorted(r.opaque for r in requests[:3])


@pytest.mark.parametrize(
    ("exc", "remark"),
    [
        (MissingHeaderFieldError("SendMessageRequestHeader", "topic"), "misses the required field 'topic'"),
        (
            BadHeaderValueError("PullMessageRequestHeader", "queueId", "x", "an int"),
            "field 'queueId' is not an int",
        ),
        (ValueError("boom"), "ValueError: boom, process_request(test_transport_dispatch.py:"),
        (KeyError("k"), "KeyError: 'k', process_request("),
    ],
)
async def test_processor_errors_answer_system_error(exc: BaseException, remark: str) -> None:
    conn = FakeConnection()
    request = _request(10)
    _dispatcher((10, Raising(exc), None)).dispatch(conn, request)
    (response,) = conn.sent
    assert response.code == ResponseCode.SYSTEM_ERROR and response.opaque == request.opaque
    assert remark in (response.remark or "")


async def test_hooks_run_around_the_processor() -> None:
    calls: list[str] = []

    class Hook:
        def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
            calls.append(f"before {remote_addr} {request.code}")

        def do_after_response(
            self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
        ) -> None:
            calls.append(f"after {response.remark}")

    conn = FakeConnection()
    _dispatcher((10, Answer(), None), hooks=[Hook()]).dispatch(conn, _request(10))
    assert calls == ["before 10.0.0.7:51234 10", "after fresh"]


async def test_a_refusing_hook_answers_system_error() -> None:
    class Refuse:
        def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
            raise PermissionError("signature mismatch")

        def do_after_response(
            self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
        ) -> None:
            raise AssertionError("not reached")

    conn = FakeConnection()
    processor = Answer()
    _dispatcher((10, processor, None), hooks=[Refuse()]).dispatch(conn, _request(10))
    assert conn.sent[0].code == ResponseCode.SYSTEM_ERROR
    assert "signature mismatch" in (conn.sent[0].remark or "") and processor.seen == []


# --- executor --------------------------------------------------------------------------------------------
async def test_a_job_that_does_not_suspend_runs_inside_submit() -> None:
    executor = Executor("eager", workers=1, capacity=1)
    done: list[int] = []

    async def job(n: int) -> None:
        done.append(n)

    for n in range(5):  # each finishes at once and frees its slot: no queueing, no rejection
        assert executor.submit(job, n)
    assert done == [0, 1, 2, 3, 4] and executor.running == 0 and executor.rejected == 0


async def test_suspended_jobs_hold_their_slots_and_queued_ones_follow() -> None:
    executor = Executor("slots", workers=2, capacity=3)
    gate = asyncio.Event()
    order: list[str] = []
    all_done = asyncio.Event()

    async def job(name: str) -> None:
        order.append(f"start {name}")
        await gate.wait()
        order.append(f"end {name}")
        if len(order) == 8:
            all_done.set()

    for name in "abcd":
        assert executor.submit(job, name)
    assert order == ["start a", "start b"] and (executor.running, executor.queued) == (2, 2)
    gate.set()
    await asyncio.wait_for(all_done.wait(), 5)
    assert order[:4] == ["start a", "start b", "end a", "end b"]
    assert executor.running == 0 and executor.is_idle()


async def test_job_exceptions_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    executor = Executor("bugs", workers=1)

    async def bad() -> None:
        raise RuntimeError("bug in a job")

    assert executor.submit(bad)
    assert executor.running == 0
    assert "job crashed" in caplog.text


async def test_shutdown_cancels_what_does_not_finish_in_time() -> None:
    executor = Executor("stuck", workers=1, capacity=5)
    cancelled = asyncio.Event()

    async def stuck() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    executor.submit(stuck)
    executor.submit(stuck)
    await executor.shutdown(0)
    assert cancelled.is_set() and executor.queued == 0
    assert not executor.submit(stuck)  # closed


async def test_run_blocking_uses_the_thread_pool() -> None:
    executor = Executor("fsync", workers=2, blocking_threads=1)
    name = await executor.run_blocking(lambda: threading.current_thread().name)
    assert name.startswith("fsync")
    assert await executor.run_blocking(sum, [1, 2, 3]) == 6
    await executor.shutdown(1)


def test_executor_rejects_nonsense_sizes() -> None:
    with pytest.raises(ValueError):
        Executor("x", workers=0)


def test_exception_description_names_where() -> None:
    def fail() -> None:
        raise ValueError("bad value")

    try:
        fail()
    except ValueError as exc:
        text = exception_description(exc)
    assert text.startswith("ValueError: bad value, fail(test_transport_dispatch.py:")
    assert exception_description(KeyError()) == "KeyError"


async def test_suspending_processors_resume_correctly() -> None:
    """Processors that suspend in every common way are continued faithfully after an eager start."""

    class Suspending:
        async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand:
            kind = request.remark
            loop = asyncio.get_running_loop()
            if kind == "sleep0":
                await asyncio.sleep(0)
                await asyncio.sleep(0)
            elif kind == "future-error":
                fut = loop.create_future()
                loop.call_soon(fut.set_exception, LookupError("from a future"))
                await fut
            elif kind == "task":
                await asyncio.ensure_future(asyncio.sleep(0, result=None))
            elif kind == "gather":
                await asyncio.gather(asyncio.sleep(0), asyncio.sleep(0))
            elif kind == "wait_for":
                fut = loop.create_future()
                loop.call_soon(fut.set_result, 1)
                await asyncio.wait_for(fut, 5)
            elif kind == "caught":
                fut = loop.create_future()
                loop.call_soon(fut.set_exception, LookupError("handled"))
                try:
                    await fut
                except LookupError:
                    pass
            return request.make_response(0, remark=f"done {kind}")

    kinds = ["sleep0", "future-error", "task", "gather", "wait_for", "caught"]
    executor = Executor("suspending", workers=len(kinds))
    dispatcher = _dispatcher((10, Suspending(), executor))
    conn = FakeConnection()
    for kind in kinds:
        dispatcher.dispatch(conn, _request(10, remark=kind))
    assert executor.running == len(kinds)  # all suspended, none answered yet
    await asyncio.wait_for(executor.shutdown(5), 5)
    answers = {r.remark: r.code for r in conn.sent}
    assert (
        answers.pop(
            "LookupError: from a future, process_request(test_transport_dispatch.py:" + _line_of(answers)
        )
        == 1
    )
    assert answers == {f"done {k}": 0 for k in kinds if k != "future-error"}


def _line_of(answers: dict[str | None, int]) -> str:
    """The line suffix of the SYSTEM_ERROR remark (where the processor awaited the failing future)."""
    (remark,) = [r for r in answers if r and r.startswith("LookupError")]
    return remark.split("test_transport_dispatch.py:", 1)[1]


async def test_a_processor_may_return_any_awaitable() -> None:
    """dispatch() starts coroutines in place; another awaitable (a future) is awaited in a job."""

    class FutureAnswer:
        def __init__(self) -> None:
            self.fut: asyncio.Future[RemotingCommand] | None = None

        def process_request(self, conn: Any, request: RemotingCommand) -> asyncio.Future[RemotingCommand]:
            self.fut = asyncio.get_running_loop().create_future()
            return self.fut

    processor = FutureAnswer()
    executor = Executor("futures", workers=1)
    conn = FakeConnection()
    request = _request(10)
    _dispatcher((10, processor, executor)).dispatch(conn, request)
    assert conn.sent == [] and executor.running == 1
    assert processor.fut is not None
    processor.fut.set_result(RemotingCommand(code=0, remark="later"))
    await asyncio.wait_for(executor.shutdown(5), 5)
    (response,) = conn.sent
    assert (response.remark, response.opaque, response.is_response) == ("later", request.opaque, True)
    assert executor.running == 0


async def test_a_processor_that_raises_before_its_coroutine_is_answered() -> None:
    class NotAsync:
        def process_request(self, conn: Any, request: RemotingCommand) -> Any:
            raise ValueError("no coroutine")

    executor = Executor("sync-error", workers=1)
    conn = FakeConnection()
    _dispatcher((10, NotAsync(), executor)).dispatch(conn, _request(10))
    (response,) = conn.sent
    assert response.code == ResponseCode.SYSTEM_ERROR and "ValueError: no coroutine" in (
        response.remark or ""
    )
    assert executor.running == 0


async def test_a_suspended_processor_that_fails_is_answered_and_frees_its_slot() -> None:
    class FailLater:
        async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand:
            await asyncio.sleep(0)
            raise MissingHeaderFieldError("SendMessageRequestHeader", "topic")

    executor = Executor("fail-later", workers=1)
    conn = FakeConnection()
    _dispatcher((10, FailLater(), executor)).dispatch(conn, _request(10))
    assert conn.sent == [] and executor.running == 1
    await asyncio.wait_for(executor.shutdown(5), 5)
    (response,) = conn.sent
    assert response.code == ResponseCode.SYSTEM_ERROR and "topic" in (response.remark or "")
    assert executor.running == 0


async def test_a_cancellation_out_of_a_processor_is_logged_not_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = Executor("cancelled", workers=1)
    conn = FakeConnection()
    _dispatcher((10, Raising(asyncio.CancelledError()), executor)).dispatch(conn, _request(10))
    assert conn.sent == [] and executor.running == 0
    assert "job crashed" in caplog.text


# --- request timing (rocketmq_rpc_latency) -------------------------------------------------------------
class Timer:
    def __init__(self) -> None:
        self.keys: list[tuple[int, int, str]] = []

    def record(self, key: tuple[int, int, str], started_ns: int) -> None:
        assert started_ns > 0
        self.keys.append(key)

    def record_many(self, key: tuple[int, int, str], started_ns: int, count: int) -> None:
        for _ in range(count):
            self.record(key, started_ns)


async def test_the_dispatcher_times_each_processor_answer_by_result() -> None:
    conn = FakeConnection()
    gate = Gate()
    dispatcher = _dispatcher(
        (10, Answer(RemotingCommand(code=ResponseCode.TOPIC_NOT_EXIST)), None),
        (11, Raising(ValueError("boom")), None),
        (12, Answer(response=None), None),  # held, as a long-polling pull: answered later, untimed
        (13, gate, None),
    )
    dispatcher.dispatch(conn, _request(10))  # untimed: no timer yet
    timer = Timer()
    dispatcher.timer = timer
    dispatcher.dispatch(conn, _request(10))
    dispatcher.dispatch(conn, _request(11))
    dispatcher.dispatch(conn, _request(12))
    dispatcher.dispatch(conn, _request(10, oneway=True))  # its answer is dropped, but timed
    dispatcher.dispatch(conn, _request(11, oneway=True))  # failed: nothing written, timed as oneway
    dispatcher.dispatch(conn, _request(13))  # suspends; timed when it answers
    # A processor that raised: labelled by the SYSTEM_ERROR answer written, as 5.x's writeResponse does
    assert timer.keys == [
        (10, ResponseCode.TOPIC_NOT_EXIST, "success"),
        (11, ResponseCode.SYSTEM_ERROR, "success"),
        (10, ResponseCode.TOPIC_NOT_EXIST, "success"),
        (11, ResponseCode.SYSTEM_ERROR, "oneway"),
    ]
    gate.gate.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert timer.keys[-1] == (13, ResponseCode.SUCCESS, "success")
    assert len(conn.sent) == 4  # 10 twice, 11, 13; not the oneway, not the held one


async def test_answers_without_a_processor_are_timed_too() -> None:
    """As 5.x's writeResponse: a refusal, SYSTEM_BUSY, an unsupported code and an expiry are in
    rocketmq_rpc_latency under the code they were answered with."""

    class Rejecting(Answer):
        def reject_request(self) -> bool:
            return True

    class Refuse:
        def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
            if request.code == 14:
                raise RequestRefused(ResponseCode.NO_PERMISSION, "no")
            if request.code == 15:
                raise ValueError("a hook that fails")

        def do_after_response(
            self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
        ) -> None:
            return None

    gate = Gate()
    busy = Executor("busy", workers=1, capacity=1)
    dispatcher = _dispatcher(
        (11, Rejecting(), None),
        (13, gate, busy),
        (14, Answer(), None),
        (15, Answer(), None),
        hooks=[Refuse()],
    )
    timer = Timer()
    dispatcher.timer = timer
    conn = FakeConnection()
    dispatcher.dispatch(conn, _request(99))
    dispatcher.dispatch(conn, _request(11))
    dispatcher.dispatch(conn, _request(13))  # runs, holding the only slot
    dispatcher.dispatch(conn, _request(13))  # waits in the queue
    dispatcher.dispatch(conn, _request(13))  # no slot, the queue full
    dispatcher.dispatch(conn, _request(14))
    dispatcher.dispatch(conn, _request(15))
    dispatcher.dispatch(conn, _request(99, oneway=True))  # not answered, but timed
    dispatcher.expire((None, conn, _request(13), 1), 5000, 3)
    assert timer.keys == [
        (99, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "success"),
        (11, ResponseCode.SYSTEM_BUSY, "success"),
        (13, ResponseCode.SYSTEM_BUSY, "success"),
        (14, ResponseCode.NO_PERMISSION, "success"),
        (15, ResponseCode.SYSTEM_ERROR, "success"),
        (99, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "oneway"),
        (13, ResponseCode.SYSTEM_BUSY, "success"),
    ]
    assert [r.code for r in conn.sent] == [
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.NO_PERMISSION,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,
    ]
    gate.gate.set()
    await busy.shutdown(5)
