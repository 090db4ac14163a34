"""Runs: consecutive requests of one read that their processor takes together (Dispatcher.dispatch_run)."""

from __future__ import annotations

import asyncio
from typing import Any

from transport_doubles import FakeConnection

from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport import RemotingServer, ServerConfig
from rocketq.remoting.transport.dispatch import OVERLOAD_REMARK, Executor
from rocketq.remoting.transport.hooks import RequestRefused

RUN_CODE, OTHER_CODE = 10, 11


class Together:
    """Takes RUN_CODE requests together; a body of b"bad" is refused alone; `gate` makes it suspend."""

    batch_codes = frozenset({RUN_CODE})

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate = gate
        self.runs: list[list[bytes]] = []
        self.alone: list[bytes] = []

    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand:
        self.alone.append(request.body)
        return request.make_response(0, body=request.body)

    async def process_requests(
        self, conn: Any, requests: list[RemotingCommand]
    ) -> list[RemotingCommand | None]:
        self.runs.append([r.body for r in requests])
        if self.gate is not None:
            await self.gate.wait()
        return [
            r.make_response(ResponseCode.MESSAGE_ILLEGAL if r.body == b"bad" else 0, body=r.body)
            for r in requests
        ]


class Broken(Together):
    async def process_requests(
        self, conn: Any, requests: list[RemotingCommand]
    ) -> list[RemotingCommand | None]:
        raise KeyError("bug")


def _server(processor: Any, executor: Executor | None = None) -> RemotingServer:
    server = RemotingServer(ServerConfig.model_validate({"listen_port": 0}))
    server.register_processor(RUN_CODE, processor, executor)
    server.register_processor(OTHER_CODE, processor, executor)
    server._bind_loop()
    return server


def _requests(*bodies: bytes, code: int = RUN_CODE) -> list[RemotingCommand]:
    return [RemotingCommand.request(code, None, body) for body in bodies]


def _answers(conn: FakeConnection) -> dict[int, tuple[int, bytes]]:
    answers = {cmd.opaque: (cmd.code, cmd.body) for cmd in conn.sent}
    assert len(answers) == len(conn.sent)  # one answer per request
    return answers


async def test_consecutive_requests_of_one_read_go_together_and_each_gets_its_own_answer() -> None:
    processor = Together()
    server = _server(processor)
    conn = FakeConnection()
    cmds = _requests(b"a", b"bad", b"c") + _requests(b"x", code=OTHER_CODE) + _requests(b"d", b"e")
    server.on_commands(conn, cmds)  # type: ignore[arg-type]
    # Runs break at a request of another code; the one of another code goes alone.
    assert processor.runs == [[b"a", b"bad", b"c"], [b"d", b"e"]]
    assert processor.alone == [b"x"]
    answers = _answers(conn)
    assert {cmd.opaque for cmd in cmds} == set(answers)
    assert answers[cmds[1].opaque] == (ResponseCode.MESSAGE_ILLEGAL, b"bad")  # its neighbours are fine
    assert answers[cmds[0].opaque] == (0, b"a") and answers[cmds[4].opaque] == (0, b"d")
    assert all(cmd.opaque == req.opaque for cmd, req in zip(conn.sent, cmds[:3], strict=False))
    assert conn.corked == 0


async def test_a_suspended_run_answers_every_request_once_it_resumes() -> None:
    gate = asyncio.Event()
    processor = Together(gate)
    executor = Executor("send", workers=2, capacity=10)
    server = _server(processor, executor)
    conn = FakeConnection()
    cmds = _requests(b"a", b"b", b"c")
    server.on_commands(conn, cmds)  # type: ignore[arg-type]
    assert conn.sent == [] and executor.running == 1  # one slot for the run
    gate.set()
    await executor.shutdown(5)  # waits for the run to end
    assert sorted(_answers(conn)) == sorted(cmd.opaque for cmd in cmds)


async def test_a_refused_request_leaves_the_run_and_a_full_executor_queues_one_by_one() -> None:
    class RefuseBad:
        def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
            if request.body == b"bad":
                raise RequestRefused(ResponseCode.NO_PERMISSION, "no")

        def do_after_response(
            self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
        ) -> None:
            return None

    gate = asyncio.Event()
    processor = Together(gate)
    executor = Executor("send", workers=1, capacity=1)
    server = _server(processor, executor)
    server.register_request_hook(RefuseBad())
    conn = FakeConnection()
    first = _requests(b"a", b"bad", b"b")
    server.on_commands(conn, first)  # type: ignore[arg-type]
    assert processor.runs == [[b"a", b"b"]]  # the refused one is not in it
    assert _answers(conn) == {first[1].opaque: (ResponseCode.NO_PERMISSION, b"")}
    # The one slot is taken: the next run's requests queue one by one, past the capacity SYSTEM_BUSY.
    second = _requests(b"c", b"d")
    server.on_commands(conn, second)  # type: ignore[arg-type]
    assert executor.queued == 1
    busy = [cmd for cmd in conn.sent if cmd.code == ResponseCode.SYSTEM_BUSY]
    assert [(cmd.opaque, cmd.remark) for cmd in busy] == [(second[1].opaque, OVERLOAD_REMARK)]
    gate.set()
    await executor.shutdown(5)  # waits for the run and the queued request to end
    assert processor.alone == [b"c"]
    assert sorted(_answers(conn)) == sorted(cmd.opaque for cmd in first + second)


