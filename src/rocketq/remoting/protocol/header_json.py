"""Serialize type 0: the JSON header every RocketMQ SDK speaks by default (docs/protocol.md 1.5).

Port of RemotingSerializable's handling of RemotingCommand (fastjson) in Apache RocketMQ 4.9.8.
Output is what a Java peer emits: keys alphabetical, null fields omitted, `language` by name, every
extFields value a JSON string (the C++ SDK reads only string values), plus Java's
`serializeTypeCurrentRPC`. Input is lenient as fastjson is: extFields numbers/booleans become
strings the way Java prints them (C++ sends `"queueId":0`), null values are dropped, `language` may
be a name or a number, `remark`/`extFields` may be missing, unknown keys are ignored. Every decode
problem is a HeaderDecodeError.

Strategy (this runs on every request of a Java client): the fixed fields are formatted directly and
only extFields and remark go through the C JSON encoder; decoding is one C `json` parse plus type
checks that take the all-strings fast path unless a peer sent something else.
"""

from __future__ import annotations

import json
import json.encoder
import json.scanner
from collections.abc import Callable, Mapping
from typing import Any

from rocketq.remoting.protocol.codes import LanguageCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.compiled import constructor
from rocketq.remoting.protocol.errors import HeaderDecodeError

Buffer = bytes | bytearray | memoryview


