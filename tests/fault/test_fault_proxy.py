"""FaultProxy against a tiny echo server on loopback: relay, delay, blackhole, reset, refuse, cut mid-frame.

Every wait is on a condition with a deadline (the proxy's counters, the echo server's record of what
it received, a closed socket); the only timing assertion is a lower bound, which a delay guarantees.
The last test puts the proxy in front of a real broker and a RemotingClient.
"""

from __future__ import annotations

import asyncio
import os
import struct
import time
from collections.abc import AsyncIterator

import pytest

from rocketq.remoting.errors import RemotingError, RemotingTimeoutError
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.offset import GetMaxOffsetRequestHeader
from rocketq.remoting.transport import RemotingClient
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.proxy import Direction, FaultProxy
from rocketq.testing.waiting import wait_for

TIMEOUT_S = 5.0


class EchoServer:
    """Echoes every byte back; records what each connection received and whether it ended."""

    def __init__(self) -> None:
        self.received: list[bytearray] = []
        self.ended: list[str] = []  # "eof" or "reset", per connection, in the order they ended
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> EchoServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got = bytearray()
        self.received.append(got)
        try:
            while data := await reader.read(65536):
                got += data
                writer.write(data)
                await writer.drain()
            self.ended.append("eof")
        except ConnectionError:
            self.ended.append("reset")
        finally:
            writer.close()

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
async def echo() -> AsyncIterator[EchoServer]:
    server = await EchoServer().start()
    yield server
    await server.close()


@pytest.fixture
async def proxy(echo: EchoServer) -> AsyncIterator[FaultProxy]:
    async with FaultProxy(echo.addr) as relay:
        yield relay


async def connect(proxy: FaultProxy) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(proxy.host, proxy.port)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def read_until_closed(reader: asyncio.StreamReader) -> tuple[bytes, str]:
    """Everything until the peer closes: (bytes, "eof" | "reset")."""
    got = bytearray()
    try:
        while data := await asyncio.wait_for(reader.read(65536), TIMEOUT_S):
            got += data
    except ConnectionResetError:
        return bytes(got), "reset"
    return bytes(got), "eof"


async def test_relays_both_ways_byte_for_byte(proxy: FaultProxy, echo: EchoServer) -> None:
    reader, writer = await connect(proxy)
    payload = os.urandom(1 << 20)
    writer.write(payload)
    await writer.drain()
    assert await asyncio.wait_for(reader.readexactly(len(payload)), TIMEOUT_S) == payload
    assert proxy.connection_count == 1
    writer.write_eof()  # a FIN travels through: the echo server sees EOF and closes, so do we
    assert await read_until_closed(reader) == (b"", "eof")
    await wait_for(lambda: echo.ended == ["eof"], what="the echo server to see EOF")
    await wait_for(lambda: proxy.connection_count == 0, what="the link to be gone")
    assert echo.received[0] == payload
    assert proxy.stats[Direction.UPSTREAM].bytes_forwarded == len(payload)
    assert proxy.stats[Direction.DOWNSTREAM].bytes_forwarded == len(payload)
    writer.close()


@pytest.mark.parametrize("direction", [Direction.UPSTREAM, Direction.DOWNSTREAM, Direction.BOTH])
async def test_a_delay_holds_each_chunk_and_is_undone_on_exit(
    proxy: FaultProxy, direction: Direction
) -> None:
    reader, writer = await connect(proxy)
    delay_s = 0.3
    with proxy.delay(delay_s, direction):
        started = time.monotonic()
        writer.write(b"ping")
        assert await asyncio.wait_for(reader.readexactly(4), TIMEOUT_S) == b"ping"
        assert time.monotonic() - started >= delay_s * (2 if direction is Direction.BOTH else 1) * 0.95
    assert proxy.faults[Direction.UPSTREAM].delay_s == proxy.faults[Direction.DOWNSTREAM].delay_s == 0
    writer.write(b"pong")
    assert await asyncio.wait_for(reader.readexactly(4), TIMEOUT_S) == b"pong"
    writer.close()


async def test_a_delay_keeps_the_order_of_chunks(proxy: FaultProxy) -> None:
    reader, writer = await connect(proxy)
    with proxy.delay(0.05, Direction.UPSTREAM):
        for i in range(50):
            writer.write(b"%03d" % i)
            await writer.drain()
            await asyncio.sleep(0)  # separate chunks
        expected = b"".join(b"%03d" % i for i in range(50))
        assert await asyncio.wait_for(reader.readexactly(len(expected)), TIMEOUT_S) == expected
    writer.close()


