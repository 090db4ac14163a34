"""A large frame received straight into its header's and body's own buffers (no copy when it completes).

Netty's NettyDecoder (LengthFieldBasedFrameDecoder) accumulates a frame in a pooled ByteBuf and hands
the body out as a slice; Python's equivalent of that slice has to be a `bytes` object, which normally
means copying the whole body once the frame is complete. For a 15 MiB frame that copy, and zeroing
a 15 MiB bytearray to receive into, each held the event loop about 35 ms (py-spy, docs/fault-tests.md).

So a frame of at least `COLLECT_ABOVE_BYTES` gets one buffer for its header and one for its body,
each made when its first byte arrives, and the reads go into them (`buffer()` hands out the free
part: an asyncio.BufferedProtocol receives into it, `write()` copies a read into it). The body's
buffer is the `bytes` object the command will carry: CPython's C API makes an uninitialised bytes
object of a given size (PyBytes_FromStringAndSize with a NULL source, documented to be filled in
before anyone else sees the object), and ctypes gives a writable view of its storage. Nothing is
zeroed (the kernel supplies pages as the reads fill them, so an announced frame whose bytes never
come costs no memory) and nothing is copied at the end. Where ctypes cannot do that (not CPython),
the buffers are bytearrays and the body is copied once at the end, as before.
"""

from __future__ import annotations

import struct
from typing import Any

from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import FrameError
from rocketq.remoting.protocol.header_codec import codec_for

# A frame at least this long is received into its own buffers; smaller ones are cut from the reads.
# Measured at 32 KiB with batches of a hundred 1 KiB messages (~108 KiB frames, docs/performance-log.md,
# "Session 8: the batch frame"): half the copies, but more reads and read turns, and no change in the
# broker's CPU beyond the noise (a 108 KiB copy is 7 us); 256 KiB keeps small bursts in one read.
COLLECT_ABOVE_BYTES = 256 * 1024

PREFIX_BYTES = 8  # the length field and the serialize-type/header-length tag

_PREFIX = struct.Struct(">iI")


def _bytes_api() -> tuple[Any, Any] | None:
    try:
        import ctypes

        api = ctypes.pythonapi
        new = api.PyBytes_FromStringAndSize
        new.restype = ctypes.py_object
        new.argtypes = (ctypes.c_char_p, ctypes.c_ssize_t)
        address = api.PyBytes_AsString
        address.restype = ctypes.c_void_p
        address.argtypes = (ctypes.py_object,)
    except (ImportError, AttributeError):  # not CPython
        return None
    return new, address


_API = _bytes_api()
ZERO_COPY = _API is not None


def writable_bytes(size: int) -> tuple[bytes | bytearray, memoryview]:
    """A new object of `size` bytes (size >= 2) and a writable view of its storage.

    With ZERO_COPY the object is `bytes` and must not be shared before it is filled (its hash is not
    computed yet, and nobody else holds it); the view keeps the object alive and must be dropped
    before it is handed out. Otherwise it is a bytearray.
    """
    if _API is None:
        buf = bytearray(size)
        return buf, memoryview(buf)
    import ctypes

    new, address = _API
    obj: bytes = new(None, size)
    storage = (ctypes.c_char * size).from_address(address(obj))
    storage.owner = obj  # type: ignore[attr-defined]  # the view keeps the bytes object alive
    return obj, memoryview(storage).cast("B")


class LargeFrame:
    """One large frame being received; its first PREFIX_BYTES (length and tag) are already read."""

    __slots__ = ("_body", "_body_view", "_header", "_header_view", "filled", "header_length", "length", "tag")

    def __init__(self, prefix: bytes | bytearray | memoryview) -> None:
        length: int
        tag: int
        length, tag = _PREFIX.unpack_from(prefix, 0)
        header_length = tag & 0xFFFFFF
        if header_length > length - 4:
            raise FrameError(f"header length {header_length} is beyond the frame ({length - 4} bytes left)")
        codec_for(tag >> 24)  # an unknown serialize type is refused now, not after megabytes
        self.length = length  # the length field: tag, header and body
        self.tag = tag
        self.header_length = header_length
        self.filled = PREFIX_BYTES  # bytes of the frame received, its length field included
        self._header: bytes | bytearray | None = None
        self._header_view: memoryview | None = None
        self._body: bytes | bytearray | None = None
        self._body_view: memoryview | None = None

    @property
    def total(self) -> int:
        return self.length + 4

    @property
    def complete(self) -> bool:
        return self.filled >= self.length + 4

    def buffer(self) -> memoryview:
        """The free part of the header's or the body's buffer (never empty while incomplete)."""
        pos = self.filled - PREFIX_BYTES
        header_length = self.header_length
        if pos < header_length:
            if self._header_view is None:
                self._header, self._header_view = _segment(header_length)
            return self._header_view[pos:]
        if self._body_view is None:
            self._body, self._body_view = _segment(self.length - 4 - header_length)
        return self._body_view[pos - header_length :]

    def write(self, data: memoryview) -> int:
        """Copy the start of a read into the frame; returns the bytes used (the rest is the next frame's)."""
        used = 0
        size = len(data)
        while used < size and not self.complete:
            target = self.buffer()
            n = min(len(target), size - used)
            target[:n] = data[used : used + n]
            self.filled += n
            used += n
        return used

    def take(self) -> RemotingCommand:
        """The decoded command of the complete frame; its body is the buffer it was received into."""
        header = self._header if self._header is not None else b""
        body = self._body if self._body is not None else b""
        self._header = self._body = self._header_view = self._body_view = None
        cmd = codec_for(self.tag >> 24).decode(header)
        cmd.body = body if type(body) is bytes else bytes(body)
        return cmd


def _segment(size: int) -> tuple[bytes | bytearray, memoryview]:
    if size < 2:  # bytes of length 0 and 1 are shared singletons: never written into
        buf = bytearray(size)
        return buf, memoryview(buf)
    return writable_bytes(size)
