"""The machinery behind typed headers: dataclass fields <-> extFields under the Java field names.

Port of RocketMQ's CommandCustomHeader + RemotingCommand.decodeCommandCustomHeader (docs/protocol.md 1.7).
A header is a frozen slots dataclass subclassing CommandHeader; each field names its Java spelling with
`jfield("javaName")` (or defaults to the camelCase of the python name). A field without a default is
required (@CFNotNull): missing -> MissingHeaderFieldError naming the Java field. Deviation: a Java
@CFNotNull field that has an initializer (e.g. CreateTopicRequestHeader.order = false) is optional here
with that default, which is what a Java server effectively does (it logs the missing field and keeps the
initial value). Values encode as Java toString (ints decimal, booleans "true"/"false"); decoding follows
Java's parsers: Boolean.parseBoolean (only case-insensitive "true" is true), Integer/Long.parseLong
(ASCII decimal, optional sign, no blanks, in range). Fields annotated `Int32` are Java int/Integer and
must fit 32 bits; plain `int` fields are Java long/Long. Unknown keys are ignored.

    @dataclass(frozen=True, slots=True)
    class GetMaxOffsetRequestHeader(CommandHeader):
        topic: str = jfield("topic")
        queue_id: Int32 = jfield("queueId")
        bname: str | None = jfield("bname", None)

Strategy: the first use of a header class compiles a decoder and an encoder for it (the way dataclasses
generate __init__), so decoding a header costs one dict lookup and at most one parse per field, with no
per-field dispatch; this runs on every request.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, ClassVar, Self, TypeVar

from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError
from rocketq.remoting.protocol.header_msgpack import (
    compiled as _cheader,  # the compiled codec module, or None
)

__all__ = ["CommandHeader", "Int32", "jfield"]

_MISSING: Any = dataclasses.MISSING


class _Int32Marker:
    """Annotated metadata: this int is a Java int/Integer (32 bits), not a long."""


Int32 = Annotated[int, _Int32Marker]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_EMPTY: Mapping[str, str] = types.MappingProxyType({})
T = TypeVar("T")


def jfield(java_name: str, default: Any = _MISSING) -> Any:
    """A header field stored under `java_name` in extFields; no default means required."""
    return dataclasses.field(default=default, metadata={"java": java_name})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def parse_java_bool(value: str) -> bool:
    """Java Boolean.parseBoolean: true only for a case-insensitive "true" (no trimming)."""
    return value.lower() == "true"


def parse_java_long(value: str) -> int:
    """Java Long.parseLong: ASCII decimal, optional sign, no blanks or underscores, 64-bit range."""
    if value.isdigit() and value.isascii():  # the common case, without the regex
        number = int(value)
    elif _JAVA_INTEGER.fullmatch(value) is not None:
        number = int(value)
    else:
        raise ValueError(value)
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise ValueError(value)
    return number


def parse_java_int(value: str) -> int:
    """Java Integer.parseInt: like parse_java_long, 32-bit range."""
    if value.isdigit() and value.isascii():
        number = int(value)
    elif _JAVA_INTEGER.fullmatch(value) is not None:
        number = int(value)
    else:
        raise ValueError(value)
    if not _INT32_MIN <= number <= _INT32_MAX:
        raise ValueError(value)
    return number


def _java_bool_string(value: Any) -> str:
    return "true" if value else "false"


# kind -> (parser, encoder, what a bad value was expected to be); str needs neither.
_KINDS: dict[str, tuple[Callable[[str], Any], Callable[[Any], str], str]] = {
    "int32": (parse_java_int, int.__repr__, "a 32-bit integer"),
    "int64": (parse_java_long, int.__repr__, "a 64-bit integer"),
    "bool": (parse_java_bool, _java_bool_string, "a boolean"),
    "float": (float, float.__repr__, "a number"),
}


# Digit counts that always fit: 9 digits in a Java int, 18 in a long (decoders skip the parser call).
_FAST_DIGITS = {"int32": 9, "int64": 18}


class _FieldSpec(typing.NamedTuple):
    attr: str
    java: str
    kind: str  # "str", "int32", "int64", "bool" or "float"
    required: bool
    default: Any
    kw_only: bool = False


def _kind_of(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported header field type {annotation!r}")
        return _kind_of(args[0])
    if origin is Annotated:
        base, *extras = typing.get_args(annotation)
        if base is int and _Int32Marker in extras:
            return "int32"
        return _kind_of(base)
    kinds = {str: "str", bool: "bool", int: "int64", float: "float"}
    if annotation in kinds:
        return kinds[annotation]
    raise TypeError(f"unsupported header field type {annotation!r}")


def _build_specs(cls: type) -> tuple[_FieldSpec, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    specs = []
    for f in dataclasses.fields(cls):
        if f.default_factory is not _MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: header fields take plain defaults, not factories")
        java = f.metadata.get("java", _camel(f.name))
        kw_only = bool(f.kw_only)
        specs.append(
            _FieldSpec(f.name, java, _kind_of(hints[f.name]), f.default is _MISSING, f.default, kw_only)
        )
    return tuple(specs)


def _compile_decoder(
    cls: type, specs: tuple[_FieldSpec, ...], build: tuple[Callable[..., Any], tuple[str, ...]] | None = None
) -> Callable[[Mapping[str, str]], Any]:
    env: dict[str, Any] = {"cls": cls, "Missing": MissingHeaderFieldError, "Bad": BadHeaderValueError}
    name = cls.__name__
    lines = ["def decode(ext):", "    get = ext.get"]
    values = []
    for i, spec in enumerate(specs):
        raw, val = f"r{i}", f"v{i}"
        lines.append(f"    {raw} = get({spec.java!r})")
        if spec.required:
            lines.append(f"    if {raw} is None: raise Missing({name!r}, {spec.java!r})")
        if spec.kind == "str":
            if not spec.required:
                env[f"d{i}"] = spec.default
                lines.append(f"    if {raw} is None: {raw} = d{i}")
            values.append(raw)
            continue
        parser, _, expected = _KINDS[spec.kind]
        env[f"p{i}"] = parser
        indent = "    "
        if not spec.required:
            env[f"d{i}"] = spec.default
            lines.append(f"    if {raw} is None: {val} = d{i}")
            lines.append("    else:")
            indent = "        "
        if spec.kind == "bool":  # parse_java_bool, inlined (it cannot fail)
            lines.append(f'{indent}{val} = {raw}.lower() == "true"')
            values.append(val)
            continue
        fast_digits = _FAST_DIGITS.get(spec.kind)
        if fast_digits is not None:
            # Inlined common case of the Java parsers: plain ASCII digits short enough to be in range.
            lines.append(
                f"{indent}if {raw}.isascii() and {raw}.isdigit() and len({raw}) <= {fast_digits}: {val} = int({raw})"
            )
            lines.append(f"{indent}else:")
            indent += "    "
        lines.append(f"{indent}try: {val} = p{i}({raw})")
        lines.append(
            f"{indent}except ValueError: raise Bad({name!r}, {spec.java!r}, {raw}, {expected!r}) from None"
        )
        values.append(val)
    if build is None:
        lines.extend(_construct(cls, specs, values, env))
    else:  # hand the chosen values to `build` instead of constructing the header
        env["build"] = build[0]
        by_attr = {spec.attr: value for spec, value in zip(specs, values, strict=True)}
        picked = ", ".join(by_attr[attr] for attr in build[1])
        # build `tuple`: the values themselves, as a tuple (no call)
        lines.append(f"    return ({picked},)" if build[0] is tuple else f"    return build({picked})")
    exec("\n".join(lines), env)  # generated from the class's own field specs
    return typing.cast(Callable[[Mapping[str, str]], Any], env["decode"])


def _construct(cls: type, specs: tuple[_FieldSpec, ...], values: list[str], env: dict[str, Any]) -> list[str]:
    """The decoder's last lines: build the instance.

    A frozen dataclass __init__ goes through object.__setattr__ by name for every field; writing the
    slots through their descriptors is about twice as fast and equivalent when there is no
    __post_init__ (otherwise the real __init__ runs).
    """
    slots = cls.__dict__.get("__slots__", ())
    if hasattr(cls, "__post_init__") or any(spec.attr not in slots for spec in specs):
        args = [
            f"{spec.attr}={value}" if spec.kw_only else value
            for spec, value in zip(specs, values, strict=True)
        ]
        return [f"    return cls({', '.join(args)})"]
    env["new"] = object.__new__
    lines = ["    o = new(cls)"]
    for i, (spec, value) in enumerate(zip(specs, values, strict=True)):
        env[f"s{i}"] = cls.__dict__[spec.attr].__set__
        lines.append(f"    s{i}(o, {value})")
    lines.append("    return o")
    return lines


def _compile_encoder(specs: tuple[_FieldSpec, ...]) -> Callable[[Any], dict[str, str]]:
    env: dict[str, Any] = {}
    lines = ["def encode(self):", "    out = {}"]
    for i, spec in enumerate(specs):
        lines.append(f"    v = self.{spec.attr}")
        if spec.kind == "str":
            lines.append(f"    if v is not None: out[{spec.java!r}] = v")
        else:
            env[f"e{i}"] = _KINDS[spec.kind][1]
            lines.append(f"    if v is not None: out[{spec.java!r}] = e{i}(v)")
    lines.append("    return out")
    exec("\n".join(lines), env)  # generated from the class's own field specs
    return typing.cast(Callable[[Any], dict[str, str]], env["encode"])


class _Codec(typing.NamedTuple):
    specs: tuple[_FieldSpec, ...]
    decode: Callable[[Mapping[str, str]], Any]
    encode: Callable[[Any], dict[str, str]]


class CommandHeader:
    """Base of every typed header; subclasses are `@dataclass(frozen=True, slots=True)`."""

    __slots__ = ()
    _codec_cache: ClassVar[_Codec]

    @classmethod
    def _codec(cls) -> _Codec:
        codec = cls.__dict__.get("_codec_cache")
        if codec is None:
            specs = _build_specs(cls)
            codec = _Codec(specs, _compile_decoder(cls, specs), _compile_encoder(specs))
            type.__setattr__(cls, "_codec_cache", codec)
        return typing.cast(_Codec, codec)

    @classmethod
    def _field_specs(cls) -> tuple[_FieldSpec, ...]:
        return cls._codec().specs

    @classmethod
    def java_names(cls) -> tuple[str, ...]:
        """The extFields keys of this header, in field order."""
        return tuple(spec.java for spec in cls._codec().specs)

    @classmethod
    def compile_decoder_into(
        cls, build: Callable[..., T], attrs: Sequence[str]
    ) -> Callable[[Mapping[str, str] | None], T]:
        """A decoder with this header's rules (required fields, parsers, the same errors, checked in field
        order) that returns `build(*values of attrs)` instead of a header instance: for a hot path that
        keeps its own record of a few fields (one object built instead of two). `build` may be `tuple`:
        the values of attrs as a tuple, made without a call."""
        unknown = set(attrs) - {spec.attr for spec in cls._codec().specs}
        if unknown:
            raise TypeError(f"{cls.__name__} has no fields {sorted(unknown)}")
        decode = _compile_decoder(cls, cls._codec().specs, (build, tuple(attrs)))

        def decode_ext(ext: Mapping[str, str] | None) -> T:
            return typing.cast(T, decode(_EMPTY if ext is None else ext))

        specs = cls._codec().specs
        if _cheader is None or any(spec.kind not in ("str", "bool", *_FAST_DIGITS) for spec in specs):
            return decode_ext
        # The compiled twin (rocketq.remoting.protocol._cheader.FieldDecoder) decodes fields in their
        # common form and hands anything else to decode_ext: the same values, the same errors.
        index = {spec.attr: i for i, spec in enumerate(specs)}
        fields = [(s.java, s.kind, _FAST_DIGITS.get(s.kind, 0), s.required, s.default) for s in specs]
        return typing.cast(
            Callable[[Mapping[str, str] | None], T],
            _cheader.FieldDecoder(fields, [index[attr] for attr in attrs], build, decode_ext),
        )

    @classmethod
    def from_ext_fields(cls, ext: Mapping[str, str] | None) -> Self:
        """Decode from extFields; MissingHeaderFieldError / BadHeaderValueError name the Java field."""
        return typing.cast(Self, cls._codec().decode(_EMPTY if ext is None else ext))

    def to_ext_fields(self) -> dict[str, str]:
        """Encode to extFields: Java toString of every non-None field, under its Java name."""
        return type(self)._codec().encode(self)
