"""Header codecs: round trips through all three serialize types, leniency, and HeaderDecodeError only."""

from __future__ import annotations

import json
import random
import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.remoting.protocol.codes import LanguageCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import HeaderDecodeError
from rocketq.remoting.protocol.header_codec import HEADER_CODECS, codec_for

ALL_TYPES = [SerializeType.JSON, SerializeType.ROCKETMQ, SerializeType.MSGPACK]

_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=24)
_ext = st.none() | st.dictionaries(_text, _text, max_size=8)


@st.composite
def commands(draw: st.DrawFn, serialize_type: SerializeType) -> RemotingCommand:
    return RemotingCommand(
        code=draw(st.integers(-(2**15), 2**15 - 1)),
        language=draw(st.sampled_from(list(LanguageCode))),
        version=draw(st.integers(-(2**15), 2**15 - 1)),
        opaque=draw(st.integers(-(2**31), 2**31 - 1)),
        flag=draw(st.integers(-(2**31), 2**31 - 1)),
        remark=draw(st.none() | _text),
        ext_fields=draw(_ext),
        serialize_type=serialize_type,
    )


def expected_after_round_trip(cmd: RemotingCommand) -> RemotingCommand:
    """What each codec gives back: the binary codec reads a zero length as null (4.9.x)."""
    if cmd.serialize_type != SerializeType.ROCKETMQ:
        return cmd
    ext = None
    if cmd.ext_fields:
        ext = {k: v for k, v in cmd.ext_fields.items() if k and v}
    return RemotingCommand(
        code=cmd.code,
        language=cmd.language,
        version=cmd.version,
        opaque=cmd.opaque,
        flag=cmd.flag,
        remark=cmd.remark or None,
        ext_fields=ext,
        body=cmd.body,
        serialize_type=cmd.serialize_type,
    )


def test_registry_has_the_three_codecs() -> None:
    assert set(HEADER_CODECS) == {0, 1, 0x4D}
    for st_ in ALL_TYPES:
        assert codec_for(st_).serialize_type == st_
    with pytest.raises(HeaderDecodeError, match="unknown serialize type 7"):
        codec_for(7)


@pytest.mark.parametrize("serialize_type", ALL_TYPES, ids=lambda t: t.name)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_round_trip(serialize_type: SerializeType, data: st.DataObject) -> None:
    cmd = data.draw(commands(serialize_type))
    codec = codec_for(serialize_type)
    header = codec.encode(cmd)
    decoded = codec.decode(header)
    assert decoded == expected_after_round_trip(cmd)
    assert decoded.header_length == len(header)
    assert isinstance(decoded.language, LanguageCode)
    assert codec.decode(memoryview(header)) == decoded  # decoders take views into the receive buffer


@pytest.mark.parametrize("serialize_type", ALL_TYPES, ids=lambda t: t.name)
def test_non_string_ext_values_are_sent_as_java_strings(serialize_type: SerializeType) -> None:
    codec = codec_for(serialize_type)
    cmd = RemotingCommand(
        code=10,
        ext_fields={"queueId": 3, "batch": True, "x": None, "f": 1.5},  # type: ignore[dict-item]
        serialize_type=serialize_type,
    )
    assert codec.decode(codec.encode(cmd)).ext_fields == {"queueId": "3", "batch": "true", "f": "1.5"}


@pytest.mark.parametrize("serialize_type", ALL_TYPES, ids=lambda t: t.name)
def test_response_is_encoded_with_the_request_codec(serialize_type: SerializeType) -> None:
    request = RemotingCommand.request(30, {"topic": "T", "queueId": "0"}, serialize_type=serialize_type)
    response = request.make_response(ext_fields={"offset": "42"})
    assert (
        response.serialize_type == serialize_type
        and response.is_response
        and response.opaque == request.opaque
    )
    decoded = codec_for(response.serialize_type).decode(codec_for(response.serialize_type).encode(response))
    assert decoded.ext_fields == {"offset": "42"} and decoded.is_response


