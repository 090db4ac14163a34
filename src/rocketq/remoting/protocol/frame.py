"""Frames (docs/protocol.md 1.2): 4-byte length, 1-byte serialize type + 3-byte header length, header, body.

`FrameDecoder.feed(data)` accepts any split of the input (one byte at a time included) and returns the
complete commands; it raises FrameError and nothing else (h11's fuzz invariant). After a FrameError the
decoder is poisoned: the connection must be closed, as Java's NettyDecoder closes the channel.
"""

from __future__ import annotations

import struct

from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.compiled import cheader
from rocketq.remoting.protocol.errors import FrameError
from rocketq.remoting.protocol.header_codec import HEADER_CODECS, codec_for
from rocketq.remoting.protocol.large_frame import COLLECT_ABOVE_BYTES, PREFIX_BYTES, LargeFrame

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
_MSGPACK = SerializeType.MSGPACK
# The compiled whole-frame writer for msgpack headers (None without the accelerator): length, tag,
# header and body written into one buffer, the header's fields read from the command's slots.
_compiled_frame = None if cheader is None else cheader.encode_frame
# The compiled cut of consecutive msgpack frames (FrameDecoder._cut; None without the accelerator).
_cut_compiled = None if cheader is None else cheader.cut_frames


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
    if st == _MSGPACK and _compiled_frame is not None:
        frame: bytes | None = _compiled_frame(cmd)
        if frame is not None:
            return frame
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
    codec = _codecs_get(tag >> 24) or codec_for(tag >> 24)  # the look-up inline; codec_for raises
    cmd = codec.decode(payload[4 : 4 + header_length])
    cmd.body = bytes(payload[4 + header_length :])
    return cmd


class FrameDecoder:
    """Incremental decoder: buffer bytes, cut whole frames, decode them.

    Two ways in: `feed(data)` takes a read the caller owns (asyncio.Protocol.data_received); for an
    asyncio.BufferedProtocol, `receive_buffer()` says where the next read of a large frame goes (None:
    into the caller's own read buffer, then `feed` it) and `received(n)` counts what was read there.
    """

    __slots__ = ("_buf", "_failed", "_large", "max_frame_length")

    def __init__(self, max_frame_length: int = MAX_FRAME_LENGTH) -> None:
        self._buf = bytearray()
        self._failed: FrameError | None = None
        self._large: LargeFrame | None = (
            None  # a large incomplete frame (rocketq.remoting.protocol.large_frame)
        )
        self.max_frame_length = max_frame_length

    @property
    def buffered(self) -> int:
        large = self._large
        return large.filled if large is not None else len(self._buf)

    @property
    def pending_length(self) -> int:
        """The length field of the incomplete frame at the buffer's head (0 before 4 bytes are in)."""
        large = self._large
        if large is not None:
            return large.length
        buf = self._buf
        length: int = _LENGTH.unpack_from(buf, 0)[0] if len(buf) >= 4 else 0
        return length

    def receive_buffer(self) -> memoryview | None:
        """Where the next read should go: the free part of the large frame being received, else None."""
        large = self._large
        if large is None or self._failed is not None:
            return None
        return large.buffer()

    def received(self, nbytes: int) -> list[RemotingCommand]:
        """`nbytes` were read into the last receive_buffer(); the command they complete, if they do."""
        if self._failed is not None:
            raise self._failed
        large = self._large
        assert large is not None
        large.filled += nbytes
        return [self._take_large()] if large.complete else []

    def _take_large(self) -> RemotingCommand:
        large, self._large = self._large, None
        assert large is not None
        try:
            return large.take()
        except Exception as exc:
            failed = self._poison(exc)
            if failed is exc:
                raise
            raise failed from exc

    def _poison(self, exc: Exception) -> FrameError:
        """Fail the decoder for good; the FrameError to raise (invariant: nothing but FrameError escapes)."""
        self._failed = exc if isinstance(exc, FrameError) else FrameError(f"undecodable frame: {exc!r}")
        return self._failed

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        """Append `data` and return every command it completes; raises FrameError and nothing else."""
        if self._failed is not None:
            raise self._failed
        buf = self._buf
        out: list[RemotingCommand] = []
        source: bytes | bytearray | memoryview
        large = self._large
        if large is not None:
            view = memoryview(data)
            used = large.write(view)
            if not large.complete:
                return []
            first = self._take_large()
            return [first, *self.feed(view[used:])] if used < len(view) else [first]
        try:
            kind = type(data)
            if not buf and (kind is bytes or kind is memoryview) and len(data) >= 8:
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
                        body = data[header_end:]
                        cmd.body = body if type(body) is bytes else bytes(body)
                        return [cmd]
            # Common case: nothing buffered, so frames are cut straight from `data` and only an
            # incomplete tail is copied into the buffer.
            if buf:
                buf += data
                source = buf
            else:
                source = data
            pos = self._cut(source, out)
            if source is buf:
                if pos:
                    del buf[:pos]
            elif pos < len(data):
                if self._starts_large(data, pos):
                    return out  # its bytes went straight into its own buffers, not through `buf` first
                buf += memoryview(data)[pos:]
            if self._starts_large(buf, 0):
                buf.clear()
        except Exception as exc:
            failed = self._poison(exc)
            if failed is exc:
                raise
            raise failed from exc
        return out

    def _starts_large(self, source: bytes | bytearray | memoryview, pos: int) -> bool:
        """Whether a large frame begins at `pos` of `source` (the rest of which is less than the frame: it
        was incomplete); if so, its prefix and the rest of `source` go into its own buffers. Its length
        was validated by _cut (at most max_frame_length)."""
        if len(source) - pos < PREFIX_BYTES or _LENGTH.unpack_from(source, pos)[0] < COLLECT_ABOVE_BYTES:
            return False
        with memoryview(source) as view:
            self._large = large = LargeFrame(view[pos : pos + PREFIX_BYTES])
            large.write(view[pos + PREFIX_BYTES :])
        return True

    def _cut(self, source: bytes | bytearray | memoryview, out: list[RemotingCommand]) -> int:
        """Decode the complete frames at the start of `source` into `out`; returns the bytes used."""
        pos = 0
        end = len(source)
        limit = self.max_frame_length
        with memoryview(source) as view:
            while end - pos >= 4:
                if _cut_compiled is not None:  # the msgpack frames in one call; the loop below takes the rest
                    pos = _cut_compiled(view, pos, limit, out)
                    if end - pos < 4:
                        break
                (length,) = _LENGTH.unpack_from(view, pos)
                if length < 4 or length > limit:
                    raise FrameError(f"frame length {length} is outside 4..{limit}")
                if end - pos - 4 < length:
                    break
                start = pos + 4
                pos = start + length
                out.append(decode_frame_payload(view[start:pos]))
        return pos
