"""fastjson-compatible JSON for RocketMQ bodies: compact sorted output, lenient input with fastjson quirks.

Port of the JSON dialect that RocketMQ 4.x's RemotingSerializable gets from fastjson 1.2.69
(docs/protocol.md 5). Java peers write maps with non-String keys *unquoted*: Long keys bare
(`{0:"127.0.0.1:10911"}`, brokerAddrs) and MessageQueue keys as JSON objects
(`{{"brokerName":"b","queueId":0,"topic":"T"}:42}`, TopicStatsTable / ConsumeStats / ResetOffsetBody).
Neither is valid JSON, so `json` alone cannot read them.

Python representation (the contract of this module):

* `loads` returns plain dicts/lists/str/int/float/bool/None. A key written quoted stays a `str`
  (`{"0":..}` -> key "0"); a bare numeric key becomes an `int` (or float); a bare identifier becomes a
  `str`; an object used as a key becomes an `ObjectKey` (a frozen, hashable Mapping[str, Any] whose
  nested objects are ObjectKeys and arrays tuples); an array key becomes a tuple.
* `dumps` writes dict keys sorted (fastjson sorts bean properties; maps are unordered for every known
  reader, so sorting them too only adds determinism). int keys are quoted unless
  `unquoted_int_keys=True` (the legacy dialect of routes, docs/protocol.md 2.3). A key that is an
  `ObjectKey`, any Mapping, or an object with `to_json()` (e.g. common.message.MessageQueue) is
  written as a JSON object, the fastjson way. Values: objects with `to_json()` are encoded through it,
  Enums by name (StrEnum by value), sets as arrays, bytes as base64 (fastjson's byte[]); None is
  written as `null` -- body classes omit null fields in their `to_json()` as fastjson omits them.
* `object_key_items` turns a loaded object-keyed map (in any of the forms writers use) into
  (key mapping, value) pairs, which body classes turn into `MessageQueue` keys.

Strategy: the stdlib's C encoder/decoder do the work whenever the text/object is standard JSON (the
common case, and the fast one); a small recursive-descent parser (strings still scanned by the C
`scanstring`) and a Python writer handle the rest. Errors are BodyDecodeError, never anything else.
"""

from __future__ import annotations

import base64
import enum
import json
import json.decoder
import json.encoder
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from rocketq.common.errors import BodyDecodeError

__all__ = ["ObjectKey", "dumps", "loads", "object_key_items"]


# ---------------------------------------------------------------------------------------------------
# ObjectKey: a JSON object used as a map key
# ---------------------------------------------------------------------------------------------------


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return ObjectKey(value)
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, ObjectKey):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


class ObjectKey(Mapping[str, Any]):
    """An immutable, hashable JSON object: what `loads` makes of a map key written as an object.

    Behaves as a read-only mapping (so `MessageQueue.from_json(key)` works directly) and compares equal
    to another ObjectKey with the same content, whatever the key order was on the wire.
    """

    __slots__ = ("_hash", "_map")

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        source = items.items() if isinstance(items, Mapping) else items
        self._map: dict[str, Any] = {str(k): _freeze(v) for k, v in source}
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._map[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._map.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ObjectKey):
            return self._map == other._map
        if isinstance(other, Mapping):
            return self._map == {k: _freeze(v) for k, v in other.items()}
        return NotImplemented

    def __repr__(self) -> str:
        return f"ObjectKey({self.to_dict()!r})"

    def to_dict(self) -> dict[str, Any]:
        """A plain (mutable, unhashable) copy with lists instead of tuples."""
        return {k: _thaw(v) for k, v in self._map.items()}


# ---------------------------------------------------------------------------------------------------
# dumps
# ---------------------------------------------------------------------------------------------------


def _default(obj: Any) -> Any:
    """Values the C encoder does not know, reduced to ones it does."""
    to_json = getattr(obj, "to_json", None)
    if to_json is not None:
        return to_json()
    if isinstance(obj, enum.Enum):
        return obj.name
    if isinstance(obj, (set, frozenset)):
        return _sorted_if_possible(obj)
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _sorted_if_possible(items: Iterable[Any]) -> list[Any]:
    seq = list(items)
    try:
        seq.sort()
    except TypeError:
        pass
    return seq


_ENCODER = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=_default)
_ENCODER_ASCII = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=True, default=_default)


def dumps(obj: Any, *, unquoted_int_keys: bool = False, ensure_ascii: bool = False) -> bytes:
    """Compact UTF-8 JSON of `obj`, keys sorted, the way a fastjson (RemotingSerializable) peer writes it.

    Args:
        obj: plain JSON data, or objects with `to_json()`; dict keys may be str, int, ObjectKey or
            objects with `to_json()` (written as JSON objects, fastjson's non-String-key form).
        unquoted_int_keys: write int keys bare (`{0:"a"}`), fastjson's default for Long-keyed maps and
            what pre-4.9.4 clients get in routes (docs/protocol.md 2.3, 8.7).
        ensure_ascii: escape non-ASCII as \\uXXXX (fastjson's BrowserCompatible, the standard dialect).
    """
    if not unquoted_int_keys:
        encoder = _ENCODER_ASCII if ensure_ascii else _ENCODER
        try:
            return encoder.encode(obj).encode("utf-8")
        except TypeError:
            pass  # object-valued or unsortable mixed keys: the Python writer below handles them
    parts: list[str] = []
    _Writer(parts, unquoted_int_keys, ensure_ascii).value(obj)
    return "".join(parts).encode("utf-8")


