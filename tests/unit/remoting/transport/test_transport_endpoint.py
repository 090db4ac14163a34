"""Endpoint routing (responses vs requests), listeners, configs, loop registry, address parsing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from transport_doubles import FakeConnection, MockTransport

from rocketq.common.errors import ConfigError
from rocketq.remoting.errors import RemotingConnectError, RemotingSendRequestError
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.frame import FrameDecoder, encode_frame
from rocketq.remoting.transport import (
    ClientConfig,
    ConnectionListener,
    RemotingClient,
    RemotingServer,
    ServerConfig,
)
from rocketq.remoting.transport.client import parse_addr
from rocketq.remoting.transport.connection import Connection
from rocketq.remoting.transport.loops import LOOP_FACTORIES, loop_factory, run, uvloop_available
from rocketq.remoting.transport.response_table import ResponseFuture


class Echo:
    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(0, body=request.body)


async def test_on_commands_routes_responses_and_requests_in_one_corked_batch() -> None:
    server = RemotingServer(ServerConfig.model_validate({"listen_port": 0}))
    server.register_processor(10, Echo())
    server._bind_loop()
    conn = FakeConnection()
    loop = asyncio.get_running_loop()
    pending = RemotingCommand.request(39)
    fut = loop.create_future()
    server.responses.add(ResponseFuture(pending.opaque, conn, pending, fut, loop.time() + 3, 3000))
    request = RemotingCommand.request(10, None, b"ping")
    answer = pending.make_response(0, remark="from the client")
    server.on_commands(conn, [request, answer])  # type: ignore[arg-type]
    assert fut.result() is answer
    (response,) = conn.sent
    assert response.body == b"ping" and response.opaque == request.opaque
    assert conn.corked == 0  # uncorked again


async def test_listeners_hear_events_and_a_failing_listener_is_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[str] = []

    class Broken(ConnectionListener):
        def on_connect(self, conn: Any) -> None:
            raise RuntimeError("listener bug")

    class Recorder(ConnectionListener):
        def on_connect(self, conn: Any) -> None:
            events.append("connect")

        def on_close(self, conn: Any) -> None:
            events.append("close")

    client = RemotingClient()
    client.add_connection_listener(Broken())
    client.add_connection_listener(Recorder())
    conn = FakeConnection()
    client.on_connection_made(conn)  # type: ignore[arg-type]
    client.on_connection_lost(conn, None)  # type: ignore[arg-type]
    assert events == ["connect", "close"]
    assert "listener bug" in caplog.text or "Broken.on_connect failed" in caplog.text


def test_server_config_takes_rocketmq_names() -> None:
    config = ServerConfig.build(
        {
            "listenPort": "10911",
            "serverSelectorThreads": 3,
            "serverChannelMaxIdleTimeSeconds": 30,
            "eventLoop": "asyncio",
        }
    )
    assert (config.listen_port, config.server_selector_threads, config.server_channel_max_idle_time_s) == (
        10911,
        3,
        30,
    )
    assert config.loop == "asyncio"
    defaults = ServerConfig.model_validate({})
    assert (defaults.server_channel_max_idle_time_s, defaults.server_oneway_semaphore_value) == (120, 256)
    with pytest.raises(ConfigError, match="listenPort"):
        ServerConfig.build({"listenPort": 70000})
    with pytest.raises(ConfigError, match="unknown key"):
        ServerConfig.build({"listenPortt": 1})


def test_client_config_defaults_match_rocketmq() -> None:
    config = ClientConfig.model_validate({})
    assert config.client_async_semaphore_value == 65535
    assert config.client_oneway_semaphore_value == 256
    assert config.connect_timeout_ms == 3000
    assert ClientConfig.build({"clientCloseSocketIfTimeout": "true"}).client_close_socket_if_timeout


def test_loop_registry() -> None:
    assert set(LOOP_FACTORIES) == {"auto", "asyncio", "uvloop"}
    loop = loop_factory("asyncio")()
    try:
        assert isinstance(loop, asyncio.AbstractEventLoop)
    finally:
        loop.close()
    with pytest.raises(ConfigError, match="unknown event loop"):
        loop_factory("trio")
    if uvloop_available():
        import uvloop

        assert loop_factory("auto") is uvloop.new_event_loop


def test_run_on_plain_asyncio() -> None:
    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert run(which(), "asyncio").startswith("asyncio")


@pytest.mark.parametrize(
    ("addr", "expected"),
    [("127.0.0.1:9876", ("127.0.0.1", 9876)), ("[::1]:10911", ("::1", 10911)), (" host:1 ", ("host", 1))],
)
def test_parse_addr(addr: str, expected: tuple[str, int]) -> None:
    assert parse_addr(addr) == expected


@pytest.mark.parametrize("addr", ["", "127.0.0.1", "127.0.0.1:", ":9876", "h:0", "h:99999", "h:x"])
def test_parse_addr_rejects(addr: str) -> None:
    with pytest.raises(RemotingConnectError, match="bad address"):
        parse_addr(addr)


async def test_client_refuses_work_after_shutdown() -> None:
    client = RemotingClient()
    await client.shutdown()
    with pytest.raises(RemotingConnectError, match="shut down"):
        await client.invoke_sync("127.0.0.1:1", RemotingCommand.request(10), 100)
    fut = client.invoke_async("127.0.0.1:1", RemotingCommand.request(10), 100)
    with pytest.raises(RemotingConnectError):
        await asyncio.wait_for(fut, 1)


def test_response_code_constants_used_by_dispatch() -> None:
    assert (ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_BUSY, ResponseCode.REQUEST_CODE_NOT_SUPPORTED) == (
        1,
        2,
        3,
    )


async def test_sync_request_is_written_then_registered_and_a_refused_one_never_is() -> None:
    server = RemotingServer(ServerConfig.model_validate({"listen_port": 0}))
    server._bind_loop()
    transport = MockTransport()
    conn = Connection(server, server.settings)
    conn.connection_made(transport)  # type: ignore[arg-type]
    request = RemotingCommand.request(10, {"k": "v"}, b"body")
    task = asyncio.ensure_future(server.invoke_sync(conn, request, 3000))
    await asyncio.sleep(0)
    (sent,) = FrameDecoder().feed(transport.data)
    assert (sent.opaque, sent.body, sent.ext_fields) == (request.opaque, b"body", {"k": "v"})
    assert request.opaque in server.responses
    conn.data_received(encode_frame(request.make_response(0, remark="answered")))
    assert (await asyncio.wait_for(task, 1)).remark == "answered"
    assert len(server.responses) == 0
    conn.close("test")
    with pytest.raises(RemotingSendRequestError):
        await server.invoke_sync(conn, RemotingCommand.request(10), 3000)
    assert len(server.responses) == 0
