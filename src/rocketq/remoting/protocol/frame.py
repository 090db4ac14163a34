"""Frames (docs/protocol.md 1.2): 4-byte length, 1-byte serialize type + 3-byte header length, header, body.

`FrameDecoder.feed(data)` accepts any split of the input (one byte at a time included) and returns the
complete commands; it raises FrameError and nothing else (h11's fuzz invariant). After a FrameError the
decoder is poisoned: the connection must be closed, as Java's NettyDecoder closes the channel.
"""

from __future__ import annotations

import struct

from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import FrameError
from rocketq.remoting.protocol.header_codec import HEADER_CODECS, codec_for

# Netty counts its 16 MiB limit including the 4-byte length field (LengthFieldBasedFrameDecoder).
MAX_FRAME_BYTES = 16 * 1024 * 1024
MAX_FRAME_LENGTH = MAX_FRAME_BYTES - 4

_HEAD = struct.Struct(">iI")
_TAG = struct.Struct(">I")
_LENGTH = struct.Struct(">i")


_codecs_get = HEADER_CODECS.get
_pack_head = _HEAD.pack
_unpack_head = _HEAD.unpack_from
_join = b"".join


def encode_frame_parts(cmd: RemotingCommand) -> tuple[bytes, bytes]:
    """(length + tag + header, body): a transport can write both without joining them (writelines)."""
    st = cmd.serialize_type
    header = (_codecs_get(st) or codec_for(st)).encode(cmd)
    body = cmd.body or b""
    return _pack_head(4 + len(header) + len(body), (st << 24) | len(header)) + header, body


def encode_frame(cmd: RemotingCommand) -> bytes:
    """The full frame of `cmd`, length prefix included, with the header codec of its serialize type.

    One buffer, built with one copy of the header and body (no intermediate prefix+header object).
    """
    st = cmd.serialize_type
    header = (_codecs_get(st) or codec_for(st)).encode(cmd)
    body = cmd.body
    if body:
        return _join((_pack_head(4 + len(header) + len(body), (st << 24) | len(header)), header, body))
    return _pack_head(4 + len(header), (st << 24) | len(header)) + header


