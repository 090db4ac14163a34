"""Start, shutdown, restart and reconnect; the selector-loop thread model."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from remoting_helpers import EchoProcessor, GateProcessor, addr_of, wait_for_condition

from rocketq.common.errors import IllegalStateError
from rocketq.remoting.errors import RemotingConnectError
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport import Connection, RemotingServer, ServerConfig

ECHO = 1000
GATE = 1001


async def test_duplicate_registration_fails(server_factory: Any) -> None:
    server = RemotingServer(ServerConfig.model_validate({"listen_port": 0}))
    server.register_processor(ECHO, EchoProcessor())
    with pytest.raises(IllegalStateError, match="1000 already has a processor"):
        server.register_processor(ECHO, EchoProcessor())


async def test_port_in_use_is_a_connect_error(server_factory: Any) -> None:
    first = await server_factory()
    second = RemotingServer(ServerConfig.model_validate({"listen_port": first.port}))
    with pytest.raises(RemotingConnectError, match=f"listen on 127.0.0.1:{first.port}"):
        await second.start()
    await second.shutdown()


async def test_client_reconnects_after_server_restart(server_factory: Any, client: Any) -> None:
    server = await server_factory(lambda s: s.register_processor(ECHO, EchoProcessor()))
    port = server.port
    addr = addr_of(server)
    assert (await client.invoke_sync(addr, RemotingCommand.request(ECHO, None, b"1"), 3000)).body == b"1"
    await server.shutdown()
    await wait_for_condition(lambda: not client.is_connected(addr))  # the client notices the close
    with pytest.raises(RemotingConnectError):
        await client.invoke_sync(addr, RemotingCommand.request(ECHO), 3000)
    restarted = await server_factory(lambda s: s.register_processor(ECHO, EchoProcessor()), listen_port=port)
    assert restarted.port == port
    assert (await client.invoke_sync(addr, RemotingCommand.request(ECHO, None, b"2"), 3000)).body == b"2"


async def test_shutdown_lets_running_requests_answer(server_factory: Any, client: Any) -> None:
    gate = GateProcessor()
    server = await server_factory(lambda s: s.register_processor(GATE, gate), shutdown_timeout_ms=5000)
    fut = client.invoke_async(addr_of(server), RemotingCommand.request(GATE, None, b"in flight"), 10_000)
    await asyncio.wait_for(gate.entered_event.wait(), 5)
    shutdown = asyncio.ensure_future(server.shutdown())
    await asyncio.sleep(0)
    gate.gate.set()
    assert (await asyncio.wait_for(fut, 5)).body == b"in flight"
    await asyncio.wait_for(shutdown, 5)
    assert not server.connections


async def test_shutdown_is_bounded_with_a_stuck_processor(server_factory: Any, client: Any) -> None:
    gate = GateProcessor()
    server = await server_factory(lambda s: s.register_processor(GATE, gate), shutdown_timeout_ms=300)
    fut = client.invoke_async(addr_of(server), RemotingCommand.request(GATE), 30_000)
    await asyncio.wait_for(gate.entered_event.wait(), 5)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(server.shutdown(), 5)
    assert loop.time() - started < 2.0
    with pytest.raises(RemotingConnectError):
        await asyncio.wait_for(fut, 5)


@pytest.mark.asyncio(loop_factories=["uvloop", "asyncio"])
async def test_selector_loops_serve_requests_and_callbacks(server_factory: Any, client: Any) -> None:
    """N=2 selector threads: connections live there, processors still run on the main loop."""
    main_loop = asyncio.get_running_loop()
    loops_seen: set[int] = set()
    conns: list[Connection] = []

    class Where:
        async def process_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
            loops_seen.add(id(asyncio.get_running_loop()))
            conns.append(conn)
            return request.make_response(0, body=request.body)

    class ClientSide:
        async def process_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
            return request.make_response(0, body=b"from client")

    server = await server_factory(lambda s: s.register_processor(ECHO, Where()), server_selector_threads=2)
    assert server.selector_count == 2
    client.register_processor(RequestCode.CHECK_TRANSACTION_STATE, ClientSide())
    addr = addr_of(server)
    requests = [RemotingCommand.request(ECHO, None, i.to_bytes(2, "big")) for i in range(2000)]
    responses = await asyncio.wait_for(
        asyncio.gather(*(client.invoke_async(addr, r, 10_000) for r in requests)), 20
    )
    assert [r.body for r in responses] == [r.body for r in requests]
    assert loops_seen == {id(main_loop)}
    assert conns[0].io_loop is not main_loop

    response = await server.invoke_sync(
        conns[0], RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE), 3000
    )
    assert response.body == b"from client"

    # A bad frame on another connection closes only that one.
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(struct.pack(">i", -1) + b"junk")
    await writer.drain()
    async with asyncio.timeout(5):
        assert await reader.read() == b""
    writer.close()
    assert (
        await client.invoke_sync(addr, RemotingCommand.request(ECHO, None, b"still"), 3000)
    ).body == b"still"
