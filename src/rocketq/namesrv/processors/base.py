"""What the NameServer's request handlers share: their signature, the context they read, responses.

A handler is a plain function of (peer, request) -> response, synchronous because every NameServer
operation is an in-memory table update (the KV persist is one small atomic write), which keeps the
handlers testable without sockets or an event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.kv_config import KVConfigManager
from rocketq.namesrv.route_info import RouteInfoManager
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand


class Peer(Protocol):
    """The part of a transport Connection the handlers use (its identity and remote address)."""

    @property
    def remote_addr(self) -> str: ...


Handler = Callable[[Peer, RemotingCommand], "RemotingCommand | None"]


@dataclass(slots=True)
class NamesrvContext:
    """The state every handler works on."""

    config: NamesrvConfig
    routes: RouteInfoManager
    kv: KVConfigManager


def ok(
    request: RemotingCommand, ext_fields: dict[str, str] | None = None, body: bytes = b""
) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, ext_fields=ext_fields or None, body=body)


def error(request: RemotingCommand, code: int, remark: str) -> RemotingCommand:
    return request.make_response(code, remark=remark)
