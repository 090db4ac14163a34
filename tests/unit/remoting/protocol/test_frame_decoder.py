"""Frame decoder: any split of the input, limits, poisoning, and a bounded fuzz raising only FrameError."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.remoting.protocol.codes import LanguageCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import FrameError, HeaderDecodeError
from rocketq.remoting.protocol.frame import (
    MAX_FRAME_LENGTH,
    FrameDecoder,
    decode_frame_payload,
    encode_frame,
    encode_frame_parts,
)
from rocketq.remoting.protocol.header_codec import codec_for

ALL_TYPES = [SerializeType.JSON, SerializeType.ROCKETMQ, SerializeType.MSGPACK]
_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=16)


@st.composite
def commands(draw: st.DrawFn, serialize_type: SerializeType) -> RemotingCommand:
    # Non-empty remark/ext values: the binary codec reads empty ones as null (tested in test_header_codecs).
    nonempty = _text.filter(bool)
    return RemotingCommand(
        code=draw(st.integers(0, 32767)),
        language=draw(st.sampled_from(list(LanguageCode))),
        version=draw(st.integers(0, 32767)),
        opaque=draw(st.integers(0, 2**31 - 1)),
        flag=draw(st.integers(0, 3)),
        remark=draw(st.none() | nonempty),
        ext_fields=draw(st.none() | st.dictionaries(nonempty, nonempty, min_size=1, max_size=6)),
        body=draw(st.binary(max_size=300)),
        serialize_type=serialize_type,
    )


def _frame(serialize_type: SerializeType = SerializeType.JSON, body: bytes = b"b", opaque: int = 1) -> bytes:
    return encode_frame(
        RemotingCommand(
            code=30,
            opaque=opaque,
            ext_fields={"topic": "T", "queueId": "0"},
            body=body,
            serialize_type=serialize_type,
        )
    )


def _raw_frame(tag: int, header: bytes, body: bytes = b"", length: int | None = None) -> bytes:
    total = 4 + len(header) + len(body) if length is None else length
    return struct.pack(">iI", total, tag) + header + body


@pytest.mark.parametrize("serialize_type", ALL_TYPES, ids=lambda t: t.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_frames_round_trip_in_any_split(serialize_type: SerializeType, data: st.DataObject) -> None:
    cmds = data.draw(st.lists(commands(serialize_type), min_size=1, max_size=4))
    stream = b"".join(encode_frame(c) for c in cmds)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        out.extend(decoder.feed(stream[prev:cut]))
        prev = cut
    assert out == cmds
    assert decoder.buffered == 0


@pytest.mark.parametrize("serialize_type", ALL_TYPES, ids=lambda t: t.name)
def test_one_byte_at_a_time(serialize_type: SerializeType) -> None:
    stream = (
        _frame(serialize_type, b"x" * 70, 1)
        + _frame(serialize_type, b"", 2)
        + _frame(serialize_type, b"y", 3)
    )
    decoder = FrameDecoder()
    got = []
    for i in range(len(stream)):
        got.extend(decoder.feed(stream[i : i + 1]))
        assert decoder.buffered <= len(stream)
    assert [c.opaque for c in got] == [1, 2, 3] and [c.body for c in got] == [b"x" * 70, b"", b"y"]
    assert all(c.serialize_type == serialize_type for c in got)


def test_feed_accepts_bytearray_and_memoryview() -> None:
    frame = _frame()
    assert len(FrameDecoder().feed(bytearray(frame))) == 1
    assert len(FrameDecoder().feed(memoryview(frame))) == 1
    assert FrameDecoder().feed(b"") == []


def test_encode_frame_parts_match_encode_frame() -> None:
    cmd = RemotingCommand(code=10, ext_fields={"a": "b"}, body=b"body")
    prefix, body = encode_frame_parts(cmd)
    assert prefix + body == encode_frame(cmd) and body == b"body"
    assert encode_frame(RemotingCommand(code=1)) == encode_frame_parts(RemotingCommand(code=1))[0]


@pytest.mark.parametrize(
    ("stream", "match"),
    [
        (struct.pack(">i", MAX_FRAME_LENGTH + 1), "outside"),
        (struct.pack(">i", 2**31 - 1), "outside"),
        (struct.pack(">i", -1), "outside"),
        (struct.pack(">i", 3) + b"abc", "outside"),
        (_raw_frame(100, b"{}"), "beyond the frame"),
        (_raw_frame((7 << 24) | 2, b"{}"), "unknown serialize type 7"),
        (_raw_frame((0x4C << 24) | 2, b"{}"), "unknown serialize type 76"),
        (_raw_frame(9, b'{"code":1'), "does not parse"),
        (_raw_frame(12, b'{"code":"\xff"}'), "UTF-8"),
        (_raw_frame(0, b""), "does not parse"),
        (_raw_frame((1 << 24) | 3, b"\x00\x01\x02"), "shorter"),
        (_raw_frame((0x4D << 24) | 1, b"\xc1"), "does not unpack"),
    ],
)
def test_bad_frames_raise_frame_error(stream: bytes, match: str) -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError, match=match):
        decoder.feed(stream)
    # the decoder is poisoned: the connection must be closed, later input is refused
    with pytest.raises(FrameError):
        decoder.feed(_frame())


def test_oversize_length_is_refused_before_the_body_arrives() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError):
        decoder.feed(struct.pack(">i", 16 * 1024 * 1024 - 3))
    assert FrameDecoder().feed(struct.pack(">i", MAX_FRAME_LENGTH)) == []  # the exact limit is allowed
    small = FrameDecoder(max_frame_length=64)
    with pytest.raises(FrameError, match=r"outside 4\.\.64"):
        small.feed(_frame(body=b"z" * 100))


def test_header_errors_are_frame_errors() -> None:
    assert issubclass(HeaderDecodeError, FrameError)
    with pytest.raises(FrameError):
        decode_frame_payload(b"\x00\x00")


def test_good_frames_before_a_bad_one_are_not_returned_partially() -> None:
    # One read with a good frame then garbage: the whole read fails (the connection closes).
    decoder = FrameDecoder()
    with pytest.raises(FrameError):
        decoder.feed(_frame() + _raw_frame(100, b""))


def test_code_wrapping_in_binary_frames_keeps_the_decoder_consistent() -> None:
    cmd = RemotingCommand(code=1, serialize_type=SerializeType.ROCKETMQ, body=b"\x00" * 5)
    (decoded,) = FrameDecoder().feed(encode_frame(cmd))
    assert decoded == cmd and codec_for(1).serialize_type == SerializeType.ROCKETMQ


def _mutate(rng: random.Random, frame: bytes) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 5)):
        choice = rng.random()
        if choice < 0.4 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif choice < 0.55 and data:
            data[rng.randrange(min(8, len(data)))] = rng.randrange(256)  # hit the length and tag bytes
        elif choice < 0.75 and data:
            start = rng.randrange(len(data))
            del data[start : start + rng.randint(1, 16)]
        else:
            pos = rng.randrange(len(data) + 1)
            data[pos:pos] = rng.randbytes(rng.randint(1, 16))
    return bytes(data)


def test_bounded_fuzz_raises_only_frame_error() -> None:
    rng = random.Random(20240611)
    seeds = [_frame(t, rng.randbytes(rng.randint(0, 64)), i) for i, t in enumerate(ALL_TYPES * 3)]
    seeds.append(
        encode_frame(
            RemotingCommand(
                code=10, remark="é", ext_fields={"k": "v" * 40}, serialize_type=SerializeType.ROCKETMQ
            )
        )
    )
    outcomes = {"ok": 0, "error": 0}
    for i in range(2000):
        if i % 4 == 0:
            stream = rng.randbytes(rng.randint(0, 80))
        else:
            stream = b"".join(_mutate(rng, rng.choice(seeds)) for _ in range(rng.randint(1, 3)))
        decoder = FrameDecoder(max_frame_length=4096 if i % 2 else MAX_FRAME_LENGTH)
        pos = 0
        try:
            while pos < len(stream):
                step = rng.randint(1, 40)
                for cmd in decoder.feed(stream[pos : pos + step]):
                    assert isinstance(cmd, RemotingCommand) and isinstance(cmd.body, bytes)
                    assert cmd.ext_fields is None or all(type(v) is str for v in cmd.ext_fields.values())
                pos += step
            outcomes["ok"] += 1
        except FrameError:
            outcomes["error"] += 1
    assert outcomes["ok"] > 0 and outcomes["error"] > 0


@pytest.mark.parametrize("serialize_type", ALL_TYPES, ids=lambda t: t.name)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_read_of_exactly_one_frame_decodes_as_the_general_path_does(
    serialize_type: SerializeType, data: st.DataObject
) -> None:
    cmd = data.draw(commands(serialize_type))
    frame = encode_frame(cmd)
    (fast,) = FrameDecoder().feed(frame)  # bytes, exactly one frame: the fast path
    (general,) = FrameDecoder().feed(bytearray(frame))  # any other buffer type: the general path
    assert fast == general == cmd and type(fast.body) is bytes
    assert fast.header_length == general.header_length


def test_fast_path_errors_poison_the_decoder_like_the_general_path() -> None:
    bad = _raw_frame((0x4D << 24) | 1, b"\xc1")
    for stream in (bad, bytearray(bad)):
        decoder = FrameDecoder()
        with pytest.raises(FrameError, match="does not unpack"):
            decoder.feed(stream)
        with pytest.raises(FrameError, match="does not unpack"):
            decoder.feed(_frame())
    # a frame longer than the limit is refused even when it arrives whole
    with pytest.raises(FrameError, match="outside"):
        FrameDecoder(max_frame_length=64).feed(_frame(body=b"z" * 100))


@pytest.mark.parametrize("split", [1, 7, 65_536, 262_144, 3_000_000])
def test_a_large_frame_is_collected_in_reads_and_joined_once(split: int) -> None:
    """A large frame (COLLECT_ABOVE_BYTES or more) is copied read by read into its own buffers until
    complete; what comes after it in the same read (another frame, part of one) is decoded or kept as usual."""
    big = RemotingCommand.request(10, {"k": "v"}, bytes(range(256)) * 8192 + b"tail")  # 2 MiB + 4
    small = RemotingCommand.request(11, None, b"after")
    stream = encode_frame(big) + encode_frame(small) + encode_frame(small)[:5]
    decoder = FrameDecoder()
    got: list[RemotingCommand] = []
    sizes: list[tuple[int, int]] = []
    head = 0
    if split == 1:  # byte by byte around the frame's start and end only (2 MiB of single bytes is slow)
        cuts = [
            *range(1, 12),
            len(encode_frame(big)) - 3,
            *range(len(encode_frame(big)) - 2, len(stream) + 1),
        ]
    else:
        cuts = [*range(split, len(stream), split), len(stream)]
    for cut in cuts:
        got.extend(decoder.feed(stream[head:cut]))
        sizes.append((decoder.buffered, decoder.pending_length))
        head = cut
    assert [(c.code, c.body) for c in got] == [(10, big.body), (11, b"after")]
    assert decoder.buffered == 5 and decoder.pending_length == len(encode_frame(small)) - 4
    big_length = len(encode_frame(big)) - 4
    if split < big_length:  # it arrived in parts: announced while it was collected
        assert any(pending == big_length for _buffered, pending in sizes)


def _feed_all(stream: bytes, steps: list[int]) -> tuple[list[tuple[RemotingCommand, int]], str | None]:
    decoder, got, pos = FrameDecoder(max_frame_length=4096), [], 0
    try:
        for step in steps:
            got += [(cmd, cmd.header_length) for cmd in decoder.feed(stream[pos : pos + step])]
            pos += step
    except FrameError as exc:
        return got, str(exc)
    return got, None


def test_the_compiled_cut_of_msgpack_frames_decodes_and_fails_as_the_pure_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FrameDecoder._cut with the compiled cut of consecutive msgpack frames (a read of many pipelined sends)
    against the pure loop alone: the same commands, header lengths and errors for mixed, mutated streams."""
    from rocketq.remoting.protocol import frame
    from rocketq.remoting.protocol.compiled import cheader

    if cheader is None:
        pytest.skip("the header accelerator is not built")
    rng = random.Random(20261126)
    seeds = [_frame(t, rng.randbytes(rng.randint(0, 64)), i) for i, t in enumerate(ALL_TYPES * 2)]
    seeds += [_frame(SerializeType.MSGPACK, b"m" * 300, 9)] * 4
    for i in range(1500):
        parts = [rng.choice(seeds) for _ in range(rng.randint(1, 6))]
        if i % 2:
            at = rng.randrange(len(parts))
            parts[at] = _mutate(rng, parts[at])
        stream = b"".join(parts)
        steps = [rng.choice((3, 50, 700, 5000)) for _ in range(len(stream) // 3 + 1)]
        compiled = _feed_all(stream, steps)
        monkeypatch.setattr(frame, "_cut_compiled", None)
        pure = _feed_all(stream, steps)
        monkeypatch.setattr(frame, "_cut_compiled", cheader.cut_frames)
        assert compiled == pure, (i, stream)