# -- JSON -------------------------------------------------------------------------------------------
def test_json_output_is_what_a_java_peer_emits() -> None:
    cmd = RemotingCommand(code=105, language=LanguageCode.JAVA, opaque=1, ext_fields={"topic": "TopicTest"})
    assert codec_for(0).encode(cmd) == (
        b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":1,'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    no_ext = RemotingCommand(code=34, language=LanguageCode.GO, opaque=2, remark='a"\u00e9\x01')
    text = codec_for(0).encode(no_ext)
    assert b"extFields" not in text
    assert json.loads(text)["remark"] == 'a"\u00e9\x01' and "\u00e9".encode() in text


def test_json_accepts_cpp_style_headers() -> None:
    # C++ SDK: numbers in extFields, empty Signature/AccessKey/OnsChannel, language by number.
    raw = (
        b'{"code":10,"language":1,"version":405,"opaque":7,"flag":0,"remark":"",'
        b'"extFields":{"producerGroup":"pg","queueId":0,"sysFlag":0,"flag":0,"defaultTopicQueueNums":4,'
        b'"bornTimestamp":1700000000000,"unitMode":false,"Signature":"","AccessKey":"","OnsChannel":""}}'
    )
    cmd = codec_for(0).decode(raw)
    assert cmd.language is LanguageCode.CPP and cmd.remark == "" and cmd.version == 405
    assert cmd.ext_fields == {
        "producerGroup": "pg",
        "queueId": "0",
        "sysFlag": "0",
        "flag": "0",
        "defaultTopicQueueNums": "4",
        "bornTimestamp": "1700000000000",
        "unitMode": "false",
        "Signature": "",
        "AccessKey": "",
        "OnsChannel": "",
    }


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"code":"17","opaque":"3","language":"go"}', (17, 3, LanguageCode.GO)),
        (b'{"code":17.0,"language":"NOPE"}', (17, 0, LanguageCode.OTHER)),
        (b'{"code":1,"language":"9"}', (1, 0, LanguageCode.GO)),
        (b'{"code":1,"language":99}', (1, 0, LanguageCode.OTHER)),
        (b' {"code":1,"serializeTypeCurrentRPC":"JSON","unknown":{"a":[1]}} \n', (1, 0, LanguageCode.JAVA)),
        (b'{"code":1,"extFields":null,"remark":null,"flag":null}', (1, 0, LanguageCode.JAVA)),
    ],
)
def test_json_lenient_fields(raw: bytes, expected: tuple[int, int, LanguageCode]) -> None:
    cmd = codec_for(0).decode(raw)
    assert (cmd.code, cmd.opaque, cmd.language) == expected


def test_json_remark_and_nested_ext_values_are_coerced() -> None:
    cmd = codec_for(0).decode(b'{"code":1,"remark":5,"extFields":{"a":{"b":[1,true]},"n":null}}')
    assert cmd.remark == "5" and cmd.ext_fields == {"a": '{"b":[1,true]}'}


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"   ",
        b"{",
        b"[]",
        b"42",
        b'"x"',
        b"{}",
        b'{"code":true}',
        b'{"code":[1]}',
        b'{"code":"x1"}',
        b'{"code":1,"flag":"z"}',
        b'{"code":1,"opaque":{}}',
        b'{"code":1,"version":false}',
        b'{"code":1e400}',
        b'{"code":1,"extFields":[1]}',
        b'{"code":1,"extFields":"a"}',
        b'{"code":1} x',
        b'{"code":1}{}',
        b'\xff{"code":1}',
        b'{"code":1,"remark":"\xc3"}',
        b"[" * 100000,
        b'\xef\xbb\xbf{"code":1}',
    ],
)
def test_json_bad_headers_raise_header_decode_error(raw: bytes) -> None:
    with pytest.raises(HeaderDecodeError):
        codec_for(0).decode(raw)