async def test_an_upstream_blackhole_swallows_requests_and_keeps_the_connection(
    proxy: FaultProxy, echo: EchoServer
) -> None:
    reader, writer = await connect(proxy)
    writer.write(b"before")
    assert await asyncio.wait_for(reader.readexactly(6), TIMEOUT_S) == b"before"
    with proxy.blackhole(Direction.UPSTREAM):
        writer.write(b"lost in the hole")
        await writer.drain()
        await wait_for(
            lambda: proxy.stats[Direction.UPSTREAM].bytes_dropped == 16, what="the bytes to be dropped"
        )
        assert bytes(echo.received[0]) == b"before"
    writer.write(b"after")
    assert await asyncio.wait_for(reader.readexactly(5), TIMEOUT_S) == b"after"
    assert bytes(echo.received[0]) == b"beforeafter" and proxy.connection_count == 1
    writer.close()


async def test_a_downstream_blackhole_swallows_answers(proxy: FaultProxy, echo: EchoServer) -> None:
    reader, writer = await connect(proxy)
    with proxy.blackhole(Direction.DOWNSTREAM):
        writer.write(b"unanswered")
        await wait_for(lambda: bytes(echo.received[0]) == b"unanswered", what="the server to receive")
        await wait_for(
            lambda: proxy.stats[Direction.DOWNSTREAM].bytes_dropped == 10, what="the answer to be dropped"
        )
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(reader.read(1), 0.05)  # the dropped answer never arrives
    writer.write(b"x")
    assert await asyncio.wait_for(reader.readexactly(1), TIMEOUT_S) == b"x"
    writer.close()


async def test_reset_all_sends_rst_both_ways(proxy: FaultProxy, echo: EchoServer) -> None:
    reader, writer = await connect(proxy)
    writer.write(b"hello")
    assert await asyncio.wait_for(reader.readexactly(5), TIMEOUT_S) == b"hello"
    assert proxy.reset_all() == 1
    assert await read_until_closed(reader) == (b"", "reset")
    await wait_for(lambda: echo.ended == ["reset"], what="the server to see the reset")
    assert proxy.connection_count == 0
    writer.close()
    # the proxy itself keeps serving
    reader2, writer2 = await connect(proxy)
    writer2.write(b"again")
    assert await asyncio.wait_for(reader2.readexactly(5), TIMEOUT_S) == b"again"
    writer2.close()


async def test_rejecting_resets_new_connections_only(proxy: FaultProxy, echo: EchoServer) -> None:
    reader, writer = await connect(proxy)
    writer.write(b"1")
    assert await asyncio.wait_for(reader.readexactly(1), TIMEOUT_S) == b"1"
    with proxy.rejecting_new():
        refused_reader, refused_writer = await connect(proxy)
        assert (await read_until_closed(refused_reader))[1] in ("reset", "eof")
        refused_writer.close()
        writer.write(b"2")  # the existing connection is untouched
        assert await asyncio.wait_for(reader.readexactly(1), TIMEOUT_S) == b"2"
    assert len(echo.received) == 1  # the refused connection never reached the server
    writer.close()


async def test_a_daemon_that_is_down_looks_down_through_the_proxy() -> None:
    server = await EchoServer().start()
    addr = server.addr
    await server.close()
    async with FaultProxy(addr) as proxy:
        reader, writer = await connect(proxy)
        assert (await read_until_closed(reader))[1] in ("reset", "eof")
        writer.close()


@pytest.mark.parametrize("chunking", ["one-write", "byte-by-byte"])
async def test_cut_forwards_half_of_the_next_frame_then_resets(
    proxy: FaultProxy, echo: EchoServer, chunking: str
) -> None:
    reader, writer = await connect(proxy)
    whole = frame(b"A" * 60)  # forwarded untouched: the order comes after it
    writer.write(whole)
    assert await asyncio.wait_for(reader.readexactly(len(whole)), TIMEOUT_S) == whole
    order = proxy.cut_frame(Direction.UPSTREAM, then="reset")
    victim = frame(b"B" * 96)  # 100 bytes with its prefix: 50 get through
    following = frame(b"C" * 10)
    if chunking == "one-write":
        writer.write(victim + following)
    else:
        for byte in victim + following:
            writer.write(bytes([byte]))
            await writer.drain()
    await order.wait(TIMEOUT_S)
    assert order.cut_bytes == [50]
    got, how = await read_until_closed(reader)
    assert how == "reset" and got in (b"", victim[: len(got)])
    await wait_for(lambda: echo.ended == ["reset"], what="the server to see the reset")
    assert bytes(echo.received[0]) == whole + victim[:50]
    assert proxy.stats[Direction.UPSTREAM].frames == 1
    writer.close()


