"""asyncio transport: the only place sockets exist (server, client, connection, dispatch).

Public names: RemotingServer, RemotingClient, ServerConfig, ClientConfig, Connection,
ConnectionListener, RequestProcessor, Executor, RPCHook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketq.common.lazy_names import lazy_getattr

if TYPE_CHECKING:
    from rocketq.common.tls import ServerTls, TlsMode
    from rocketq.remoting.transport.client import RemotingClient
    from rocketq.remoting.transport.config import ClientConfig, ServerConfig
    from rocketq.remoting.transport.connection import Connection
    from rocketq.remoting.transport.dispatch import Executor, ProcessorRegistry, RequestProcessor
    from rocketq.remoting.transport.endpoint import ConnectionListener
    from rocketq.remoting.transport.hooks import RPCHook
    from rocketq.remoting.transport.server import RemotingServer

# Where each public name lives, imported on first use (PEP 562): a client-only process (a Spark reader)
# does not import the server side, nor the validated configurations (pydantic).
_WHERE = {
    "ServerTls": "rocketq.common.tls",
    "TlsMode": "rocketq.common.tls",
    "RemotingClient": "rocketq.remoting.transport.client",
    "ClientConfig": "rocketq.remoting.transport.config",
    "ServerConfig": "rocketq.remoting.transport.config",
    "Connection": "rocketq.remoting.transport.connection",
    "Executor": "rocketq.remoting.transport.dispatch",
    "ProcessorRegistry": "rocketq.remoting.transport.dispatch",
    "RequestProcessor": "rocketq.remoting.transport.dispatch",
    "ConnectionListener": "rocketq.remoting.transport.endpoint",
    "RPCHook": "rocketq.remoting.transport.hooks",
    "RemotingServer": "rocketq.remoting.transport.server",
}

__getattr__ = lazy_getattr(__name__, _WHERE)


__all__ = [
    "ClientConfig",
    "Connection",
    "ConnectionListener",
    "Executor",
    "ProcessorRegistry",
    "RPCHook",
    "RemotingClient",
    "RemotingServer",
    "RequestProcessor",
    "ServerConfig",
    "ServerTls",
    "TlsMode",
]