# -- ROCKETMQ binary -------------------------------------------------------------------------------
def _binary(
    remark: bytes = b"", entries: list[tuple[bytes, bytes]] | None = None, *, ext_len: int | None = None
) -> bytes:
    section = b"".join(
        struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in entries or []
    )
    head = struct.pack(">hBhiii", 0, 0, 409, 1, 1, len(remark)) + remark
    return head + struct.pack(">i", len(section) if ext_len is None else ext_len) + section


def test_binary_zero_lengths_decode_as_null() -> None:
    cmd = codec_for(1).decode(_binary(b"", [(b"a", b""), (b"", b"x"), (b"b", b"1")]))
    assert cmd.remark is None and cmd.ext_fields == {"b": "1"}
    assert codec_for(1).decode(_binary()).ext_fields is None


def test_binary_wraps_integers_like_java_casts_and_maps_unknown_languages() -> None:
    codec = codec_for(1)
    cmd = codec.decode(codec.encode(RemotingCommand(code=40000, version=70000, opaque=2**31, flag=-1)))
    assert (cmd.code, cmd.version, cmd.opaque, cmd.flag) == (40000 - 2**16, 70000 - 2**16, -(2**31), -1)
    raw = bytearray(_binary())
    raw[2] = 200
    assert codec.decode(bytes(raw)).language is LanguageCode.OTHER


def test_binary_ignores_bytes_after_the_ext_section() -> None:
    assert codec_for(1).decode(_binary(b"r", [(b"k", b"v")]) + b"\x00junk").ext_fields == {"k": "v"}


def test_binary_rejects_oversized_keys_on_encode() -> None:
    with pytest.raises(ValueError, match="int16"):
        codec_for(1).encode(RemotingCommand(code=1, ext_fields={"k" * 40000: "v"}))


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        _binary()[:20],
        _binary(b"abc")[:-2],
        struct.pack(">hBhiii", 0, 0, 0, 0, 0, -1) + b"\x00" * 8,
        struct.pack(">hBhiii", 0, 0, 0, 0, 0, 1000) + b"\x00" * 8,
        _binary(ext_len=-5),
        _binary(ext_len=1000),
        _binary(b"", [(b"k", b"v")], ext_len=3),
        _binary(b"", [(b"k", b"v")], ext_len=9),
        _binary(b"", [(b"k", b"v")])[:-1] + b"",
        _binary(b"\xff\xfe"),
        _binary(b"", [(b"\xc3", b"v")]),
        _binary(b"", [(b"k", b"\xe2\x82")]),
        _binary(b"", [(b"k", b"v")]).replace(b"\x00\x01k", b"\xff\xffk"),  # negative key length
        _binary(b"", [(b"k", b"v")]).replace(
            b"\x00\x00\x00\x01v", b"\xff\xff\xff\xffv"
        ),  # negative value length
    ],
)
def test_binary_bad_headers_raise_header_decode_error(raw: bytes) -> None:
    with pytest.raises(HeaderDecodeError):
        codec_for(1).decode(raw)


# -- MSGPACK ---------------------------------------------------------------------------------------
def test_msgpack_layout_is_a_map_with_one_letter_keys() -> None:
    cmd = RemotingCommand(
        code=30, language=LanguageCode.PYTHON, opaque=5, remark="r", ext_fields={"topic": "T"}
    )
    assert msgpack.unpackb(codec_for(0x4D).encode(cmd)) == {
        "c": 30,
        "l": 3,
        "v": 409,
        "o": 5,
        "f": 0,
        "r": "r",
        "x": {"topic": "T"},
    }
    minimal = codec_for(0x4D).decode(msgpack.packb({"c": 1, "future": [1, 2]}))
    assert (minimal.code, minimal.language, minimal.remark, minimal.ext_fields) == (
        1,
        LanguageCode.JAVA,
        None,
        None,
    )
    lenient = codec_for(0x4D).decode(msgpack.packb({"c": 1, "l": 77, "x": {"a": 1, "b": None, "c": True}}))
    assert lenient.language is LanguageCode.OTHER and lenient.ext_fields == {"a": "1", "c": "true"}


