"""Frames on a bare socket for fault tests: a connection that never reconnects, and hostile frames.

RawConnection speaks the frame protocol (docs/protocol.md 1.2) directly over one asyncio stream, so a
test sees exactly what the daemon did to *this* connection: an answer, or a close. Unlike
RemotingClient it never reopens a closed connection behind the caller's back, which is what "only
that connection is closed" assertions need. Requests may be pipelined (answers are matched by
opaque); requests the daemon sends us are ignored.

`raw_frame` builds frames that lie (length, header length, serialize type); `HOSTILE_FRAMES` is a
named corpus of them after rocketmq-rust's fuzz/corpus/protocol_decode: each is a
frame a daemon must answer by closing the connection, never by crashing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
from collections.abc import Mapping
from ssl import SSLContext
from types import TracebackType
from typing import Self

from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import FrameError
from rocketq.remoting.protocol.frame import MAX_FRAME_LENGTH, FrameDecoder, encode_frame

DEFAULT_TIMEOUT_S = 10.0


class ConnectionClosedError(ConnectionError):
    """The daemon closed (or reset) this connection; `how` says which."""

    def __init__(self, how: str) -> None:
        super().__init__(f"the connection was closed by the peer ({how})")
        self.how = how


class RawConnection:
    """One TCP connection to a daemon; `await RawConnection.open("127.0.0.1:10911")`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.local_port = int(writer.get_extra_info("sockname")[1])
        self.closed_how: str | None = None  # "eof" / "reset" once the peer closed it
        self.frames_received = 0
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._closed = asyncio.Event()
        self._decoder = FrameDecoder()
        self._reader_task = asyncio.ensure_future(self._read_loop())

    @classmethod
    async def open(
        cls, addr: str, timeout_s: float = DEFAULT_TIMEOUT_S, ssl: SSLContext | None = None
    ) -> Self:
        """Connect (with TLS when `ssl` is given, the handshake within `timeout_s` too)."""
        host, _, port = addr.rpartition(":")
        host = host.strip("[]")
        if ssl is None:
            opening = asyncio.open_connection(host, int(port))
        else:
            opening = asyncio.open_connection(host, int(port), ssl=ssl, server_hostname=host)
        reader, writer = await asyncio.wait_for(opening, timeout_s)
        return cls(reader, writer)

    @property
    def is_closed(self) -> bool:
        return self._closed.is_set()

    # -- reading --------------------------------------------------------------------------------
    async def _read_loop(self) -> None:
        how = "eof"
        try:
            while data := await self.reader.read(65536):
                try:
                    commands = self._decoder.feed(data)
                except FrameError:
                    how = "undecodable answer"
                    break
                for cmd in commands:
                    self.frames_received += 1
                    waiter = self._pending.pop(cmd.opaque, None) if cmd.is_response else None
                    if waiter is not None and not waiter.done():
                        waiter.set_result(cmd)
        except (ConnectionError, OSError):
            how = "reset"
        self.closed_how = how
        self._closed.set()
        for waiter in self._pending.values():
            if not waiter.done():
                waiter.set_exception(ConnectionClosedError(how))
        self._pending.clear()

    async def wait_closed(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> str:
        """Until the peer closes the connection: "eof" or "reset"; TimeoutError if it stays open."""
        try:
            await asyncio.wait_for(self._closed.wait(), timeout_s)
        except TimeoutError:
            raise TimeoutError(
                f"the connection from port {self.local_port} is still open after {timeout_s}s"
            ) from None
        assert self.closed_how is not None
        return self.closed_how

    # -- writing --------------------------------------------------------------------------------
    async def send_bytes(self, data: bytes) -> None:
        """Write raw bytes (anything at all); ConnectionClosedError if the peer is gone."""
        if self.is_closed:
            raise ConnectionClosedError(self.closed_how or "eof")
        try:
            self.writer.write(data)
            await self.writer.drain()
        except (ConnectionError, OSError) as exc:
            raise ConnectionClosedError("reset") from exc

    def start_request(self, cmd: RemotingCommand) -> asyncio.Future[RemotingCommand]:
        """Write `cmd` now and return the future of its answer (pipelining)."""
        if self.is_closed:
            raise ConnectionClosedError(self.closed_how or "eof")
        waiter: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._pending[cmd.opaque] = waiter
        self.writer.write(encode_frame(cmd))
        return waiter

    async def request(self, cmd: RemotingCommand, timeout_s: float = DEFAULT_TIMEOUT_S) -> RemotingCommand:
        """Send `cmd` and wait for its answer; ConnectionClosedError if the peer closes first."""
        waiter = self.start_request(cmd)
        try:
            await self.writer.drain()
            return await asyncio.wait_for(waiter, timeout_s)
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise ConnectionClosedError("reset") from exc
        finally:
            self._pending.pop(cmd.opaque, None)

    async def call(
        self,
        code: int,
        ext_fields: Mapping[str, object] | None = None,
        body: bytes = b"",
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        """A request of `code` with `ext_fields` (values turned into strings, as on the wire)."""
        ext = {k: _ext_value(v) for k, v in ext_fields.items()} if ext_fields is not None else None
        cmd = RemotingCommand.request(code, ext, body, serialize_type=serialize_type)
        return await self.request(cmd, timeout_s)

    # -- closing --------------------------------------------------------------------------------
    async def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.writer.wait_closed(), 2.0)
        self._reader_task.cancel()
        with contextlib.suppress(BaseException):
            await self._reader_task

    def abort(self) -> None:
        """Close without waiting (as a crashing client does)."""
        self.writer.transport.abort()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _ext_value(value: object) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)


