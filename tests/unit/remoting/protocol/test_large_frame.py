"""Large frames received straight into their own buffers: any split, the body handed out uncopied, early refusals."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import FrameError
from rocketq.remoting.protocol.frame import FrameDecoder, encode_frame
from rocketq.remoting.protocol.large_frame import COLLECT_ABOVE_BYTES, ZERO_COPY, writable_bytes

BIG_BODY = bytes(range(256)) * (COLLECT_ABOVE_BYTES // 256 * 3) + b"tail"


def _receive(
    decoder: FrameDecoder, stream: bytes, rng: random.Random, scratch_bytes: int
) -> list[RemotingCommand]:
    """Play a BufferedProtocol transport: reads of random sizes go where receive_buffer() says, or into a
    scratch buffer that is fed."""
    got: list[RemotingCommand] = []
    pos = 0
    scratch = memoryview(bytearray(scratch_bytes))
    while pos < len(stream):
        target = decoder.receive_buffer()
        into_frame = target is not None
        if target is None:
            target = scratch
        # Reads up to the scratch size outside large frames; a large frame's buffer takes reads of any size.
        n = min(len(target), len(stream) - pos, rng.randint(1, 200_000 if into_frame else scratch_bytes))
        target[:n] = stream[pos : pos + n]
        pos += n
        got.extend(decoder.received(n) if into_frame else decoder.feed(scratch[:n]))
    return got


@pytest.mark.parametrize("seed", range(6))
def test_reads_of_any_size_into_the_frame_buffers_decode_the_same(seed: int) -> None:
    rng = random.Random(seed)
    big = RemotingCommand.request(10, {"k": "v"}, BIG_BODY)
    small = RemotingCommand.request(11, None, b"after")
    empty_body = RemotingCommand.request(12, {"h": "x" * COLLECT_ABOVE_BYTES})  # a large header, no body
    stream = encode_frame(small) + encode_frame(big) + encode_frame(empty_body) + encode_frame(small)
    decoder = FrameDecoder()
    got = _receive(decoder, stream, rng, scratch_bytes=rng.choice([9, 4096, 64 * 1024]))
    assert [(c.code, c.body) for c in got] == [(11, b"after"), (10, BIG_BODY), (12, b""), (11, b"after")]
    assert got[2].ext_fields == {"h": "x" * COLLECT_ABOVE_BYTES}
    assert all(type(c.body) is bytes for c in got)
    assert decoder.buffered == 0 and decoder.receive_buffer() is None


def test_the_body_is_the_buffer_it_was_received_into() -> None:
    """No copy when the frame completes: the command carries the object the reads went into."""
    frame = encode_frame(RemotingCommand.request(10, None, BIG_BODY))
    decoder = FrameDecoder()
    assert decoder.feed(frame[:100]) == []
    assert decoder.pending_length == len(frame) - 4 and decoder.buffered == 100
    targets: list[Any] = []
    pos = 100
    while pos < len(frame):
        target = decoder.receive_buffer()
        assert target is not None and len(target) > 0
        targets.append(target.obj)
        n = min(len(target), 70_000)
        target[:n] = frame[pos : pos + n]
        pos += n
        cmds = decoder.received(n)
    del target
    (cmd,) = cmds
    assert cmd.body == BIG_BODY and decoder.buffered == 0
    if ZERO_COPY:
        assert targets[-1].owner is cmd.body  # the view the last read went into wraps the body itself


def test_a_large_frame_that_begins_inside_a_read_goes_into_its_own_buffers() -> None:
    """A read holding whole frames and the start of a large one: the whole ones are decoded, the large
    one's start is written into its buffers (not kept in the decoder's own buffer), and the reads that
    follow go straight into its body."""
    batch_body = bytes(range(256)) * (COLLECT_ABOVE_BYTES // 256 + 64)
    frame = encode_frame(RemotingCommand.request(320, {"k": "v"}, batch_body))
    small = encode_frame(RemotingCommand.request(11, None, b"s"))
    decoder = FrameDecoder()
    got = decoder.feed(memoryview(bytearray(frame + small + frame[:50_000])))
    assert [(c.code, c.body) for c in got] == [(320, batch_body), (11, b"s")]
    assert decoder.buffered == 50_000 and decoder.pending_length == len(frame) - 4
    target = decoder.receive_buffer()
    assert target is not None and len(target) == len(frame) - 50_000
    target[:] = frame[50_000:]
    (cmd,) = decoder.received(len(target))
    assert cmd.body == batch_body and type(cmd.body) is bytes
    assert decoder.buffered == 0 and decoder.receive_buffer() is None


def test_feeding_a_large_frame_in_reads_fills_the_same_buffers() -> None:
    big = RemotingCommand.request(10, None, BIG_BODY)
    stream = encode_frame(big) * 2 + encode_frame(RemotingCommand.request(11))[:6]
    decoder = FrameDecoder()
    got = []
    for start in range(0, len(stream), 100_003):
        got.extend(decoder.feed(stream[start : start + 100_003]))
    assert [c.body for c in got] == [BIG_BODY, BIG_BODY]
    assert decoder.buffered == 6


@pytest.mark.parametrize(
    ("tag", "why"),
    [(COLLECT_ABOVE_BYTES * 2, "header length"), ((7 << 24) | 10, "unknown serialize type")],
)
def test_a_bad_prefix_is_refused_before_the_body_arrives(tag: int, why: str) -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError, match=why):
        decoder.feed(struct.pack(">iI", COLLECT_ABOVE_BYTES + 100, tag) + b"x" * 10)
    with pytest.raises(FrameError):  # poisoned
        decoder.feed(b"x")
    assert decoder.receive_buffer() is None


def test_a_header_that_does_not_decode_poisons_the_decoder() -> None:
    header = b"{" * COLLECT_ABOVE_BYTES  # JSON that does not parse
    frame = struct.pack(">iI", 4 + len(header), len(header)) + header
    decoder = FrameDecoder()
    decoder.feed(frame[:8])
    target = decoder.receive_buffer()
    assert target is not None and len(target) == len(header)
    target[:] = header
    with pytest.raises(FrameError):
        decoder.received(len(header))
    with pytest.raises(FrameError):
        decoder.feed(b"x")


def test_writable_bytes_are_written_through_their_view() -> None:
    obj, view = writable_bytes(1 << 20)
    view[:5] = b"hello"
    view[-3:] = b"end"
    assert len(obj) == 1 << 20 and obj[:5] == b"hello" and obj[-3:] == b"end"
    assert type(obj) is (bytes if ZERO_COPY else bytearray)