class _Writer:
    """The slow path of dumps: every key form fastjson produces."""

    __slots__ = ("_out", "_str", "_unquoted")

    def __init__(self, out: list[str], unquoted_int_keys: bool, ensure_ascii: bool) -> None:
        self._out = out
        self._unquoted = unquoted_int_keys
        self._str: Callable[[str], str] = (
            json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
        )

    def value(self, obj: Any) -> None:
        out = self._out
        if isinstance(obj, str):
            out.append(self._str(obj))
        elif obj is None:
            out.append("null")
        elif obj is True:
            out.append("true")
        elif obj is False:
            out.append("false")
        elif isinstance(obj, int):
            out.append(int.__repr__(obj))
        elif isinstance(obj, float):
            out.append(float.__repr__(obj) if math.isfinite(obj) else "null")
        elif isinstance(obj, dict) or isinstance(obj, ObjectKey):
            self.mapping(obj)
        elif isinstance(obj, (list, tuple)):
            self.array(obj)
        else:
            self.value(_default(obj))

    def array(self, items: Iterable[Any]) -> None:
        out = self._out
        out.append("[")
        first = True
        for item in items:
            if not first:
                out.append(",")
            first = False
            self.value(item)
        out.append("]")

    def mapping(self, obj: Mapping[Any, Any]) -> None:
        out = self._out
        out.append("{")
        first = True
        for key in _sorted_if_possible(obj.keys()):
            if not first:
                out.append(",")
            first = False
            self.key(key)
            out.append(":")
            self.value(obj[key])
        out.append("}")

    def key(self, key: Any) -> None:
        out = self._out
        if isinstance(key, str):
            out.append(self._str(key))
        elif key is True or key is False or key is None:
            out.append('"' + json.dumps(key) + '"')
        elif isinstance(key, (int, float)):
            text = int.__repr__(key) if isinstance(key, int) else float.__repr__(key)
            out.append(text if self._unquoted else '"' + text + '"')
        elif isinstance(key, enum.Enum):
            out.append(self._str(key.name))
        elif isinstance(key, tuple):
            self.array(key)
        elif isinstance(key, Mapping):
            self.mapping(key)
        elif hasattr(key, "to_json"):
            self.value(key.to_json())
        else:
            raise TypeError(f"{type(key).__name__} cannot be a JSON map key")


