"""Header codecs chosen by SerializeType: JSON (0), ROCKETMQ binary (1) and our MSGPACK.

Strategy: one codec object per serialize type in `HEADER_CODECS`; `frame.py` picks by the type byte.
Every decode problem raises HeaderDecodeError (a FrameError), never anything else.
JSON rules (protocol.md 1.5): lenient on input (extFields numbers/booleans coerced to strings the way
fastjson prints them, unknown keys ignored, language as name or number, remark/extFields optional);
on output every extFields value is a JSON string and null fields are omitted, keys sorted like fastjson.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from rocketq.remoting.protocol.codes import LanguageCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import HeaderDecodeError


class HeaderCodec(Protocol):
    serialize_type: SerializeType

    def encode(self, cmd: RemotingCommand) -> bytes: ...

    def decode(self, data: bytes) -> RemotingCommand: ...


def _ext_value_to_str(value: Any) -> str:
    """fastjson's view of a JSON scalar as a Java String."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _int_field(obj: dict[str, Any], key: str, default: int = 0) -> int:
    value = obj.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool):
        raise HeaderDecodeError(f"header field {key!r} is a boolean, not an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise HeaderDecodeError(f"header field {key!r} is not an integer: {value!r}") from None


class JsonHeaderCodec:
    serialize_type = SerializeType.JSON

    def encode(self, cmd: RemotingCommand) -> bytes:
        obj: dict[str, Any] = {"code": cmd.code}
        if cmd.ext_fields is not None:
            obj["extFields"] = {k: v if isinstance(v, str) else str(v) for k, v in cmd.ext_fields.items() if v is not None}
        obj["flag"] = cmd.flag
        obj["language"] = cmd.language.name
        obj["opaque"] = cmd.opaque
        if cmd.remark is not None:
            obj["remark"] = cmd.remark
        obj["serializeTypeCurrentRPC"] = "JSON"
        obj["version"] = cmd.version
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def decode(self, data: bytes) -> RemotingCommand:
        try:
            obj = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise HeaderDecodeError(f"JSON header is not valid UTF-8: {exc.reason} at byte {exc.start}") from None
        except ValueError as exc:
            raise HeaderDecodeError(f"JSON header does not parse: {exc}") from None
        if not isinstance(obj, dict):
            raise HeaderDecodeError("JSON header is not an object")
        if "code" not in obj:
            raise HeaderDecodeError("JSON header has no 'code'")
        ext_raw = obj.get("extFields")
        ext: dict[str, str] | None
        if ext_raw is None:
            ext = None
        elif isinstance(ext_raw, dict):
            ext = {str(k): _ext_value_to_str(v) for k, v in ext_raw.items() if v is not None}
        else:
            raise HeaderDecodeError("JSON header field 'extFields' is not an object")
        remark = obj.get("remark")
        return RemotingCommand(
            code=_int_field(obj, "code"),
            language=LanguageCode.parse(obj.get("language", "JAVA")),
            version=_int_field(obj, "version"),
            opaque=_int_field(obj, "opaque"),
            flag=_int_field(obj, "flag"),
            remark=None if remark is None else str(remark),
            ext_fields=ext,
            serialize_type=SerializeType.JSON,
            header_length=len(data),
        )


JSON_CODEC = JsonHeaderCodec()

# serialize type -> codec; header_codec_binary / header_codec_msgpack register themselves on import.
HEADER_CODECS: dict[int, HeaderCodec] = {SerializeType.JSON: JSON_CODEC}


def codec_for(serialize_type: int) -> HeaderCodec:
    try:
        return HEADER_CODECS[serialize_type]
    except KeyError:
        raise HeaderDecodeError(f"unknown serialize type {serialize_type}") from None
