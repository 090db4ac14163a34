"""What the server answers by itself: SYSTEM_BUSY, REQUEST_CODE_NOT_SUPPORTED, SYSTEM_ERROR."""

from __future__ import annotations

import asyncio
from typing import Any

from remoting_helpers import EchoProcessor, GateProcessor, addr_of, wait_for_condition

from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import MissingHeaderFieldError
from rocketq.remoting.transport import Connection, Executor, RemotingServer

GATE = 1001
ECHO = 1000


async def test_full_executor_answers_system_busy(server_factory: Any, client: Any) -> None:
    gate = GateProcessor()
    executor = Executor("tiny", workers=1, capacity=1)
    server = await server_factory(lambda s: s.register_processor(GATE, gate, executor))
    addr = addr_of(server)
    running = client.invoke_async(addr, RemotingCommand.request(GATE, None, b"1"), 10_000)
    await asyncio.wait_for(gate.entered_event.wait(), 5)
    queued = client.invoke_async(addr, RemotingCommand.request(GATE, None, b"2"), 10_000)
    busy = await client.invoke_sync(addr, RemotingCommand.request(GATE, None, b"3"), 10_000)
    assert busy.code == ResponseCode.SYSTEM_BUSY
    assert busy.remark == "[OVERLOAD]system busy, start flow control for a while"
    gate.gate.set()
    first, second = await asyncio.wait_for(asyncio.gather(running, queued), 5)
    assert (first.code, first.body, second.code, second.body) == (0, b"1", 0, b"2")


async def test_a_stalled_executor_answers_its_queue_system_busy_after_the_wait_bound(
    server_factory: Any, client: Any
) -> None:
    """Fast failure (BrokerFastFailure): the only worker is stuck, so queued requests are answered
    SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE] once they waited max_wait_ms, without the worker ever freeing."""
    gate = GateProcessor()
    executor = Executor("stalled", workers=1, capacity=100, max_wait_ms=50)
    server = await server_factory(lambda s: s.register_processor(GATE, gate, executor))
    addr = addr_of(server)
    running = client.invoke_async(addr, RemotingCommand.request(GATE, None, b"stuck"), 10_000)
    await asyncio.wait_for(gate.entered_event.wait(), 5)
    queued = [
        client.invoke_async(addr, RemotingCommand.request(GATE, None, b"%d" % i), 10_000) for i in range(3)
    ]
    answers = await asyncio.wait_for(asyncio.gather(*queued), 5)
    assert not running.done()  # the stuck request is still running: the answers came from the queue check
    for answer in answers:
        assert answer.code == ResponseCode.SYSTEM_BUSY, (answer.code, answer.remark)
        remark = answer.remark or ""
        prefix = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "
        assert remark.startswith(prefix), remark
        waited, _, size = remark[len(prefix) :].partition("ms, size of queue: ")
        assert int(waited) >= 50 and 0 <= int(size) < 3, remark
    assert executor.expired == 3 and executor.queued == 0
    assert gate.entered == 1  # none of the expired requests ran
    gate.gate.set()
    assert (await asyncio.wait_for(running, 5)).body == b"stuck"


async def test_reject_request_answers_system_busy(server_factory: Any, client: Any) -> None:
    class Rejecting(EchoProcessor):
        def __init__(self) -> None:
            super().__init__()
            self.reject = True

        def reject_request(self) -> bool:
            return self.reject

    processor = Rejecting()
    server = await server_factory(lambda s: s.register_processor(ECHO, processor))
    response = await client.invoke_sync(addr_of(server), RemotingCommand.request(ECHO), 3000)
    assert response.code == ResponseCode.SYSTEM_BUSY
    assert response.remark == "[REJECTREQUEST]system busy, start flow control for a while"
    assert processor.seen == []
    processor.reject = False
    response = await client.invoke_sync(addr_of(server), RemotingCommand.request(ECHO), 3000)
    assert response.code == ResponseCode.SUCCESS


async def test_unknown_code_answers_not_supported(server_factory: Any, client: Any) -> None:
    server = await server_factory()
    response = await client.invoke_sync(addr_of(server), RemotingCommand.request(4242), 3000)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 4242 not supported"


async def test_default_processor_serves_unregistered_codes(server_factory: Any, client: Any) -> None:
    echo = EchoProcessor()
    server = await server_factory(lambda s: s.register_default_processor(echo))
    response = await client.invoke_sync(addr_of(server), RemotingCommand.request(4242, None, b"x"), 3000)
    assert (response.code, response.body) == (0, b"x")


async def test_processor_errors_answer_system_error(server_factory: Any, client: Any) -> None:
    class Failing:
        async def process_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
            if request.body == b"header":
                raise MissingHeaderFieldError("SendMessageRequestHeader", "topic")
            raise ValueError("boom")

    def setup(server: RemotingServer) -> None:
        server.register_processor(GATE, Failing())
        server.register_processor(ECHO, EchoProcessor())

    server = await server_factory(setup)
    addr = addr_of(server)
    response = await client.invoke_sync(addr, RemotingCommand.request(GATE, None, b"boom"), 3000)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None and response.remark.startswith("ValueError: boom, process_request(")
    response = await client.invoke_sync(addr, RemotingCommand.request(GATE, None, b"header"), 3000)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == "the request header SendMessageRequestHeader misses the required field 'topic'"
    # The connection and the server are fine afterwards.
    assert (await client.invoke_sync(addr, RemotingCommand.request(ECHO), 3000)).code == 0


async def test_deferred_response_with_send_response(server_factory: Any, client: Any) -> None:
    """A processor may return None and answer later (long polling)."""
    held: list[tuple[Connection, RemotingCommand]] = []

    class Suspending:
        async def process_request(self, conn: Connection, request: RemotingCommand) -> None:
            held.append((conn, request))
            return None

    server = await server_factory(lambda s: s.register_processor(GATE, Suspending()))
    fut = client.invoke_async(addr_of(server), RemotingCommand.request(GATE), 5000)
    await wait_for_condition(lambda: bool(held))
    conn, request = held[0]
    assert conn.send_response(request.make_response(0, remark="later"))
    assert (await asyncio.wait_for(fut, 5)).remark == "later"