# -- frames that lie ------------------------------------------------------------------------------
def raw_frame(
    header: bytes,
    body: bytes = b"",
    *,
    serialize_type: int = SerializeType.JSON,
    length: int | None = None,
    header_length: int | None = None,
) -> bytes:
    """A frame from parts, with `length` / `header_length` overridable to lie about the sizes."""
    h_len = len(header) if header_length is None else header_length
    total = 4 + len(header) + len(body) if length is None else length
    return struct.pack(">iI", total, ((serialize_type & 0xFF) << 24) | (h_len & 0xFFFFFF)) + header + body


def json_header(code: int = 105, **fields: object) -> bytes:
    """A JSON request header as Java writes it (language, version, opaque, flag)."""
    doc: dict[str, object] = {"code": code, "language": "JAVA", "version": 409, "opaque": 1, "flag": 0}
    doc.update(fields)
    return json.dumps(doc).encode()


def _binary_header_with_overlong_ext() -> bytes:
    # ROCKETMQ binary header (docs/protocol.md 1.6): code, language, version, opaque, flag, remark, ext;
    # the ext section claims a key of 60,000 bytes inside a 30-byte section.
    ext = struct.pack(">h", 60_000 & 0x7FFF) + b"k" * 4 + struct.pack(">i", 2) + b"v1"
    return struct.pack(">hbhii", 105, 0, 409, 1, 0) + struct.pack(">i", 0) + struct.pack(">i", len(ext)) + ext


HOSTILE_FRAMES: dict[str, bytes] = {
    "empty_frame": struct.pack(">i", 0),
    "length_shorter_than_the_tag": struct.pack(">i", 2) + b"\x00\x00",
    "negative_length": struct.pack(">i", -8) + b"\x00" * 8,
    "oversize_frame": struct.pack(">iI", MAX_FRAME_LENGTH + 1, 2) + b"{}",
    "max_int_length": struct.pack(">iI", 0x7FFFFFFF, 2) + b"{}",
    "header_longer_than_frame": raw_frame(json_header(), header_length=4096),
    "header_length_max_24_bits": raw_frame(json_header(), header_length=0xFFFFFF),
    "bad_json_header": raw_frame(b'{"code":105,"language":"JAVA",'),
    "json_header_not_an_object": raw_frame(b"[105, 0, 409]"),
    "json_code_not_a_number": raw_frame(json_header(code="abc")),  # type: ignore[arg-type]
    "json_ext_fields_not_an_object": raw_frame(json_header(extFields=[1, 2])),
    "invalid_utf8_header": raw_frame(b'{"code":105,"remark":"\xff\xfe\xc3\x28","opaque":1}'),
    "json_invalid_utf8_ext_field": raw_frame(b'{"code":105,"opaque":1,"extFields":{"topic":"\xc0\xaf"}}'),
    "unknown_serialize_type": raw_frame(json_header(), serialize_type=7),
    "serialize_type_255": raw_frame(json_header(), serialize_type=0xFF),
    "rocketmq_overlong_ext_field": raw_frame(
        _binary_header_with_overlong_ext(), serialize_type=SerializeType.ROCKETMQ
    ),
    "rocketmq_truncated_header": raw_frame(b"\x00\x69\x00", serialize_type=SerializeType.ROCKETMQ),
    "msgpack_garbage": raw_frame(b"\xc1\xc1\xc1", serialize_type=SerializeType.MSGPACK),
}
