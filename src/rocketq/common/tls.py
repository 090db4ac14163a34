"""TLS for remoting ports and clients, with the stdlib ssl module.

Port of org.apache.rocketmq.remoting.netty.TlsHelper / TlsSystemConfig and of NettyRemotingServer's
HandshakeHandler. A server runs in one of three modes (Java's TlsMode):
- disabled: plain only; a TLS ClientHello reaches the frame decoder, which refuses it as a bad frame;
- permissive: plain and TLS on the same port: the first byte of a connection decides, 0x16 (a TLS
  handshake record) starts TLS, anything else is a RemotingCommand frame (whose first byte, the high
  byte of its length, is never 0x16 for a frame under 16 MiB);
- enforcing: TLS only; a connection whose first byte is not 0x16 is closed at once.
The first byte is peeked (MSG_PEEK), so nothing is consumed before the protocol is chosen. Waiting
for that byte and the handshake are both bounded by `handshake_timeout_s`; each accepted connection
does this in its own task, so a peer that stalls holds only its own socket.
Clients: `use_tls` encrypts; with a CA file the server's chain is verified against it, without one
it is not (Java's client default, tls.test.mode.enable=true, trusts any certificate). Host names are
not checked: brokers are addressed by the IP the NameServer hands out, as in Java.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("rocketq.remoting")

TLS_HANDSHAKE_BYTE = 0x16  # TLS record type "handshake": the first byte of every ClientHello
DEFAULT_HANDSHAKE_TIMEOUT_S = 10.0


class TlsMode(enum.Enum):
    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"


def server_context(
    cert_path: str, key_path: str, trust_cert_path: str | None = None, need_client_auth: bool = False
) -> ssl.SSLContext:
    """An SSLContext for a server; ssl.SSLError / OSError naming the file when one is unusable."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_path, key_path)
    if trust_cert_path:
        ctx.load_verify_locations(cafile=trust_cert_path)
    if need_client_auth:
        if not trust_cert_path:
            raise ValueError("tlsServerNeedClientAuth=true needs tlsServerTrustCertPath (the clients' CA)")
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_context(
    ca_file: str | None = None, cert_path: str | None = None, key_path: str | None = None
) -> ssl.SSLContext:
    """An SSLContext for a client: verifies the server against `ca_file` when given (see module doc)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False
    if ca_file:
        ctx.load_verify_locations(cafile=ca_file)
        ctx.verify_mode = ssl.CERT_REQUIRED
    else:
        ctx.verify_mode = ssl.CERT_NONE
    if cert_path:
        ctx.load_cert_chain(cert_path, key_path)
    return ctx


@dataclass(frozen=True, slots=True)
class ServerTls:
    """How a listening port treats TLS."""

    mode: TlsMode
    context: ssl.SSLContext | None = None
    handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_S

    @property
    def enabled(self) -> bool:
        return self.mode is not TlsMode.DISABLED and self.context is not None


async def _peek_first_byte(loop: asyncio.AbstractEventLoop, sock: socket.socket, timeout_s: float) -> bytes:
    ready: asyncio.Future[None] = loop.create_future()
    fd = sock.fileno()

    def on_readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, on_readable)
    try:
        async with asyncio.timeout(timeout_s):
            await ready
    finally:
        loop.remove_reader(fd)
    return sock.recv(1, socket.MSG_PEEK)


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return "?"
    return f"{host}:{port}"


async def accept_connection(
    loop: asyncio.AbstractEventLoop,
    sock: socket.socket,
    protocol_factory: Callable[[], asyncio.BaseProtocol],
    tls: ServerTls,
) -> None:
    """Set up one accepted socket as plain or TLS by its first byte; close it if it may not stay."""
    peer = _peer(sock)
    try:
        first = await _peek_first_byte(loop, sock, tls.handshake_timeout_s)
        if not first:
            sock.close()
            return
        if first[0] == TLS_HANDSHAKE_BYTE:
            await loop.connect_accepted_socket(
                protocol_factory, sock, ssl=tls.context, ssl_handshake_timeout=tls.handshake_timeout_s
            )
        elif tls.mode is TlsMode.ENFORCING:
            log.warning(
                "%s: plain connection refused, tlsMode is enforcing (first byte 0x%02x)", peer, first[0]
            )
            sock.close()
        else:
            await loop.connect_accepted_socket(protocol_factory, sock)
    except asyncio.CancelledError:
        sock.close()
        raise
    except TimeoutError:
        log.warning("%s: no TLS handshake within %.1fs, connection closed", peer, tls.handshake_timeout_s)
        sock.close()
    except (OSError, ssl.SSLError) as exc:
        log.warning("%s: TLS handshake failed, connection closed: %s", peer, exc)
        sock.close()


class AcceptTasks:
    """The accept_connection tasks of one loop, held until done and cancelled at shutdown."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        tls: ServerTls,
    ) -> None:
        task = loop.create_task(accept_connection(loop, sock, protocol_factory, tls))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def cancel_all(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def accept_forever(
    loop: asyncio.AbstractEventLoop, sock: socket.socket, adopt: Callable[[socket.socket], object]
) -> None:
    """Accept connections on `sock` until cancelled, handing each (non-blocking) to `adopt`.

    The boss loop of both listeners, the remoting server's and the HA port's (Java's
    NettyRemotingServer boss group). An accept that fails (EMFILE and friends) backs off instead of
    spinning.
    """
    while True:
        try:
            conn_sock, _peer = await loop.sock_accept(sock)
        except asyncio.CancelledError:
            raise
        except OSError as exc:
            log.warning("accept failed: %s", exc)
            await asyncio.sleep(0.1)
            continue
        conn_sock.setblocking(False)
        adopt(conn_sock)


async def serve(
    host: str,
    port: int,
    protocol_factory: Callable[[], asyncio.BaseProtocol],
    tls: ServerTls,
    backlog: int = 1024,
) -> TlsListener:
    """Listen on host:port and set up every connection through accept_connection (the running loop)."""
    sock = socket.create_server(
        (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET, backlog=backlog
    )
    sock.setblocking(False)
    listener = TlsListener(sock, protocol_factory, tls)
    listener.task = asyncio.get_running_loop().create_task(listener.accept_loop())
    return listener


class TlsListener:
    """A listening socket whose connections are chosen plain or TLS (serve() starts it)."""

    def __init__(
        self, sock: socket.socket, protocol_factory: Callable[[], asyncio.BaseProtocol], tls: ServerTls
    ) -> None:
        self.sock = sock
        self.port: int = sock.getsockname()[1]
        self.protocol_factory = protocol_factory
        self.tls = tls
        self.task: asyncio.Task[None] | None = None
        self.accepting = AcceptTasks()

    async def accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        await accept_forever(
            loop,
            self.sock,
            lambda conn_sock: self.accepting.start(loop, conn_sock, self.protocol_factory, self.tls),
        )

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        self.sock.close()
        await self.accepting.cancel_all()