def _no_default(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not a JSON string")


def _make_ext_encoder() -> Callable[[Any], str]:
    """A compact JSON encoder for the extFields map, built once.

    JSONEncoder.encode() builds a new C encoder on every call; holding one (no circular-reference
    markers: extFields is a flat map of strings) saves about a third of the encoding time.
    """
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_make_encoder is None:  # pragma: no cover - interpreters without the C accelerator
        return json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    encoder = c_make_encoder(
        None,
        _no_default,
        json.encoder.encode_basestring,
        None,
        ":",
        ",",
        False,
        False,
        True,
    )
    return lambda value: "".join(encoder(value, 0))


_encode_ext: Callable[[Any], str] = _make_ext_encoder()
_encode_str: Callable[[str], str] = json.encoder.encode_basestring
_JSON_DECODER = json.JSONDecoder()
_decode_json: Callable[[str], Any] = _JSON_DECODER.decode
# The scanner alone skips JSONDecoder.decode's whitespace regexes; decode() handles the odd cases.
_scan_once: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(_JSON_DECODER)  # type: ignore[arg-type]

_JSON = SerializeType.JSON  # an enum member read through its class costs a descriptor call
# Every field given: without the dataclass's Python __init__ when compiled (rocketq.remoting.protocol.compiled).
_new_command = constructor(RemotingCommand)
_LANGUAGE_NAMES: dict[int, str] = {member: member.name for member in LanguageCode}
_LANGUAGE_BY_NAME: dict[str, LanguageCode] = {member.name: member for member in LanguageCode}


def ext_value_to_str(value: Any) -> str:
    """fastjson's view of a JSON scalar as a Java String ("true", "5", "1.5", compact JSON otherwise)."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def stringify_ext(ext: Mapping[Any, Any]) -> dict[str, str]:
    """extFields with every key and value a string and null values dropped (the lenient path)."""
    return {
        k if isinstance(k, str) else ext_value_to_str(k): ext_value_to_str(v)
        for k, v in ext.items()
        if v is not None
    }


def ext_is_clean(ext: Mapping[Any, Any]) -> bool:
    """True when every key and value is already a str (the fast path of every codec)."""
    for key, value in ext.items():
        if type(value) is not str or type(key) is not str:
            return False
    return True


class EncodedExt(dict[str, str]):
    """extFields that carry their own JSON text, `json`: exactly what this codec would write for them.

    Built by a hot path that knows its values are plain strings and can format most of the text once
    (the producer's send header, the broker's send answer): encoding such a header then skips the
    check of every value and the C encoder, about 2 us a send. Build the map first (dict's own
    constructor and dict.__setitem__), then set `json`. Any later change through the mapping's methods
    (an RPC hook adding a field, say) drops the text, and the codec encodes the map as usual.
    """

    json: str | None = None  # set by the builder once the map is complete

    def holds_plain_strings(self) -> bool:
        """True while the builder's promise holds (no change through the mapping's methods since): every
        key and value a plain str, so a codec may skip checking them."""
        return self.json is not None

    def __setitem__(self, key: str, value: str) -> None:
        self.json = None
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.json = None
        super().__delitem__(key)

    def __ior__(self, other: Any) -> EncodedExt:  # type: ignore[override,misc]
        self.json = None
        super().__ior__(other)
        return self

    def setdefault(self, key: str, default: str = "") -> str:
        self.json = None
        return super().setdefault(key, default)

    def pop(self, *args: Any) -> Any:
        self.json = None
        return super().pop(*args)

    def popitem(self) -> tuple[str, str]:
        self.json = None
        return super().popitem()

    def clear(self) -> None:
        self.json = None
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.json = None
        super().update(*args, **kwargs)


class DeferredJsonExt(EncodedExt):
    """An EncodedExt whose JSON text is formatted when a JSON codec first reads `json`: `make(*args)`,
    given by `defer`. The producer's send header is one: on a connection that agreed on msgpack headers
    (our SDK and our broker) nothing reads it, and the ~1 us of formatting a send is saved. Setting
    `json` (to None, as every mutator does, or to a text) replaces what was deferred. The two states are
    slots: no instance dict to allocate per send, and holds_plain_strings is two slot reads."""

    __slots__ = ("_make", "_text")
    _make: tuple[Callable[..., str], tuple[Any, ...]] | None
    _text: str | None

    def defer(self, make: Callable[..., str], *args: Any) -> None:
        self._make = (make, args)
        self._text = None

    def holds_plain_strings(self) -> bool:
        # Without formatting the text: a mutator sets both to None.
        try:
            return self._make is not None or self._text is not None
        except AttributeError:  # neither deferred nor given a text
            return False

    @property
    def json(self) -> str | None:
        try:
            made = self._make  # defer and the setter give both slots a value
        except AttributeError:  # neither deferred nor given a text
            return None
        if made is not None:
            self._text, self._make = made[0](*made[1]), None
        return self._text

    @json.setter
    def json(self, value: str | None) -> None:
        self._make = None
        self._text = value


def _to_int(obj: dict[str, Any], key: str, value: Any) -> int:
    """A header number that was not a plain JSON integer: numeric strings/floats coerced, else an error."""
    if value is None:
        if key == "code":
            raise HeaderDecodeError("JSON header has no 'code'")
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise HeaderDecodeError(f"JSON header field {key!r} is not an integer: {value!r}")
    try:
        return int(value)
    except (ValueError, OverflowError):
        raise HeaderDecodeError(f"JSON header field {key!r} is not an integer: {value!r}") from None


class JsonHeaderCodec:
    serialize_type = SerializeType.JSON

    def encode(self, cmd: RemotingCommand) -> bytes:
        ext = cmd.ext_fields
        if ext is None:
            ext_part = ""
        elif isinstance(ext, EncodedExt) and ext.json is not None:  # DeferredJsonExt too
            ext_part = ',"extFields":' + ext.json
        else:
            ext_part = ',"extFields":' + _encode_ext(ext if ext_is_clean(ext) else stringify_ext(ext))
        remark_part = "" if cmd.remark is None else ',"remark":' + _encode_str(cmd.remark)
        language = _LANGUAGE_NAMES.get(cmd.language)
        if language is None:
            language = LanguageCode.parse(cmd.language).name
        return (
            f'{{"code":{cmd.code:d}{ext_part},"flag":{cmd.flag:d},"language":"{language}",'
            f'"opaque":{cmd.opaque:d}{remark_part},"serializeTypeCurrentRPC":"JSON","version":{cmd.version:d}}}'
        ).encode()

    def decode(self, data: Buffer) -> RemotingCommand:
        try:
            text = str(data, "utf-8")
            try:
                obj, end = _scan_once(text, 0)
            except StopIteration:  # leading whitespace, or no value at all
                obj, end = _decode_json(text), len(text)
            if end != len(text) and not text[end:].isspace():
                raise HeaderDecodeError(f"JSON header has trailing content at char {end}")
        except UnicodeDecodeError as exc:
            raise HeaderDecodeError(
                f"JSON header is not valid UTF-8: {exc.reason} at byte {exc.start}"
            ) from None
        except RecursionError:
            raise HeaderDecodeError("JSON header is nested too deeply") from None
        except ValueError as exc:
            raise HeaderDecodeError(f"JSON header does not parse: {exc}") from None
        if type(obj) is not dict:
            raise HeaderDecodeError("JSON header is not an object")
        get = obj.get
        code = get("code")
        if type(code) is not int:
            code = _to_int(obj, "code", code)
        flag = get("flag", 0)
        if type(flag) is not int:
            flag = _to_int(obj, "flag", flag)
        opaque = get("opaque", 0)
        if type(opaque) is not int:
            opaque = _to_int(obj, "opaque", opaque)
        version = get("version", 0)
        if type(version) is not int:
            version = _to_int(obj, "version", version)
        raw_language = get("language")
        language = _LANGUAGE_BY_NAME.get(raw_language) if type(raw_language) is str else None
        if language is None:
            language = LanguageCode.JAVA if raw_language is None else LanguageCode.parse(raw_language)
        remark = get("remark")
        if remark is not None and type(remark) is not str:
            remark = ext_value_to_str(remark)
        ext = get("extFields")
        if ext is not None:
            if type(ext) is not dict:
                raise HeaderDecodeError("JSON header field 'extFields' is not an object")
            if not ext_is_clean(ext):
                ext = stringify_ext(ext)
        return _new_command(code, language, version, opaque, flag, remark, ext, b"", _JSON, len(data))


JSON_CODEC = JsonHeaderCodec()
