"""Test doubles for broker unit tests: a connection without a socket."""

from __future__ import annotations

import itertools
from typing import Any

from rocketq.remoting.protocol.command import RemotingCommand

_ids = itertools.count(1)


class FakeConnection:
    def __init__(self, remote_addr: str = "127.0.0.1:50000") -> None:
        self.id = next(_ids)
        self.remote_addr = remote_addr
        self.local_addr = "127.0.0.1:10911"
        self.is_active = True
        self.attributes: dict[str, Any] = {}
        self.sent: list[RemotingCommand] = []

    def send_response(self, cmd: RemotingCommand) -> None:
        self.sent.append(cmd)

    def close(self) -> None:
        self.is_active = False
