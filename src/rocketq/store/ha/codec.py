"""The HA wire format, sans-IO (RocketMQ 4.x HAConnection / HAService.HAClient, 4.9.8).

Two one-way streams over one TCP connection, no framing beyond these:
- slave -> master: the slave's max commit-log offset, 8 bytes big-endian, sent on connect, after data
  arrives and every haSendHeartbeatInterval. The master reads whole 8-byte units and keeps the last one.
- master -> slave: frames of [8-byte commit-log offset][4-byte body size][body], big-endian, a body
  being raw commit-log bytes (records may be split between frames), at most haTransferBatchSize bytes
  and never across a commit-log file; a frame with size 0 is a heartbeat naming where the next data
  starts.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

OFFSET: Final = struct.Struct(">q")
FRAME_HEADER: Final = struct.Struct(">qi")
FRAME_HEADER_SIZE: Final = FRAME_HEADER.size  # 12


class HAProtocolError(ValueError):
    """Bytes that cannot be this protocol (a negative size or offset)."""


def encode_offset(offset: int) -> bytes:
    """The slave's report of its max commit-log offset."""
    return OFFSET.pack(offset)


def encode_frame_header(offset: int, size: int) -> bytes:
    return FRAME_HEADER.pack(offset, size)


def encode_frame(offset: int, body: bytes) -> bytes:
    return FRAME_HEADER.pack(offset, len(body)) + body


class OffsetReader:
    """The master's reader of the slave's reports: feed bytes, get the latest whole report (or None)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> int | None:
        buf = self._buf
        buf += data
        whole = len(buf) - len(buf) % 8
        if not whole:
            return None
        (offset,) = OFFSET.unpack_from(buf, whole - 8)
        del buf[:whole]
        if offset < 0:
            raise HAProtocolError(f"the slave reported a negative offset {offset}")
        return int(offset)


class Frame(NamedTuple):
    offset: int
    body: bytes  # empty for a heartbeat


class FrameReader:
    """The slave's reader of the master's frames: feed bytes, get the whole frames they complete."""

    def __init__(self, max_body: int = 1 << 30) -> None:
        self._buf = bytearray()
        self._max_body = max_body

    def feed(self, data: bytes) -> list[Frame]:
        buf = self._buf
        buf += data
        frames: list[Frame] = []
        pos = 0
        while len(buf) - pos >= FRAME_HEADER_SIZE:
            offset, size = FRAME_HEADER.unpack_from(buf, pos)
            if size < 0 or offset < 0 or size > self._max_body:
                raise HAProtocolError(f"frame header with offset {offset}, size {size}")
            end = pos + FRAME_HEADER_SIZE + size
            if len(buf) < end:
                break
            frames.append(Frame(offset, bytes(buf[pos + FRAME_HEADER_SIZE : end])))
            pos = end
        if pos:
            del buf[:pos]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf)