# ---------------------------------------------------------------------------------------------------
# loads
# ---------------------------------------------------------------------------------------------------


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a JSON body as a fastjson reader would; raises BodyDecodeError on any bad input.

    Standard JSON goes through `json.loads` (C). Otherwise the lenient parser accepts fastjson's
    unquoted keys (numbers, identifiers), objects/arrays as keys, single-quoted strings and extra
    commas. Trailing content after the value is an error, as are empty input and bad UTF-8.
    """
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BodyDecodeError(f"JSON body is not valid UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise BodyDecodeError("JSON body is nested too deeply") from None
    except ValueError:
        pass
    try:
        return _Parser(text).document()
    except RecursionError:
        raise BodyDecodeError("JSON body is nested too deeply") from None


_WS = re.compile(r"[ \t\n\r\f\b]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_SINGLE_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'", re.DOTALL)
_SINGLE_TO_DOUBLE = re.compile(r"\\.|\"", re.DOTALL)
_LITERALS = {"true": True, "false": False, "null": None}
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _requote(match: re.Match[str]) -> str:
    text = match.group(0)
    if text == '"':
        return '\\"'
    if text == "\\'":
        return "'"
    return text


class _Parser:
    """Recursive descent over the text; positions are str indices. Strings use the C scanstring."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        self._text = text

    def fail(self, pos: int, what: str) -> BodyDecodeError:
        near = self._text[pos : pos + 20]
        return BodyDecodeError(f"JSON body does not parse at char {pos}: {what} (near {near!r})")

    def document(self) -> Any:
        text = self._text
        value, pos = self.value(_WS.match(text, 0).end())  # type: ignore[union-attr]
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if pos != len(text):
            raise self.fail(pos, "trailing content after the JSON value")
        return value

    def value(self, pos: int) -> tuple[Any, int]:
        text = self._text
        if pos >= len(text):
            raise self.fail(pos, "unexpected end of input")
        char = text[pos]
        if char == "{":
            return self.obj(pos + 1)
        if char == "[":
            return self.array(pos + 1)
        if char == '"':
            return self.string(pos + 1)
        if char == "'":
            return self.single_quoted(pos)
        if char == "-" or "0" <= char <= "9":
            return self.number(pos)
        match = _IDENT.match(text, pos)
        if match is not None and match.group(0) in _LITERALS:
            return _LITERALS[match.group(0)], match.end()
        raise self.fail(pos, "expected a JSON value")

    def string(self, pos: int) -> tuple[str, int]:
        try:
            return _scanstring(self._text, pos, False)
        except ValueError as exc:
            raise self.fail(pos - 1, f"bad string ({exc})") from None

    def single_quoted(self, pos: int) -> tuple[str, int]:
        match = _SINGLE_QUOTED.match(self._text, pos)
        if match is None:
            raise self.fail(pos, "unterminated single-quoted string")
        inner = _SINGLE_TO_DOUBLE.sub(_requote, match.group(1))
        try:
            value, _ = _scanstring('"' + inner + '"', 1, False)
        except ValueError as exc:
            raise self.fail(pos, f"bad string ({exc})") from None
        return value, match.end()

    def number(self, pos: int) -> tuple[int | float, int]:
        match = _NUMBER.match(self._text, pos)
        if match is None:
            raise self.fail(pos, "bad number")
        text = match.group(0)
        if match.group(1) is None and match.group(2) is None:
            return int(text), match.end()
        return float(text), match.end()

    def skip(self, pos: int) -> int:
        return _WS.match(self._text, pos).end()  # type: ignore[union-attr]

    def skip_commas(self, pos: int) -> int:
        # fastjson's AllowArbitraryCommas (on by default): `[1,,2]`, `{,"a":1,}` are accepted.
        text = self._text
        pos = self.skip(pos)
        while pos < len(text) and text[pos] == ",":
            pos = self.skip(pos + 1)
        return pos

    def key(self, pos: int) -> tuple[Any, int]:
        text = self._text
        char = text[pos]
        if char == '"':
            return self.string(pos + 1)
        if char == "'":
            return self.single_quoted(pos)
        if char == "{" or char == "[":
            value, end = self.value(pos)
            return _freeze(value), end
        if char == "-" or "0" <= char <= "9":
            return self.number(pos)
        match = _IDENT.match(text, pos)
        if match is None:
            raise self.fail(pos, "expected an object key")
        return match.group(0), match.end()

    def obj(self, pos: int) -> tuple[dict[Any, Any], int]:
        text = self._text
        end = len(text)
        result: dict[Any, Any] = {}
        pos = self.skip_commas(pos)
        while True:
            if pos >= end:
                raise self.fail(pos, "unterminated object")
            if text[pos] == "}":
                return result, pos + 1
            key, pos = self.key(pos)
            pos = self.skip(pos)
            if pos >= end or text[pos] != ":":
                raise self.fail(pos, "expected ':' after an object key")
            value, pos = self.value(self.skip(pos + 1))
            result[key] = value
            pos = self.skip(pos)
            if pos < end and text[pos] == ",":
                pos = self.skip_commas(pos)
            elif pos < end and text[pos] != "}":
                raise self.fail(pos, "expected ',' or '}' in an object")

    def array(self, pos: int) -> tuple[list[Any], int]:
        text = self._text
        end = len(text)
        result: list[Any] = []
        pos = self.skip_commas(pos)
        while True:
            if pos >= end:
                raise self.fail(pos, "unterminated array")
            if text[pos] == "]":
                return result, pos + 1
            value, pos = self.value(pos)
            result.append(value)
            pos = self.skip(pos)
            if pos < end and text[pos] == ",":
                pos = self.skip_commas(pos)
            elif pos < end and text[pos] != "]":
                raise self.fail(pos, "expected ',' or ']' in an array")


# ---------------------------------------------------------------------------------------------------
# object-keyed maps
# ---------------------------------------------------------------------------------------------------


def object_key_items(value: Any, what: str = "map") -> list[tuple[Mapping[str, Any], Any]]:
    """(key object, value) pairs of a map whose keys are JSON objects (e.g. MessageQueue -> offset).

    Accepts every form writers use: a dict keyed by ObjectKey (fastjson's default), a dict whose
    string keys hold the key object as JSON text (WriteNonStringKeyAsString), or a list of
    `[key, value]` pairs. None is an empty map. Anything else raises BodyDecodeError naming `what`.
    """
    if value is None:
        return []
    pairs: list[tuple[Mapping[str, Any], Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                key = _key_from_text(key, what)
            if not isinstance(key, Mapping):
                raise BodyDecodeError(f"{what}: key {key!r} is not an object")
            pairs.append((key, item))
        return pairs
    if isinstance(value, list):
        for entry in value:
            if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and isinstance(entry[0], Mapping)):
                raise BodyDecodeError(f"{what}: entry {entry!r} is not a [key object, value] pair")
            pairs.append((entry[0], entry[1]))
        return pairs
    raise BodyDecodeError(f"{what} is not a JSON object")


def _key_from_text(key: str, what: str) -> Mapping[str, Any]:
    try:
        parsed = loads(key)
    except BodyDecodeError:
        raise BodyDecodeError(f"{what}: key {key!r} is not a JSON object") from None
    if not isinstance(parsed, dict):
        raise BodyDecodeError(f"{what}: key {key!r} is not a JSON object")
    return ObjectKey(parsed)