async def test_hooks_see_a_run_together_or_one_by_one_and_after_response_hooks_only() -> None:
    """A hook with do_before_requests gets the run in one call, the next hook only what it let
    through; a hook saying after_response = False is not called after the answers (the run's answers
    then take the dispatcher's fast path), the others are."""
    calls: list[str] = []

    class WholeRun:
        after_response = False

        def do_before_requests(
            self, remote_addr: str, requests: list[RemotingCommand]
        ) -> list[Exception | None] | None:
            calls.append("run " + ",".join(r.body.decode() for r in requests))
            return [
                RequestRefused(ResponseCode.NO_PERMISSION, "no") if r.body == b"b" else None for r in requests
            ]

        def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
            raise AssertionError("a run goes whole")

        def do_after_response(
            self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
        ) -> None:
            raise AssertionError("after_response = False")

    class EachOne:
        def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
            calls.append("one " + request.body.decode())
            if request.body == b"c":
                raise ValueError("a hook that fails")

        def do_after_response(
            self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
        ) -> None:
            calls.append("after " + request.body.decode())

    processor = Together()
    server = _server(processor)
    server.register_request_hook(WholeRun())
    server.register_rpc_hook(EachOne())
    conn = FakeConnection()
    cmds = _requests(b"a", b"b", b"c", b"d")
    server.on_commands(conn, cmds)  # type: ignore[arg-type]
    assert processor.runs == [[b"a", b"d"]]
    assert calls == ["run a,b,c,d", "one a", "one c", "one d", "after a", "after d"]
    answers = _answers(conn)
    assert answers[cmds[1].opaque][0] == ResponseCode.NO_PERMISSION
    assert answers[cmds[2].opaque][0] == ResponseCode.SYSTEM_ERROR
    assert answers[cmds[0].opaque] == (0, b"a") and answers[cmds[3].opaque] == (0, b"d")
    # with the after-response hook gone, the same run is answered without calling any hook after
    calls.clear()
    server.request_hooks.pop()
    server._request_after_hooks.clear()
    server.on_commands(conn, _requests(b"e", b"f"))  # type: ignore[arg-type]
    assert calls == ["run e,f"] and processor.runs[-1] == [b"e", b"f"]


async def test_a_run_that_raises_fails_each_of_its_requests_with_system_error() -> None:
    server = _server(Broken())
    conn = FakeConnection()
    cmds = _requests(b"a", b"b")
    server.on_commands(conn, cmds)  # type: ignore[arg-type]
    answers = _answers(conn)
    assert sorted(answers) == sorted(cmd.opaque for cmd in cmds)
    assert {code for code, _body in answers.values()} == {ResponseCode.SYSTEM_ERROR}
    assert all("KeyError" in (cmd.remark or "") for cmd in conn.sent)


async def test_oneway_requests_and_lone_requests_take_the_single_path() -> None:
    processor = Together()
    server = _server(processor)
    conn = FakeConnection()
    oneway = _requests(b"o")[0]
    oneway.flag |= 2
    server.on_commands(conn, [*_requests(b"a"), oneway, *_requests(b"b")])  # type: ignore[arg-type]
    assert processor.runs == [] and processor.alone == [b"a", b"o", b"b"]
    assert len(conn.sent) == 2  # the oneway one is not answered


async def test_each_request_of_a_run_is_timed_once_with_its_answer_code() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.keys: list[tuple[int, int, str]] = []
            self.calls = 0

        def record(self, key: tuple[int, int, str], started_ns: int) -> None:
            assert started_ns > 0
            self.keys.append(key)

        def record_many(self, key: tuple[int, int, str], started_ns: int, count: int) -> None:
            self.calls += 1
            for _ in range(count):
                self.record(key, started_ns)

    server = _server(Together())
    recorder = Recorder()
    server.time_requests(recorder)
    conn = FakeConnection()
    server.on_commands(conn, _requests(b"a", b"bad", b"c"))  # type: ignore[arg-type]
    assert recorder.keys == [
        (RUN_CODE, 0, "success"),
        (RUN_CODE, ResponseCode.MESSAGE_ILLEGAL, "success"),
        (RUN_CODE, 0, "success"),
    ]
    assert recorder.calls == 3  # a change of answer code starts a new observation
    recorder.keys, recorder.calls = [], 0
    server.on_commands(conn, _requests(b"d", b"e", b"f"))  # type: ignore[arg-type]
    assert recorder.keys == [(RUN_CODE, 0, "success")] * 3 and recorder.calls == 1  # answered together
    assert len(conn.sent) == 6
