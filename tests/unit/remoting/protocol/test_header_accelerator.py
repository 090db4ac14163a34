"""The compiled msgpack header codec (rocketq.remoting.protocol._cheader) against its pure-Python twin:
the same commands give byte-identical headers, the same bytes (valid, foreign, torn or corrupted) give
equal commands or the same HeaderDecodeError."""

from __future__ import annotations

import os
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.remoting.protocol import header_msgpack
from rocketq.remoting.protocol.codes import LanguageCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import HeaderDecodeError
from rocketq.remoting.protocol.header_json import EncodedExt

cheader = pytest.importorskip("rocketq.remoting.protocol._cheader", reason="accelerators not built")
CODEC = header_msgpack.MSGPACK_CODEC
header_msgpack.configure_compiled(cheader)  # done at import unless ROCKETQ_NO_EXTENSIONS is set

# Ints at every msgpack width boundary, both signs, past 32 and 64 bits too (those go to the pure path).
edge_ints = st.sampled_from(
    [0, 1, 31, 32, 127, 128, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63, 2**64,
     -1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1, -(2**63)]
)  # fmt: skip
ints = st.one_of(edge_ints, st.integers(-(2**40), 2**40))
texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["", "x" * 31, "x" * 32, "é" * 16, "x" * 255, "x" * 256, "x" * 70000, "\ud800", "UNIQ_KEY\x01a\x02"]
    ),
)
ext_values = st.one_of(texts, texts, st.integers(-5, 5), st.booleans(), st.none(), st.floats(allow_nan=False))
exts = st.one_of(
    st.none(),
    st.dictionaries(texts, texts, max_size=20),
    st.dictionaries(st.text(max_size=5), ext_values, max_size=6),
    st.dictionaries(st.text(max_size=2), texts, min_size=16, max_size=20),
)


def outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args))
    except HeaderDecodeError as exc:
        return ("error", str(exc))
    except Exception as exc:  # encode: what the Packer raises, the same either way
        return ("raised", type(exc).__name__)


def pure_encode(cmd: RemotingCommand) -> bytes:
    return header_msgpack.encode_py(CODEC, cmd)


def pure_decode(data: Any) -> RemotingCommand:
    return header_msgpack.decode_py(CODEC, data)


@st.composite
def commands(draw: st.DrawFn) -> RemotingCommand:
    language = draw(st.one_of(st.sampled_from(list(LanguageCode)), ints))
    ext = draw(exts)
    if ext is not None and draw(st.booleans()):
        encoded = EncodedExt(ext)
        encoded.json = "{}"  # the builder's promise (plain strs) is not checked by the compiled path
        ext = encoded
    return RemotingCommand(  # language: unknown codes (plain ints) on purpose
        draw(ints),
        language,  # type: ignore[arg-type]
        draw(ints),
        draw(ints),
        draw(ints),
        draw(st.one_of(st.none(), texts)),
        ext,
        b"",
        SerializeType.MSGPACK,
    )


def test_the_codec_uses_the_compiled_functions_unless_switched_off() -> None:
    if os.environ.get("ROCKETQ_NO_EXTENSIONS", "") not in ("", "0"):
        assert header_msgpack.compiled is None and CODEC.encode.__func__ is header_msgpack.encode_py  # type: ignore[attr-defined]
        return
    assert header_msgpack.compiled is cheader
    assert CODEC.encode is cheader.encode and CODEC.decode is cheader.decode


@given(commands())
def test_encode_is_byte_identical(cmd: RemotingCommand) -> None:
    assert outcome(cheader.encode, cmd) == outcome(pure_encode, cmd)


@given(commands())
def test_what_either_encodes_decodes_to_the_same_command(cmd: RemotingCommand) -> None:
    try:
        data = pure_encode(cmd)
    except Exception:
        return
    assert outcome(cheader.decode, data) == outcome(pure_decode, data)
    assert outcome(cheader.decode, memoryview(bytearray(data))) == outcome(pure_decode, data)


def test_a_send_header_round_trips() -> None:
    ext = {"a": "pg", "b": "T", "g": "1700000000000", "i": "UNIQ_KEY\x01AB\x02WAIT\x01true", "n": "broker-a"}
    cmd = RemotingCommand.request(310, ext, serialize_type=SerializeType.MSGPACK)
    data = cheader.encode(cmd)
    assert data == pure_encode(cmd)
    back = cheader.decode(data)
    assert back == pure_decode(data)
    assert back.ext_fields == ext and back.code == 310 and back.language is LanguageCode.PYTHON
    assert back.header_length == len(data)


