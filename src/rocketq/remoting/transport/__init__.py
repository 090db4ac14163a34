"""asyncio transport: the only place sockets exist (server, client, connection, dispatch).

Public names: RemotingServer, RemotingClient, ServerConfig, ClientConfig, Connection,
ConnectionListener, RequestProcessor, Executor, RPCHook.
"""

from rocketq.common.tls import ServerTls, TlsMode
from rocketq.remoting.transport.client import RemotingClient
from rocketq.remoting.transport.config import ClientConfig, ServerConfig
from rocketq.remoting.transport.connection import Connection
from rocketq.remoting.transport.dispatch import Executor, ProcessorRegistry, RequestProcessor
from rocketq.remoting.transport.endpoint import ConnectionListener
from rocketq.remoting.transport.hooks import RPCHook
from rocketq.remoting.transport.server import RemotingServer

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