async def test_cut_then_close_sends_fin_after_half_an_answer(proxy: FaultProxy, echo: EchoServer) -> None:
    reader, writer = await connect(proxy)
    order = proxy.cut_frame(Direction.DOWNSTREAM, then="close")
    answer = frame(b"R" * 200)
    writer.write(answer)  # echoed back: the answer is what gets cut
    await order.wait(TIMEOUT_S)
    got, how = await read_until_closed(reader)
    assert (got, how) == (answer[:102], "eof")
    assert bytes(echo.received[0]) == answer  # the request itself went through whole
    writer.close()


async def test_cut_then_stall_leaves_the_connection_open_and_silent(
    proxy: FaultProxy, echo: EchoServer
) -> None:
    reader, writer = await connect(proxy)
    order = proxy.cut_frame(Direction.UPSTREAM, then="stall", count=1)
    writer.write(frame(b"S" * 16) + frame(b"T" * 16))
    await order.wait(TIMEOUT_S)
    await wait_for(lambda: bytes(echo.received[0]) == frame(b"S" * 16)[:10], what="half a frame to arrive")
    # the other direction still flows: the echo of the half frame comes back
    assert await asyncio.wait_for(reader.readexactly(10), TIMEOUT_S) == frame(b"S" * 16)[:10]
    writer.write(b"more")
    await writer.drain()
    await wait_for(
        lambda: proxy.stats[Direction.UPSTREAM].bytes_dropped >= 10 + 20 + 4, what="the rest to be dropped"
    )
    assert bytes(echo.received[0]) == frame(b"S" * 16)[:10] and proxy.connection_count == 1
    assert echo.ended == []
    writer.close()


async def test_several_cuts_apply_to_the_next_frames_of_any_connection(
    proxy: FaultProxy, echo: EchoServer
) -> None:
    order = proxy.cut_frame(Direction.UPSTREAM, then="reset", count=2)
    conns = [await connect(proxy) for _ in range(3)]
    for _, writer in conns[:2]:
        writer.write(frame(b"x" * 36))
    await order.wait(TIMEOUT_S)
    assert order.cut_bytes == [20, 20]
    _, writer = conns[2]
    writer.write(frame(b"y" * 36))  # no order left: forwarded whole
    assert await asyncio.wait_for(conns[2][0].readexactly(40), TIMEOUT_S) == frame(b"y" * 36)
    for _, writer in conns:
        writer.close()


async def test_closing_the_proxy_resets_everything_and_stops_listening(echo: EchoServer) -> None:
    proxy = await FaultProxy(echo.addr).start()
    reader, writer = await connect(proxy)
    writer.write(b"z")
    assert await asyncio.wait_for(reader.readexactly(1), TIMEOUT_S) == b"z"
    await proxy.close()
    assert (await read_until_closed(reader))[1] == "reset"
    with pytest.raises(OSError):
        await connect(proxy)
    writer.close()


async def test_in_front_of_a_broker(cluster_factory: ClusterFactory) -> None:
    """A real client through the proxy: a delayed answer times out, a cut answer fails the call, and
    after each fault the same client works again (it reconnects)."""
    cluster = await cluster_factory(namesrv_count=0, broker_overrides={"mappedFileSizeCommitLog": 16 << 20})
    async with FaultProxy(cluster.brokers[0].addr) as proxy:
        client = RemotingClient()
        try:

            async def max_offset(timeout_ms: int = 3000) -> RemotingCommand:
                header = GetMaxOffsetRequestHeader(topic="TBW102", queue_id=0).to_ext_fields()
                request = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header)
                return await client.invoke_sync(proxy.addr, request, timeout_ms)

            assert (await max_offset()).code == ResponseCode.SUCCESS
            with proxy.delay(1.0, Direction.DOWNSTREAM), pytest.raises(RemotingTimeoutError):
                await max_offset(timeout_ms=300)
            order = proxy.cut_frame(Direction.DOWNSTREAM, then="reset")
            with pytest.raises(RemotingError):
                await max_offset()
            await order.wait(TIMEOUT_S)
            response = await wait_for(lambda: max_offset(), what="a call after the cut", timeout_s=TIMEOUT_S)
            assert response.code == ResponseCode.SUCCESS
            assert proxy.accepted >= 2  # the client reconnected after the reset
        finally:
            await client.shutdown()
    assert cluster.brokers[0].running
