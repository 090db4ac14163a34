"""Sync, async and oneway requests over real loopback sockets, in both directions."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from remoting_helpers import EchoProcessor, GateProcessor, addr_of

from rocketq.remoting.errors import RemotingConnectError, RemotingTimeoutError, RemotingTooMuchRequestError
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.remoting.protocol.command import CURRENT_VERSION, RemotingCommand
from rocketq.remoting.protocol.header_codec import HEADER_CODECS
from rocketq.remoting.transport import Connection, RemotingServer

ECHO = 1000
GATE = 1001


def _echo_server(echo: EchoProcessor) -> Any:
    return lambda server: server.register_processor(ECHO, echo)


async def test_sync_async_and_oneway(server_factory: Any, client: Any) -> None:
    echo = EchoProcessor()
    server = await server_factory(_echo_server(echo))
    addr = addr_of(server)

    response = await client.invoke_sync(addr, RemotingCommand.request(ECHO, {"k": "v"}, b"hello"), 3000)
    assert (response.code, response.body, response.ext_fields, response.remark) == (
        0,
        b"hello",
        {"k": "v"},
        "echo",
    )
    assert response.is_response and response.version == CURRENT_VERSION

    fut = client.invoke_async(addr, RemotingCommand.request(ECHO, None, b"async"), 3000)
    assert (await asyncio.wait_for(fut, 5)).body == b"async"

    await client.invoke_oneway(addr, RemotingCommand.request(ECHO, None, b"oneway"), 3000)
    await asyncio.wait_for(echo.oneway_seen.wait(), 5)
    assert echo.seen[-1].is_oneway and echo.seen[-1].body == b"oneway"


async def test_10000_concurrent_requests_are_matched_by_opaque(server_factory: Any, client: Any) -> None:
    server = await server_factory(_echo_server(EchoProcessor()))
    addr = addr_of(server)
    requests = [RemotingCommand.request(ECHO, {"i": str(i)}, i.to_bytes(4, "big")) for i in range(10_000)]
    futures = [client.invoke_async(addr, cmd, 20_000) for cmd in requests]
    responses = await asyncio.wait_for(asyncio.gather(*futures), 30)
    for request, response in zip(requests, responses, strict=True):
        assert response.opaque == request.opaque
        assert response.body == request.body and response.ext_fields == request.ext_fields


async def test_concurrent_sync_callers_share_one_connection(server_factory: Any, client: Any) -> None:
    seen_conns: set[int] = set()

    class Recorder:
        async def process_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
            seen_conns.add(conn.id)
            return request.make_response(0, body=request.body)

    server = await server_factory(lambda s: s.register_processor(ECHO, Recorder()))
    addr = addr_of(server)
    results = await asyncio.gather(
        *(client.invoke_sync(addr, RemotingCommand.request(ECHO, None, bytes([i])), 5000) for i in range(50))
    )
    assert [r.body for r in results] == [bytes([i]) for i in range(50)]
    assert len(seen_conns) == 1 and len(server.connections) == 1


async def test_large_body_round_trip(server_factory: Any, client: Any) -> None:
    server = await server_factory(_echo_server(EchoProcessor()))
    body = bytes(range(256)) * 8192  # 2 MiB: goes out as its own buffer, arrives in many reads
    response = await client.invoke_sync(addr_of(server), RemotingCommand.request(ECHO, None, body), 10_000)
    assert response.body == body


async def test_sync_timeout_then_the_connection_still_works(server_factory: Any, client: Any) -> None:
    gate = GateProcessor()
    echo = EchoProcessor()

    def setup(server: RemotingServer) -> None:
        server.register_processor(GATE, gate)
        server.register_processor(ECHO, echo)

    server = await server_factory(setup)
    addr = addr_of(server)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(RemotingTimeoutError) as info:
        await client.invoke_sync(addr, RemotingCommand.request(GATE), 200)
    assert 0.15 <= loop.time() - started < 2.0
    assert "timeout" in str(info.value)
    assert len(client.responses) == 0
    # The late answer is dropped (no waiter) and the connection keeps serving.
    gate.gate.set()
    response = await client.invoke_sync(addr, RemotingCommand.request(ECHO, None, b"after"), 3000)
    assert response.body == b"after"


async def test_async_timeout_comes_from_the_scan(server_factory: Any, client_factory: Any) -> None:
    gate = GateProcessor()
    server = await server_factory(lambda s: s.register_processor(GATE, gate))
    client = client_factory(response_scan_interval_ms=50)
    fut = client.invoke_async(addr_of(server), RemotingCommand.request(GATE), 100)
    with pytest.raises(RemotingTimeoutError):
        await asyncio.wait_for(fut, 5)
    assert len(client.responses) == 0
    gate.gate.set()


async def test_connection_loss_fails_pending_requests_at_once(server_factory: Any, client: Any) -> None:
    gate = GateProcessor()
    server = await server_factory(lambda s: s.register_processor(GATE, gate))
    addr = addr_of(server)
    loop = asyncio.get_running_loop()
    sync_call = asyncio.ensure_future(client.invoke_sync(addr, RemotingCommand.request(GATE), 30_000))
    async_call = client.invoke_async(addr, RemotingCommand.request(GATE), 30_000)
    await asyncio.wait_for(gate.entered_event.wait(), 5)
    started = loop.time()
    for conn in list(server.connections):
        conn.abort()
    for call in (sync_call, async_call):
        with pytest.raises(RemotingConnectError, match="closed"):
            await asyncio.wait_for(call, 5)
    assert loop.time() - started < 2.0  # not the 30 s timeout
    gate.gate.set()


async def test_connect_refused_is_a_connect_error(client: Any) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(RemotingConnectError):
        await client.invoke_sync(f"127.0.0.1:{port}", RemotingCommand.request(ECHO), 3000)
    fut = client.invoke_async(f"127.0.0.1:{port}", RemotingCommand.request(ECHO), 3000)
    with pytest.raises(RemotingConnectError):
        await asyncio.wait_for(fut, 5)


async def test_server_initiated_requests_reach_client_processors(server_factory: Any, client: Any) -> None:
    conns: list[Connection] = []

    class Heartbeat:
        async def process_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
            conns.append(conn)
            return request.make_response(0)

    class CheckTransaction:
        def __init__(self) -> None:
            self.oneway = asyncio.Event()

        async def process_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
            if request.is_oneway:
                self.oneway.set()
                return None
            return request.make_response(0, remark="client says hi", body=request.body[::-1])

    server = await server_factory(lambda s: s.register_processor(RequestCode.HEART_BEAT, Heartbeat()))
    check = CheckTransaction()
    client.register_processor(RequestCode.CHECK_TRANSACTION_STATE, check)
    await client.invoke_sync(addr_of(server), RemotingCommand.request(RequestCode.HEART_BEAT), 3000)
    conn = conns[0]

    response = await server.invoke_sync(
        conn, RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, None, b"abc")
    )
    assert (response.code, response.remark, response.body) == (0, "client says hi", b"cba")
    fut = server.invoke_async(conn, RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, None, b"xy"))
    assert (await asyncio.wait_for(fut, 5)).body == b"yx"
    await server.invoke_oneway(conn, RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE))
    await asyncio.wait_for(check.oneway.wait(), 5)
    # A code the client has no processor for is answered by the client like a server would.
    response = await server.invoke_sync(
        conn, RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)
    )
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_rpc_hooks_run_on_both_sides(server_factory: Any, client: Any) -> None:
    calls: list[tuple[str, str, int]] = []

    class Hook:
        def __init__(self, side: str) -> None:
            self.side = side

        def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
            calls.append((self.side, "before", request.code))
            if self.side == "client":
                request.ext_fields = {**(request.ext_fields or {}), "AccessKey": "ak"}

        def do_after_response(
            self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
        ) -> None:
            calls.append((self.side, "after", response.code))

    echo = EchoProcessor()
    server = await server_factory(_echo_server(echo))
    server.register_rpc_hook(Hook("server"))
    client.register_rpc_hook(Hook("client"))
    await client.invoke_sync(addr_of(server), RemotingCommand.request(ECHO), 3000)
    assert echo.seen[0].ext_fields == {"AccessKey": "ak"}
    assert calls == [
        ("client", "before", ECHO),
        ("server", "before", ECHO),
        ("server", "after", 0),
        ("client", "after", 0),
    ]


@pytest.mark.parametrize(
    "serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ, SerializeType.MSGPACK]
)
async def test_response_uses_the_request_serialize_type(
    server_factory: Any, client: Any, serialize_type: SerializeType
) -> None:
    if serialize_type not in HEADER_CODECS:
        pytest.skip(f"header codec {serialize_type.name} not available")
    seen: list[SerializeType] = []

    class Check:
        async def process_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
            seen.append(request.serialize_type)
            return request.make_response(0, ext_fields={"answer": "42"})

    server = await server_factory(lambda s: s.register_processor(ECHO, Check()))
    cmd = RemotingCommand.request(ECHO, {"q": "?"}, b"b", serialize_type=serialize_type)
    response = await client.invoke_sync(addr_of(server), cmd, 3000)
    assert seen == [serialize_type]
    assert response.serialize_type == serialize_type and response.ext_fields == {"answer": "42"}


async def test_async_permits_bound_requests_in_flight(server_factory: Any, client_factory: Any) -> None:
    gate = GateProcessor()
    server = await server_factory(lambda s: s.register_processor(GATE, gate))
    client = client_factory(client_async_semaphore_value=2)
    addr = addr_of(server)
    held = [client.invoke_async(addr, RemotingCommand.request(GATE), 10_000) for _ in range(2)]
    refused = client.invoke_async(addr, RemotingCommand.request(GATE), 100)
    with pytest.raises(RemotingTooMuchRequestError, match="2 permits"):
        await asyncio.wait_for(refused, 5)
    waiting = client.invoke_async(addr, RemotingCommand.request(GATE, None, b"third"), 10_000)
    gate.gate.set()  # the held ones finish and hand their permits on
    responses = await asyncio.wait_for(asyncio.gather(*held, waiting), 5)
    assert [r.code for r in responses] == [0, 0, 0] and responses[2].body == b"third"
