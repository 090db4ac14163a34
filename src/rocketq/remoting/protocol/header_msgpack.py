"""Serialize type 0x4D ("M"): rocketq's own MSGPACK header, for peers that are both rocketq.

Not in Apache RocketMQ (a Java peer rejects the unknown type byte and closes the connection, which is
why the Python SDK only uses it against rocketq servers). The header is one msgpack map with
one-letter string keys; absent keys take the default shown:

    "c": code      int (required)
    "l": language  int, LanguageCode value        (default 0, JAVA)
    "v": version   int                            (default 0)
    "o": opaque    int                            (default 0)
    "f": flag      int                            (default 0)
    "r": remark    str, omitted when null
    "x": extFields map str -> str, omitted when null

Why this shape: packing and unpacking are one C call each (msgpack's Packer/unpackb), integers
travel as 1-5 bytes instead of decimal text, and no field needs escaping or per-entry length
arithmetic in Python. A map (not a positional array) lets a later version add keys that older
readers ignore, as the JSON header does. Decoding is as strict about types as the binary codec
(ints must be ints, remark a str, extFields a map of strings; ext values that are numbers or
booleans are coerced like JSON's) and every problem is a HeaderDecodeError.
"""

from __future__ import annotations

import threading
from typing import Any

import msgpack

from rocketq.remoting.protocol.codes import LanguageCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.compiled import cheader
from rocketq.remoting.protocol.errors import HeaderDecodeError
from rocketq.remoting.protocol.header_json import EncodedExt, ext_is_clean, ext_value_to_str, stringify_ext

Buffer = bytes | bytearray | memoryview

_LANGUAGES: dict[int, LanguageCode] = {member.value: member for member in LanguageCode}
_unpackb = msgpack.unpackb
_OTHER = LanguageCode.OTHER  # enum members as module constants: a class attribute read costs ~80 ns
_MSGPACK = SerializeType.MSGPACK


def _check_unpack_defaults() -> None:
    """decode() calls unpackb without arguments: it relies on raw=False and strict_map_key=True."""
    if msgpack.unpackb(b"\xa1a") != "a":  # pragma: no cover - guards a msgpack upgrade
        raise ImportError("msgpack.unpackb must default to raw=False")
    try:
        msgpack.unpackb(b"\x81\x01\x01")
    except ValueError:
        return
    raise ImportError("msgpack.unpackb must default to strict_map_key=True")  # pragma: no cover


_check_unpack_defaults()
_INT_KEYS = (("c", "code"), ("l", "language"), ("v", "version"), ("o", "opaque"), ("f", "flag"))


class _Packers(threading.local):
    """One reusable Packer per thread: building a Packer costs as much as packing a header."""

    def __init__(self) -> None:
        self.packer = msgpack.Packer(use_bin_type=True, autoreset=True)


_packers = _Packers()


def _bad(what: str, value: Any) -> HeaderDecodeError:
    return HeaderDecodeError(f"msgpack header field {what} has the wrong type: {type(value).__name__}")


def _bad_int(obj: dict[Any, Any]) -> HeaderDecodeError:
    if obj.get("c") is None:
        return HeaderDecodeError("msgpack header has no code")
    for key, what in _INT_KEYS:
        value = obj.get(key, 0)
        if type(value) is not int:
            return _bad(what, value)
    return HeaderDecodeError("msgpack header has a bad integer field")  # pragma: no cover - unreachable


class MsgpackHeaderCodec:
    serialize_type = SerializeType.MSGPACK

    def encode(self, cmd: RemotingCommand) -> bytes:
        # The Packer packs int subclasses (LanguageCode) as plain ints, so int() only where needed.
        language: int = cmd.language
        if type(language) is not LanguageCode and type(language) is not int:
            language = int(language)
        ext = cmd.ext_fields
        # An EncodedExt with its text set (or deferred) holds plain str keys and values (its builder's
        # promise): the check of every entry is skipped, as the JSON codec skips it (the producer's send
        # header, whose JSON text is never formatted on a connection that agreed on msgpack).
        if ext is not None and not (isinstance(ext, EncodedExt) and ext.holds_plain_strings()):
            for key, value in ext.items():  # ext_is_clean, inlined
                if type(value) is not str or type(key) is not str:
                    ext = stringify_ext(ext)
                    break
        obj: dict[str, Any] = {"c": cmd.code, "l": language, "v": cmd.version, "o": cmd.opaque, "f": cmd.flag}
        remark = cmd.remark
        if remark is not None:
            obj["r"] = remark
        if ext is not None:
            obj["x"] = ext
        return _packers.packer.pack(obj)  # type: ignore[no-any-return]

    def decode(self, data: Buffer) -> RemotingCommand:
        try:
            obj = _unpackb(data)  # raw=False, strict_map_key=True: msgpack's defaults (checked at import)
        except Exception as exc:  # ValueError, UnicodeDecodeError, FormatError, StackError, ...
            raise HeaderDecodeError(f"msgpack header does not unpack: {exc!r}") from None
        if type(obj) is not dict:
            raise HeaderDecodeError("msgpack header is not a map")
        get = obj.get
        code = get("c")
        language = get("l", 0)
        version = get("v", 0)
        opaque = get("o", 0)
        flag = get("f", 0)
        if not (
            type(code) is int
            and type(language) is int
            and type(version) is int
            and type(opaque) is int
            and type(flag) is int
        ):
            raise _bad_int(obj)
        remark = get("r")
        if remark is not None and type(remark) is not str:
            raise _bad("remark", remark)
        ext = get("x")
        if ext is not None:
            if type(ext) is not dict:
                raise _bad("extFields", ext)
            for key, value in ext.items():  # ext_is_clean, inlined
                if type(value) is not str or type(key) is not str:
                    ext = self._check_ext(ext)
                    break
        return RemotingCommand(
            code,
            _LANGUAGES.get(language, _OTHER),
            version,
            opaque,
            flag,
            remark,
            ext,
            b"",
            _MSGPACK,
            len(data),
        )

    @staticmethod
    def _check_ext(ext: Any) -> dict[str, str]:
        if type(ext) is not dict:
            raise _bad("extFields", ext)
        if ext_is_clean(ext):
            return ext
        for key, value in ext.items():
            if type(key) is not str:
                raise _bad("extFields key", key)
            if value is not None and not isinstance(value, (str, int, float)):
                raise _bad(f"extFields[{key!r}]", value)
        return {k: ext_value_to_str(v) for k, v in ext.items() if v is not None}


encode_py = MsgpackHeaderCodec.encode
decode_py = MsgpackHeaderCodec.decode
# The compiled twin (_cheader, built from _cheader.pyx), unless ROCKETQ_NO_EXTENSIONS is set or it was not built.
compiled = cheader


MSGPACK_CODEC = MsgpackHeaderCodec()


def configure_compiled(module: Any) -> None:
    """Give the compiled functions their fallbacks: they hand anything outside the subset they read and
    write (errors included) to the pure ones, so results and errors are the same with and without them."""
    module.configure(
        lambda cmd: encode_py(MSGPACK_CODEC, cmd), lambda data: decode_py(MSGPACK_CODEC, data),
        RemotingCommand, _LANGUAGES, _OTHER, _MSGPACK,
    )  # fmt: skip


if compiled is not None:
    configure_compiled(compiled)
    MsgpackHeaderCodec.encode = staticmethod(compiled.encode)  # type: ignore[method-assign]
    MsgpackHeaderCodec.decode = staticmethod(compiled.decode)  # type: ignore[method-assign]
