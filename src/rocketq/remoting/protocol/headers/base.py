"""The machinery behind typed headers: dataclass fields <-> extFields under the Java field names.

Port of RocketMQ's CommandCustomHeader + RemotingCommand.decodeCommandCustomHeader (protocol.md 1.7).
A header is a frozen slots dataclass subclassing CommandHeader; each field names its Java spelling with
`jfield("javaName")` (or defaults to the camelCase of the python name). A field without a default is
required (@CFNotNull): missing -> MissingHeaderFieldError naming the Java field. Values encode as Java
toString (ints decimal, booleans "true"/"false"); decoding follows Java's parsers (Boolean.parseBoolean:
only case-insensitive "true" is true). Unknown keys are ignored.

    @dataclass(frozen=True, slots=True)
    class GetRouteInfoRequestHeader(CommandHeader):
        topic: str = jfield("topic")
        accept_standard_json_only: bool | None = jfield("acceptStandardJsonOnly", None)
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError

_MISSING: Any = dataclasses.MISSING


def jfield(java_name: str, default: Any = _MISSING) -> Any:
    """A header field stored under `java_name` in extFields; no default means required."""
    return dataclasses.field(default=default, metadata={"java": java_name})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _parse_bool(value: str) -> bool:
    return value.strip().lower() == "true"


def _parse_int(value: str) -> int:
    # Java Integer.parseInt / Long.parseLong: decimal with optional sign, no whitespace.
    if not value or value.strip() != value:
        raise ValueError(value)
    return int(value, 10)


_PARSERS: dict[type, Callable[[str], Any]] = {str: str, int: _parse_int, bool: _parse_bool, float: float}
_EXPECTED = {str: "a string", int: "an integer", bool: "a boolean", float: "a number"}


def _to_java_string(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


class _FieldSpec(typing.NamedTuple):
    attr: str
    java: str
    kind: type
    required: bool


def _base_type(annotation: Any) -> type:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _base_type(args[0])
    if annotation in _PARSERS:
        return typing.cast(type, annotation)
    raise TypeError(f"unsupported header field type {annotation!r}")


class CommandHeader:
    """Base of every typed header; subclasses are `@dataclass(frozen=True, slots=True)`."""

    __slots__ = ()
    _specs: ClassVar[tuple[_FieldSpec, ...] | None] = None

    @classmethod
    def _field_specs(cls) -> tuple[_FieldSpec, ...]:
        specs = cls.__dict__.get("_specs_cache")
        if specs is None:
            hints = typing.get_type_hints(cls)
            specs = tuple(
                _FieldSpec(
                    f.name,
                    f.metadata.get("java", _camel(f.name)),
                    _base_type(hints[f.name]),
                    f.default is _MISSING and f.default_factory is _MISSING,
                )
                for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            )
            type.__setattr__(cls, "_specs_cache", specs)
        return typing.cast(tuple[_FieldSpec, ...], specs)

    @classmethod
    def from_ext_fields(cls, ext: Mapping[str, str] | None) -> Self:
        """Decode from extFields; MissingHeaderFieldError / BadHeaderValueError name the Java field."""
        ext = ext or {}
        kwargs: dict[str, Any] = {}
        for spec in cls._field_specs():
            raw = ext.get(spec.java)
            if raw is None:
                if spec.required:
                    raise MissingHeaderFieldError(cls.__name__, spec.java)
                continue
            try:
                kwargs[spec.attr] = _PARSERS[spec.kind](raw)
            except ValueError:
                raise BadHeaderValueError(cls.__name__, spec.java, raw, _EXPECTED[spec.kind]) from None
        return cls(**kwargs)

    def to_ext_fields(self) -> dict[str, str]:
        """Encode to extFields: Java toString of every non-None field, under its Java name."""
        out: dict[str, str] = {}
        for spec in self._field_specs():
            value = getattr(self, spec.attr)
            if value is not None:
                out[spec.java] = _to_java_string(value)
        return out