def decode_frame_payload(payload: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode one frame without its 4-byte length prefix (the header is decoded in place, not copied)."""
    if len(payload) < 4:
        raise FrameError(f"frame of {len(payload)} bytes is shorter than its header tag")
    (tag,) = _TAG.unpack_from(payload, 0)
    header_length = tag & 0xFFFFFF
    if header_length > len(payload) - 4:
        raise FrameError(f"header length {header_length} is beyond the frame ({len(payload) - 4} bytes left)")
    codec = codec_for(tag >> 24)
    cmd = codec.decode(payload[4 : 4 + header_length])
    cmd.body = bytes(payload[4 + header_length :])
    return cmd


# An incomplete frame at least this long gets a buffer of its announced size, filled read by read:
# growing one bytearray read by read to 16 MiB copies it over and over (the allocator moves it), and
# copying it whole when it completes stalls the event loop for every other connection.
_COLLECT_ABOVE_BYTES = 1 << 20


class FrameDecoder:
    """Incremental decoder: buffer bytes, cut whole frames, decode them."""

    __slots__ = ("_big", "_buf", "_failed", "_filled", "_head", "_want", "max_frame_length")

    def __init__(self, max_frame_length: int = MAX_FRAME_LENGTH) -> None:
        self._buf = bytearray()
        self._failed: FrameError | None = None
        self._big: bytearray | None = None  # a large incomplete frame (while _want > 0)
        self._head = b""  # its first bytes, until more arrive (the buffer is made only then)
        self._filled = 0  # bytes of it received
        self._want = 0  # bytes of that frame, its length field included
        self.max_frame_length = max_frame_length

    @property
    def buffered(self) -> int:
        return self._filled if self._want else len(self._buf)

    @property
    def pending_length(self) -> int:
        """The length field of the incomplete frame at the buffer's head (0 before 4 bytes are in)."""
        if self._want:
            return self._want - 4
        buf = self._buf
        return _LENGTH.unpack_from(buf, 0)[0] if len(buf) >= 4 else 0

    def _fill(self, data: bytes | bytearray | memoryview) -> memoryview | None:
        """Copy a read into the large frame; None while it is incomplete, else the bytes past its end."""
        big = self._big
        if big is None:
            # Made at the second read, not when the length field arrives: a connection whose frame
            # does not fit in the server's input budget is paused then and never allocates it.
            big = self._big = bytearray(self._want)
            big[: len(self._head)] = self._head
            self._head = b""
        view = memoryview(data)
        n = min(len(view), self._want - self._filled)
        big[self._filled : self._filled + n] = view[:n]
        self._filled += n
        return None if self._filled < self._want else view[n:]

    def _take_large(self) -> memoryview:
        """The completed large frame's payload (after its length field); the decoder is back to normal."""
        big, self._big = self._big, None
        self._want = self._filled = 0
        assert big is not None  # a complete frame had a second read (a whole one is never collected)
        return memoryview(big)[4:]

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        """Append `data` and return every command it completes; raises FrameError and nothing else."""
        if self._failed is not None:
            raise self._failed
        buf = self._buf
        out: list[RemotingCommand] = []
        source: bytes | bytearray | memoryview
        try:
            if self._want:
                rest = self._fill(data)
                if rest is None:
                    return []
                first = decode_frame_payload(self._take_large())
                return [first, *self.feed(bytes(rest))] if rest else [first]
            if not buf and type(data) is bytes and len(data) >= 8:
                # Fast path: one read that is exactly one frame (request/response ping-pong). The
                # header and body are cut from `data` by slicing (one copy of the body, as the general
                # path makes); anything else (several frames, a partial one, a bad length or type)
                # goes the general way below, which raises the errors.
                length, tag = _unpack_head(data, 0)
                header_end = 8 + (tag & 0xFFFFFF)
                if (
                    length + 4 == len(data)
                    and header_end <= len(data)
                    and 4 <= length <= self.max_frame_length
                ):
                    codec = _codecs_get(tag >> 24)
                    if codec is not None:
                        cmd = codec.decode(data[8:header_end])
                        cmd.body = data[header_end:]
                        return [cmd]
            # Common case: nothing buffered, so frames are cut straight from `data` and only an
            # incomplete tail is copied into the buffer.
            if buf:
                buf += data
                source = buf
            else:
                source = data
            pos = self._cut(source, out)
        except FrameError as exc:
            self._failed = exc
            raise
        except Exception as exc:  # invariant: nothing but FrameError escapes
            self._failed = FrameError(f"undecodable frame: {exc!r}")
            raise self._failed from exc
        if source is buf:
            if pos:
                del buf[:pos]
        elif pos < len(data):
            buf += memoryview(data)[pos:]
        if len(buf) >= 4:
            (length,) = _LENGTH.unpack_from(buf, 0)
            if length >= _COLLECT_ABOVE_BYTES:  # validated by _cut: at most max_frame_length
                self._head = bytes(buf)
                self._filled = len(buf)
                self._want = length + 4
                buf.clear()
        return out

    def _cut(self, source: bytes | bytearray | memoryview, out: list[RemotingCommand]) -> int:
        """Decode the complete frames at the start of `source` into `out`; returns the bytes used."""
        pos = 0
        end = len(source)
        limit = self.max_frame_length
        with memoryview(source) as view:
            while end - pos >= 4:
                (length,) = _LENGTH.unpack_from(view, pos)
                if length < 4 or length > limit:
                    raise FrameError(f"frame length {length} is outside 4..{limit}")
                if end - pos - 4 < length:
                    break
                start = pos + 4
                pos = start + length
                out.append(decode_frame_payload(view[start:pos]))
        return pos
