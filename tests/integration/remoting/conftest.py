"""Fixtures for the transport over real loopback sockets: servers on port 0, clients, test processors.

Every async test here runs on both plain asyncio and uvloop (when installed): the loop is a
pytest-asyncio loop factory parameter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from rocketq.remoting.transport import ClientConfig, RemotingClient, RemotingServer, ServerConfig
from rocketq.remoting.transport.loops import loop_factory, uvloop_available


def pytest_asyncio_loop_factories(config: Any, item: Any) -> dict[str, Any]:
    factories: dict[str, Any] = {"asyncio": loop_factory("asyncio")}
    if uvloop_available():
        factories["uvloop"] = loop_factory("uvloop")
    return factories


ServerFactory = Callable[..., Awaitable[RemotingServer]]


@pytest.fixture
async def server_factory() -> AsyncIterator[ServerFactory]:
    """`await server_factory(**config)` -> a started server on 127.0.0.1, port 0 by default."""
    servers: list[RemotingServer] = []

    async def make(setup: Callable[[RemotingServer], None] | None = None, **overrides: Any) -> RemotingServer:
        values: dict[str, Any] = {"listen_port": 0, "shutdown_timeout_ms": 1000}
        values.update(overrides)
        server = RemotingServer(ServerConfig.model_validate(values))
        if setup is not None:
            setup(server)
        await server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        await server.shutdown()


@pytest.fixture
async def client_factory() -> AsyncIterator[Callable[..., RemotingClient]]:
    clients: list[RemotingClient] = []

    def make(**overrides: Any) -> RemotingClient:
        client = RemotingClient(ClientConfig.model_validate(overrides))
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.shutdown()


@pytest.fixture
async def client(client_factory: Callable[..., RemotingClient]) -> RemotingClient:
    return client_factory()