msgpack_objects = st.recursive(
    st.one_of(st.none(), st.booleans(), ints.filter(lambda i: -(2**63) <= i < 2**64), texts.filter(lambda t: "\ud800" not in t),
              st.binary(max_size=8), st.floats()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["c", "l", "v", "o", "f", "r", "x", "z"]), inner, max_size=7)),
    max_leaves=20,
)  # fmt: skip


@given(msgpack_objects)
def test_any_msgpack_value_decodes_or_fails_the_same(obj: Any) -> None:
    data = msgpack.packb(obj, use_bin_type=True)
    assert outcome(cheader.decode, data) == outcome(pure_decode, data)


@given(commands(), st.data())
def test_torn_or_corrupted_headers_fail_the_same(cmd: RemotingCommand, data: st.DataObject) -> None:
    try:
        good = bytearray(pure_encode(cmd))
    except Exception:
        return
    if good and data.draw(st.booleans()):
        good[data.draw(st.integers(0, len(good) - 1))] = data.draw(st.integers(0, 255))
    cut = bytes(good[: data.draw(st.integers(0, len(good)))]) + data.draw(st.binary(max_size=3))
    assert outcome(cheader.decode, cut) == outcome(pure_decode, cut)


RESPONSE_VALUES = st.one_of(
    st.sampled_from(["", "0", "7", "-1", "+5", " 1", "1_0", "٣", "999999999", "2147483648", "9" * 18, "9" * 19,
                     "true", "TRUE", "True", "tRuE", "false", "x", "İ"]),
    st.text(max_size=6), st.none(),
)  # fmt: skip
RESPONSE_KEYS = ["msgId", "queueId", "queueOffset", "transactionId", "MSG_REGION", "TRACE_ON", "other"]


def decoded(fn: Any, ext: Any) -> tuple[str, Any]:
    from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError

    try:
        return ("ok", fn(ext))
    except (MissingHeaderFieldError, BadHeaderValueError) as exc:
        return ("error", str(exc))


@given(
    st.one_of(
        st.none(),
        st.dictionaries(st.sampled_from(RESPONSE_KEYS), RESPONSE_VALUES, max_size=len(RESPONSE_KEYS)),
    )
)
def test_the_compiled_field_decoder_gives_the_typed_headers_values_and_errors(
    ext: dict[str, Any] | None,
) -> None:
    from rocketq.remoting.protocol.headers import base as header_base
    from rocketq.remoting.protocol.headers.send import SendMessageResponseHeader

    fields = ("msg_id", "queue_id", "queue_offset", "transaction_id", "msg_region", "trace_on")
    compiled = SendMessageResponseHeader.compile_decoder_into(lambda *values: values, fields)
    if header_msgpack.compiled is not None:
        assert isinstance(compiled, cheader.FieldDecoder)

    def typed(e: Any) -> tuple[Any, ...]:
        h = SendMessageResponseHeader.from_ext_fields(e)
        return tuple(getattr(h, name) for name in fields)

    assert decoded(compiled, ext) == decoded(typed, ext)
    # `tuple` as the builder: the values themselves, compiled and pure alike.
    as_tuple = SendMessageResponseHeader.compile_decoder_into(tuple, fields)
    pure = header_base._compile_decoder(
        SendMessageResponseHeader, SendMessageResponseHeader._codec().specs, (tuple, fields)
    )
    assert (
        decoded(as_tuple, ext) == decoded(typed, ext) == decoded(lambda e: pure({} if e is None else e), ext)
    )


def _every_field(obj: Any) -> tuple[Any, ...]:
    import dataclasses

    return tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))


@given(commands(), st.integers(0, 2**20))
def test_the_slot_builder_makes_what_the_dataclass_makes(cmd: RemotingCommand, header_length: int) -> None:
    import gc

    builder = cheader.slot_builder(RemotingCommand)
    assert builder is not None
    values = (*_every_field(cmd)[:-1], header_length)
    built, made = builder(*values), RemotingCommand(*values)
    assert type(built) is RemotingCommand and built == made
    assert _every_field(built) == _every_field(made)  # header_length too (not compared by ==)
    assert all(a is b for a, b in zip(_every_field(built), values, strict=True))
    assert gc.is_tracked(built)
    built.opaque = 7  # an ordinary instance: its slots take new values
    assert built.opaque == 7


