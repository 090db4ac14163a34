"""Serialize type 1: the ROCKETMQ binary header (docs/protocol.md 1.6).

Port of org.apache.rocketmq.remoting.protocol.RocketMQSerializable (4.9.8). Layout, big-endian:

    code int16 | language uint8 | version int16 | opaque int32 | flag int32
    | remarkLen int32 | remark | extLen int32 | ext: (keyLen int16, key, valLen int32, value)*

Rules kept from the 4.9.x decoder: a length of 0 decodes as null, so an empty remark is no remark and
an ext entry with an empty key or value is dropped (older decoders gave ""); bytes after the ext
section are ignored. Integers wrap to the Java field width on encode ((short) code, (short) version).
Deviation: lengths are checked against the header (negative, or beyond the header or the ext section)
and every problem is a HeaderDecodeError, where Java would throw whatever the buffer threw.
"""

from __future__ import annotations

import struct

from rocketq.remoting.protocol.codes import LanguageCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import HeaderDecodeError
from rocketq.remoting.protocol.header_json import ext_value_to_str

Buffer = bytes | bytearray | memoryview

_FIXED_IN = struct.Struct(">hBhiii")  # code .. remarkLen: 17 bytes
_FIXED_OUT = struct.Struct(">HBHIII")  # the same, unsigned, so Java's narrowing casts become masks
_MIN_HEADER = _FIXED_IN.size + 4  # 21: fixed part with empty remark and ext
_EMPTY_EXT = b"\x00\x00\x00\x00"
_MAX_CACHED_KEYS = 1024

_LANGUAGES: tuple[LanguageCode, ...] = tuple(LanguageCode.parse(i) for i in range(256))
_pack_int = struct.Struct(">I").pack
_pack_ushort = struct.Struct(">H").pack
_unpack_int = struct.Struct(">i").unpack_from
# Entry lengths are read unsigned: a Java-negative length then points past the section and fails the
# end check below, instead of walking backwards (which could loop forever).
_unpack_uint = struct.Struct(">I").unpack_from
_unpack_ushort = struct.Struct(">H").unpack_from

# extFields keys are a small vocabulary (Java field names): their encoded length+bytes are cached.
_key_prefixes: dict[str, bytes] = {}


def _key_prefix(key: str) -> bytes:
    encoded = key.encode("utf-8")
    if len(encoded) > 0x7FFF:
        raise ValueError(
            f"extFields key of {len(encoded)} bytes does not fit the binary header's int16 length"
        )
    prefix = _pack_ushort(len(encoded)) + encoded
    if len(_key_prefixes) >= _MAX_CACHED_KEYS:
        _key_prefixes.clear()
    _key_prefixes[key] = prefix
    return prefix


class RocketMQHeaderCodec:
    serialize_type = SerializeType.ROCKETMQ

    def encode(self, cmd: RemotingCommand) -> bytes:
        remark = cmd.remark.encode("utf-8") if cmd.remark else b""
        head = _FIXED_OUT.pack(
            cmd.code & 0xFFFF,
            int(cmd.language) & 0xFF,
            cmd.version & 0xFFFF,
            cmd.opaque & 0xFFFFFFFF,
            cmd.flag & 0xFFFFFFFF,
            len(remark),
        )
        ext = cmd.ext_fields
        if not ext:
            return head + remark + _EMPTY_EXT
        parts: list[bytes] = []
        append = parts.append
        prefixes = _key_prefixes
        for key, value in ext.items():
            if value is None or key is None:
                continue
            if type(key) is not str:
                key = ext_value_to_str(key)
            prefix = prefixes.get(key)
            if prefix is None:
                prefix = _key_prefix(key)
            encoded = (value if type(value) is str else ext_value_to_str(value)).encode("utf-8")
            append(prefix)
            append(_pack_int(len(encoded)))
            append(encoded)
        section = b"".join(parts)
        return b"".join((head, remark, _pack_int(len(section)), section))

    def decode(self, data: Buffer) -> RemotingCommand:
        if type(data) is not bytes:
            data = bytes(data)  # one small copy; slicing bytes and decoding is far cheaper than views
        size = len(data)
        if size < _MIN_HEADER:
            raise HeaderDecodeError(
                f"binary header of {size} bytes is shorter than its {_MIN_HEADER}-byte fixed part"
            )
        code, language, version, opaque, flag, remark_len = _FIXED_IN.unpack_from(data, 0)
        pos = _FIXED_IN.size
        if remark_len < 0 or remark_len > size - _MIN_HEADER:
            raise HeaderDecodeError(
                f"binary header remark length {remark_len} is beyond the header ({size} bytes)"
            )
        remark = None
        try:
            if remark_len:
                remark = data[pos : pos + remark_len].decode("utf-8")
                pos += remark_len
            (ext_len,) = _unpack_int(data, pos)
            pos += 4
            ext = None
            if ext_len:
                if ext_len < 0 or ext_len > size - pos:
                    raise HeaderDecodeError(
                        f"binary header ext length {ext_len} is beyond the header ({size - pos} bytes left)"
                    )
                ext = _decode_ext(data, pos, pos + ext_len)
        except UnicodeDecodeError as exc:
            raise HeaderDecodeError(f"binary header text is not valid UTF-8: {exc.reason}") from None
        return RemotingCommand(
            code, _LANGUAGES[language], version, opaque, flag, remark, ext, b"", SerializeType.ROCKETMQ, size
        )


def _decode_ext(data: bytes, pos: int, end: int) -> dict[str, str]:
    ext: dict[str, str] = {}
    try:
        while pos < end:
            (key_len,) = _unpack_ushort(data, pos)
            pos += 2
            key = data[pos : pos + key_len].decode("utf-8")
            pos += key_len
            (value_len,) = _unpack_uint(data, pos)
            pos += 4
            if value_len and key:  # 4.9.x: a zero length is null, and a null key or value is no entry
                ext[key] = data[pos : pos + value_len].decode("utf-8")
            pos += value_len
    except struct.error:
        raise HeaderDecodeError("binary header ext section is truncated") from None
    if pos != end:
        raise HeaderDecodeError(f"binary header ext entries run {pos - end} bytes beyond the ext section")
    return ext


ROCKETMQ_CODEC = RocketMQHeaderCodec()