@pytest.mark.parametrize(
    "obj",
    [
        [1, 2],
        {"l": 0},
        {"c": "1"},
        {"c": True},
        {"c": 1, "l": "JAVA"},
        {"c": 1, "v": 1.5},
        {"c": 1, "o": None},
        {"c": 1, "f": []},
        {"c": 1, "r": 5},
        {"c": 1, "x": [1]},
        {"c": 1, "x": {"a": [1]}},
        {"c": 1, "x": {1: "a"}},
        {"c": 1, "x": {b"k": "v"}},
    ],
)
def test_msgpack_wrong_types_raise_header_decode_error(obj: object) -> None:
    with pytest.raises(HeaderDecodeError):
        codec_for(0x4D).decode(msgpack.packb(obj, use_bin_type=True))


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\xc1",
        b"\x81\xa1c",
        b"\x82\xa1c\x01",
        msgpack.packb({"c": 1}) + b"\x00",
        b"\x81\xa1r\xa2\xff\xfe",
        b"\x91" * 100000,
        msgpack.packb(msgpack.ExtType(1, b"x")),
    ],
)
def test_msgpack_garbage_raises_header_decode_error(raw: bytes) -> None:
    with pytest.raises(HeaderDecodeError):
        codec_for(0x4D).decode(raw)


@pytest.mark.parametrize("serialize_type", ALL_TYPES, ids=lambda t: t.name)
def test_random_garbage_only_ever_raises_header_decode_error(serialize_type: SerializeType) -> None:
    rng = random.Random(1234 + int(serialize_type))
    codec = codec_for(serialize_type)
    good = codec.encode(
        RemotingCommand(code=310, remark="rem", ext_fields={"a": "pg", "b": "TopicTest", "i": "x\x01y"})
    )
    for _ in range(1500):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            if op < 0.5 and data:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif op < 0.75 and data:
                del data[rng.randrange(len(data)) :]
            else:
                data[rng.randrange(len(data) + 1) : 0] = rng.randbytes(rng.randint(1, 8))
        try:
            cmd = codec.decode(bytes(data))
        except HeaderDecodeError:
            continue
        assert isinstance(cmd.code, int) and (
            cmd.ext_fields is None
            or all(isinstance(k, str) and isinstance(v, str) for k, v in cmd.ext_fields.items())
        )


def test_msgpack_packs_a_deferred_json_header_without_formatting_its_text() -> None:
    from rocketq.remoting.protocol import header_msgpack
    from rocketq.remoting.protocol.header_json import DeferredJsonExt

    made: list[int] = []

    def make() -> str:
        made.append(1)
        return '{"a":"1"}'

    ext = DeferredJsonExt({"a": "1", "b": "x"})
    ext.defer(make)
    assert ext.holds_plain_strings()
    cmd = RemotingCommand(10, ext_fields=ext, serialize_type=SerializeType.MSGPACK)
    plain = RemotingCommand(10, ext_fields={"a": "1", "b": "x"}, serialize_type=SerializeType.MSGPACK)
    codec = header_msgpack.MSGPACK_CODEC
    assert header_msgpack.encode_py(codec, cmd) == header_msgpack.encode_py(codec, plain)
    assert codec.encode(cmd) == codec.encode(plain) and made == []
    ext["c"] = 5  # type: ignore[assignment]  # a change through the mapping: every value checked again
    assert not ext.holds_plain_strings()
    assert msgpack.unpackb(header_msgpack.encode_py(codec, cmd))["x"] == {"a": "1", "b": "x", "c": "5"}