def test_the_slot_builder_keeps_its_values_alive_and_checks_its_arguments() -> None:
    import sys

    from rocketq.client.model import SendResult, SendStatus
    from rocketq.common.message import MessageQueue

    builder = cheader.slot_builder(SendResult)
    ext = {"k": "v"}
    before = sys.getrefcount(ext)
    result = builder(SendStatus.SEND_OK, "id", "off", MessageQueue("t", "b", 1), 5, ext, "r", True)
    assert sys.getrefcount(ext) == before + 1
    del result
    assert sys.getrefcount(ext) == before
    with pytest.raises(TypeError, match="takes 8 values, got 2"):
        builder(SendStatus.SEND_OK, "id")


def test_classes_the_slot_builder_cannot_make_exactly_are_refused() -> None:
    import dataclasses

    @dataclasses.dataclass
    class NoSlots:
        a: int

    @dataclasses.dataclass(slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            self.a += 1

    @dataclasses.dataclass(slots=True)
    class NotInit:
        a: int
        b: int = dataclasses.field(default=0, init=False)

    @dataclasses.dataclass(slots=True)
    class Base:
        a: int

    @dataclasses.dataclass(slots=True)
    class Derived(Base):
        b: int

    for cls in (NoSlots, PostInit, NotInit, Derived, int):
        assert cheader.slot_builder(cls) is None, cls


def test_a_default_factory_does_not_matter_when_every_field_is_given() -> None:
    import dataclasses

    @dataclasses.dataclass(slots=True)
    class Factory:
        a: int
        b: list[int] = dataclasses.field(default_factory=list)

    builder = cheader.slot_builder(Factory)
    given = [1]
    built = builder(5, given)
    assert built == Factory(5, given) and built.b is given and type(built) is Factory


def test_short_strings_kept_by_the_decoder_come_back_right() -> None:
    # Texts of one length sharing their first, middle and last bytes land in one slot of the decoder's
    # string cache: each must still decode to itself, whichever was kept before.
    texts = [f"a{c}{d}a" for c in "bcdefgh" for d in "xyz"] + ["é", "a", "ab", "x" * 24, "x" * 25]
    for _ in range(3):
        for text in texts:
            cmd = RemotingCommand(1, ext_fields={text: text, "k": text}, serialize_type=SerializeType.MSGPACK)
            back = cheader.decode(pure_encode(cmd))
            assert back.ext_fields == {text: text, "k": text}


@given(
    commands(),
    st.one_of(st.just(b""), st.binary(max_size=64), st.sampled_from([b"x" * 70000, "not bytes", None])),
)
def test_the_compiled_frame_is_the_frame_of_the_pure_encoder(cmd: RemotingCommand, body: Any) -> None:
    import struct

    from rocketq.remoting.protocol.frame import encode_frame

    cmd.body = body
    expected = outcome(pure_encode, cmd)
    if expected[0] == "ok":
        header = expected[1]
        payload = body if isinstance(body, bytes) else b""
        if len(header) <= 0xFFFFFF and not isinstance(body, str):
            expected = (
                "ok",
                struct.pack(">iI", 4 + len(header) + len(payload), 0x4D << 24 | len(header))
                + header
                + payload,
            )
    compiled = cheader.encode_frame(cmd)
    if compiled is not None:
        assert ("ok", compiled) == expected
    if expected[0] == "ok" and not isinstance(body, str):
        assert encode_frame(cmd) == expected[1]  # the compiled frame or, outside its subset, the pure one
    assert compiled is None or not isinstance(body, str)  # a body that is no buffer: the pure path's error


def test_a_frame_reads_the_fields_of_any_command_object() -> None:
    # A RemotingCommand's fields are read from their slots; a deleted one fails as the attribute would.
    cmd = RemotingCommand(1, ext_fields={"a": "b"}, body=b"xy", serialize_type=SerializeType.MSGPACK)
    frame = cheader.encode_frame(cmd)
    assert frame == cheader.encode_frame(RemotingCommand(*_every_field(cmd)))
    del cmd.remark
    with pytest.raises(AttributeError):
        cheader.encode_frame(cmd)
