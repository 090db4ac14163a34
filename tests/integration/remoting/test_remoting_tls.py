"""TLS in the transport itself (in-process server and client, real sockets): permissive mode with
selector threads, client certificates when the server requires them, a handshake error's message."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.common.tls import client_context, server_context
from rocketq.remoting.errors import RemotingConnectError, RemotingError
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport import RemotingClient, RemotingServer, ServerConfig, ServerTls, TlsMode
from rocketq.testing.tls_certs import make_test_ca


class Echo:
    async def process_request(self, conn: object, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(0, "ok", body=cmd.body)


async def call(port: int, ctx: object, body: bytes = b"x" * 100_000) -> RemotingCommand:
    client = RemotingClient(ssl_context=ctx)  # type: ignore[arg-type]
    try:
        return await client.invoke_sync(f"127.0.0.1:{port}", RemotingCommand(code=1, body=body), 10_000)
    finally:
        await client.shutdown()


@pytest.mark.parametrize("selectors", [0, 2])
async def test_permissive_serves_plain_and_tls_on_one_port(tmp_path: Path, selectors: int) -> None:
    ca = make_test_ca(tmp_path)
    leaf = ca.issue("server")
    server = RemotingServer(
        ServerConfig(listen_port=0, server_selector_threads=selectors),
        ServerTls(TlsMode.PERMISSIVE, server_context(leaf.cert, leaf.key), 2.0),
    )
    server.register_processor(1, Echo())
    await server.start()
    try:
        # 3 MiB: a large frame each way, received into its own buffers through the TLS layer too.
        for ctx in (None, client_context(ca.ca)):
            for body in (b"x" * 100_000, bytes(range(256)) * 12_288):
                response = await call(server.port, ctx, body)
                assert response.remark == "ok" and response.body == body
    finally:
        await server.shutdown()


async def test_client_certificate_required(tmp_path: Path) -> None:
    ca = make_test_ca(tmp_path)
    leaf, client_leaf = ca.issue("server"), ca.issue("client")
    server = RemotingServer(
        ServerConfig(listen_port=0),
        ServerTls(TlsMode.ENFORCING, server_context(leaf.cert, leaf.key, ca.ca, need_client_auth=True), 2.0),
    )
    server.register_processor(1, Echo())
    await server.start()
    try:
        assert (
            await call(server.port, client_context(ca.ca, client_leaf.cert, client_leaf.key))
        ).remark == "ok"
        with pytest.raises(RemotingError):
            await call(server.port, client_context(ca.ca))  # no certificate: the server ends the handshake
    finally:
        await server.shutdown()


async def test_tls_client_on_a_plain_port_fails_clearly() -> None:
    server = RemotingServer(ServerConfig(listen_port=0))
    server.register_processor(1, Echo())
    await server.start()
    try:
        with pytest.raises(RemotingConnectError, match=r"TLS connect to 127\.0\.0\.1"):
            await call(server.port, client_context())
    finally:
        await server.shutdown()
