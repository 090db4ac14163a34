"""Test processors and helpers shared by the remoting integration tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport import RemotingServer


class EchoProcessor:
    """Answers with the request's body and extFields; counts what it saw."""

    def __init__(self) -> None:
        self.seen: list[RemotingCommand] = []
        self.oneway_seen = asyncio.Event()

    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand | None:
        self.seen.append(request)
        if request.is_oneway:
            self.oneway_seen.set()
            return None
        return request.make_response(0, remark="echo", ext_fields=request.ext_fields, body=request.body)


class GateProcessor:
    """Holds every request until `gate` is set (a slow or stuck processor)."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.entered = 0
        self.entered_event = asyncio.Event()

    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand | None:
        self.entered += 1
        self.entered_event.set()
        await self.gate.wait()
        return request.make_response(0, body=request.body)


def addr_of(server: RemotingServer) -> str:
    return f"127.0.0.1:{server.port}"


async def wait_for_condition(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Poll `predicate` until true; fail the test at the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout_s}s")
        await asyncio.sleep(0.01)
