"""Bad frames close only their own connection; idle connections close; listeners hear about both."""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

import pytest
from remoting_helpers import EchoProcessor, addr_of, wait_for_condition

from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.frame import MAX_FRAME_LENGTH, encode_frame
from rocketq.remoting.transport import Connection, ConnectionListener

ECHO = 1000


class Recorder(ConnectionListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.changed = asyncio.Event()

    def _add(self, event: str, conn: Connection) -> None:
        self.events.append((event, conn.id))
        self.changed.set()

    def on_connect(self, conn: Connection) -> None:
        self._add("connect", conn)

    def on_close(self, conn: Connection) -> None:
        self._add("close", conn)

    def on_idle(self, conn: Connection) -> None:
        self._add("idle", conn)

    def on_exception(self, conn: Connection) -> None:
        self._add("exception", conn)

    def kinds(self) -> list[str]:
        return [event for event, _ in self.events]


def _frame(tag: int, header: bytes, body: bytes = b"", length: int | None = None) -> bytes:
    total = 4 + len(header) + len(body) if length is None else length
    return struct.pack(">iI", total, tag) + header + body


_GOOD_JSON = json.dumps({"code": ECHO, "flag": 0, "language": "JAVA", "opaque": 7, "version": 409}).encode()

BAD_FRAMES = {
    "garbage": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "oversize_length": struct.pack(">i", MAX_FRAME_LENGTH + 1) + b"\x00" * 8,
    "negative_length": struct.pack(">i", -5) + b"\x00" * 8,
    "header_longer_than_frame": _frame(len(_GOOD_JSON) + 50, _GOOD_JSON),
    "invalid_json": _frame(12, b'{"code": 10,'),
    "invalid_utf8": _frame(4, b'\xff\xfe"x"'),
    "unknown_serialize_type": _frame((9 << 24) | len(_GOOD_JSON), _GOOD_JSON),
}


async def _read_until_closed(reader: asyncio.StreamReader, timeout_s: float = 5.0) -> bytes:
    data = b""
    async with asyncio.timeout(timeout_s):
        while chunk := await reader.read(65536):
            data += chunk
    return data


@pytest.mark.parametrize("bad", sorted(BAD_FRAMES))
async def test_bad_frame_closes_only_its_connection(server_factory: Any, client: Any, bad: str) -> None:
    recorder = Recorder()
    server = await server_factory(
        lambda s: (s.register_processor(ECHO, EchoProcessor()), s.add_connection_listener(recorder))
    )
    addr = addr_of(server)
    assert (
        await client.invoke_sync(addr, RemotingCommand.request(ECHO, None, b"before"), 3000)
    ).body == b"before"

    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    # A valid request first: it is answered before the bad frame is read.
    writer.write(encode_frame(RemotingCommand.request(ECHO, None, b"ok")))
    await writer.drain()
    answered = await asyncio.wait_for(reader.readexactly(4), 5)
    assert struct.unpack(">i", answered)[0] > 0
    writer.write(BAD_FRAMES[bad])
    await writer.drain()
    await _read_until_closed(reader)  # the server closes it: EOF within the deadline
    writer.close()

    assert (
        await client.invoke_sync(addr, RemotingCommand.request(ECHO, None, b"after"), 3000)
    ).body == b"after"
    while recorder.kinds().count("close") < 1:
        recorder.changed.clear()
        await asyncio.wait_for(recorder.changed.wait(), 5)
    assert recorder.kinds().count("exception") == 1
    assert len(server.connections) == 1


async def test_truncated_frame_then_eof_closes_quietly(server_factory: Any, client: Any) -> None:
    recorder = Recorder()
    server = await server_factory(lambda s: s.add_connection_listener(recorder))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    frame = encode_frame(RemotingCommand.request(ECHO, None, b"x" * 100))
    writer.write(frame[:30])
    await writer.drain()
    writer.write_eof()
    await _read_until_closed(reader)
    writer.close()
    while "close" not in recorder.kinds():
        recorder.changed.clear()
        await asyncio.wait_for(recorder.changed.wait(), 5)
    assert "exception" not in recorder.kinds()


async def test_idle_connection_is_closed(server_factory: Any) -> None:
    recorder = Recorder()
    server = await server_factory(
        lambda s: s.add_connection_listener(recorder), server_channel_max_idle_time_s=0.2
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await _read_until_closed(reader)
    assert loop.time() - started >= 0.15
    writer.close()
    while "close" not in recorder.kinds():
        recorder.changed.clear()
        await asyncio.wait_for(recorder.changed.wait(), 5)
    assert recorder.kinds() == ["connect", "idle", "close"]


async def test_activity_keeps_a_connection_open(server_factory: Any, client_factory: Any) -> None:
    recorder = Recorder()
    server = await server_factory(
        lambda s: (s.register_processor(ECHO, EchoProcessor()), s.add_connection_listener(recorder)),
        server_channel_max_idle_time_s=0.6,
    )
    client = client_factory()
    addr = addr_of(server)
    for _ in range(9):  # 9 x 0.1 s of traffic spans more than one idle period
        await client.invoke_sync(addr, RemotingCommand.request(ECHO), 3000)
        await asyncio.sleep(0.1)
    assert "idle" not in recorder.kinds()


async def test_a_peer_that_never_reads_is_paused_or_dropped(server_factory: Any) -> None:
    """A client pipelining requests without reading answers: the server stops answering it once its
    unsent answers pass the high-water mark (reading paused, requests wait), or drops it at the write
    bound; either way the answers it holds stay bounded."""
    closed: list[str | None] = []
    conns: list[Connection] = []

    class Big:
        async def process_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
            conns.append(conn)
            return request.make_response(0, body=b"r" * 262_144)

    class OnClose(ConnectionListener):
        def on_close(self, conn: Connection) -> None:
            closed.append(conn.close_reason)

    server = await server_factory(
        lambda s: (s.register_processor(ECHO, Big()), s.add_connection_listener(OnClose())),
        write_buffer_high_water_mark_bytes=65_536,
        write_buffer_low_water_mark_bytes=16_384,
        max_write_buffer_bytes=1_048_576,
    )
    _reader, writer = await asyncio.open_connection("127.0.0.1", server.port)  # never read
    request = encode_frame(RemotingCommand.request(ECHO))
    try:
        for _ in range(400):  # 100 MiB of answers if all were answered
            writer.write(request)
            await asyncio.wait_for(writer.drain(), 2)  # times out once the server stops reading us
            await asyncio.sleep(0)
    except (ConnectionError, TimeoutError):
        pass
    assert conns, "the server never answered"
    conn = conns[0]
    await wait_for_condition(lambda: closed or conn.backlog_size > 0)
    if not closed:
        assert conn.transport is not None
        assert conn.transport.get_write_buffer_size() <= 1_048_576
        assert len(conns) < 400 // 4  # answered a few, then stopped: the rest wait unread
    else:
        assert closed == ["write buffer overflow"]
    writer.close()
