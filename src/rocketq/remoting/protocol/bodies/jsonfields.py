"""Lenient readers for JSON body fields, the JsonBody encode/decode mixin, and MessageQueue helpers.

Port of what fastjson's bean reader tolerates (docs/protocol.md 5): missing fields take their defaults,
unknown fields are ignored, numbers may arrive as strings, enums as names or ordinals (the C++ SDK
sends ordinals), sets as arrays. A field of the wrong shape falls back to its default instead of
failing the whole body; only a body that is not a JSON object at all is a BodyDecodeError.
MessageQueue-keyed maps (fastjson's object keys) are read through fastjson.object_key_items.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Self, TypeVar

from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.errors import BodyDecodeError

E = TypeVar("E", bound=enum.Enum)
V = TypeVar("V")


def as_int(value: Any, default: int = 0) -> int:
    """A JSON number (or numeric string, or bool) as int; `default` for null/missing/garbage."""
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return int(value) if value == value and value not in (float("inf"), float("-inf")) else default
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                return as_int(float(text), default)
            except ValueError:
                return default
    return default


def as_float(value: Any, default: float = 0.0) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return default
    return default


def as_bool(value: Any, default: bool = False) -> bool:
    """fastjson's boolean reading: JSON booleans, numbers (non-zero), strings "true"/"1"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "1", "y", "t"):
            return True
        if text in ("false", "0", "n", "f", ""):
            return False
    return default


def as_str(value: Any, default: str = "") -> str:
    if value is None:
        return default
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def as_opt_str(value: Any) -> str | None:
    return None if value is None else as_str(value)


def as_mapping(value: Any) -> Mapping[Any, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    return []


def as_str_list(value: Any) -> list[str]:
    return [as_str(v) for v in as_list(value) if v is not None]


def as_int_set(value: Any) -> set[int]:
    return {as_int(v) for v in as_list(value) if v is not None}


def as_str_map(value: Any) -> dict[str, str]:
    """A JSON object of strings (Java Properties / Map<String,String>), values coerced like fastjson."""
    return {as_str(k): as_str(v) for k, v in as_mapping(value).items() if v is not None}


def as_enum(enum_cls: type[E], value: Any, default: E) -> E:
    """An enum by name (case-insensitive) or by Java ordinal (int or numeric string); else `default`."""
    member = as_opt_enum(enum_cls, value)
    return default if member is None else member


def as_opt_enum(enum_cls: type[E], value: Any) -> E | None:
    """Like as_enum, with None for a missing or unknown value."""
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, enum.Enum):
        value = value.name
    if isinstance(value, str):
        text = value.strip()
        member = enum_cls.__members__.get(text) or enum_cls.__members__.get(text.upper())
        if member is not None:
            return member
        if not text.lstrip("-").isdigit():
            return None
        value = int(text)
    if isinstance(value, int) and not isinstance(value, bool):
        members = list(enum_cls)
        if 0 <= value < len(members):
            return members[value]
    return None


def enum_name(value: Any) -> Any:
    """What fastjson writes for an enum field: its name (None stays None)."""
    return value.name if isinstance(value, enum.Enum) else value


# -- MessageQueue -----------------------------------------------------------------------------------
_MQ_TO_STRING = re.compile(r"MessageQueue \[topic=(.*), brokerName=(.*), queueId=(-?\d+)\]")


def mq_from_json(value: Any) -> MessageQueue:
    """A MessageQueue from its JSON object (lenient), or from Java's toString() form."""
    if isinstance(value, str):
        match = _MQ_TO_STRING.fullmatch(value.strip())
        if match is not None:
            return MessageQueue(match.group(1), match.group(2), int(match.group(3)))
    obj = as_mapping(value)
    return MessageQueue(as_str(obj.get("topic")), as_str(obj.get("brokerName")), as_int(obj.get("queueId")))


def mq_list(value: Any) -> list[MessageQueue]:
    """A JSON array (Java Set/List) of MessageQueue objects; duplicates dropped, order kept."""
    return list(dict.fromkeys(mq_from_json(v) for v in as_list(value) if isinstance(v, Mapping)))


def mq_json_list(queues: Iterable[MessageQueue]) -> list[dict[str, Any]]:
    """A Set<MessageQueue> as a JSON array, duplicates dropped, order kept."""
    return [mq.to_json() for mq in dict.fromkeys(queues)]


def unique_strs(values: Iterable[str]) -> list[str]:
    """A Set<String> as a JSON array, duplicates dropped, order kept."""
    return list(dict.fromkeys(values))


def mq_keyed(value: Any, read: Callable[[Any], V], what: str) -> dict[MessageQueue, V]:
    """A map keyed by MessageQueue, in any form writers use (object keys, JSON or toString text keys)."""
    if isinstance(value, Mapping) and value and all(isinstance(k, str) for k in value):
        if all(_MQ_TO_STRING.fullmatch(k.strip()) for k in value):
            return {mq_from_json(k): read(v) for k, v in value.items()}
    return {mq_from_json(key): read(item) for key, item in fastjson.object_key_items(value, what)}


# -- JsonBody ---------------------------------------------------------------------------------------
class JsonBody:
    """Mixin for body dataclasses: `encode()` / `decode()` through fastjson, given to_json/from_json.

    Java's RemotingSerializable.encode/decode. `decode` raises BodyDecodeError when the body is not a
    JSON object; inside it, fields are read leniently by the subclass's from_json.
    """

    __slots__ = ()
    # Some bodies (e.g. old-client routes) need fastjson's bare integer keys.
    _unquoted_int_keys: ClassVar[bool] = False

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        raise NotImplementedError

    def encode(self) -> bytes:
        return fastjson.dumps(self.to_json(), unquoted_int_keys=self._unquoted_int_keys)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str) -> Self:
        obj = fastjson.loads(data)
        if not isinstance(obj, Mapping):
            raise BodyDecodeError(f"{cls.__name__} body is not a JSON object")
        return cls.from_json(obj)
