"""Fixtures for transport unit tests (no sockets, no sleeps); the doubles live in transport_doubles.py."""

from __future__ import annotations

import asyncio

import pytest
from transport_doubles import FakeOwner, MockTransport

from rocketq.remoting.transport.connection import Connection, ConnectionSettings


@pytest.fixture
def transport() -> MockTransport:
    return MockTransport()


@pytest.fixture
async def owner() -> FakeOwner:
    return FakeOwner(asyncio.get_running_loop())


@pytest.fixture
async def conn(owner: FakeOwner, transport: MockTransport) -> Connection:
    connection = Connection(
        owner, ConnectionSettings(idle_s=120, high_water=1000, low_water=100, max_write_buffer=5000)
    )
    connection.connection_made(transport)  # type: ignore[arg-type]
    return connection
