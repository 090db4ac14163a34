"""Base for role configs (NamesrvConfig, BrokerConfig, MessageStoreConfig, ClientConfig).

Fields have Python names with units (`flush_interval_commit_log_ms`) and RocketMQ's spelling as the
alias (`flushIntervalCommitLog`); either is accepted. Sources, later wins: a TOML file or a RocketMQ
`key=value` .properties/.conf file, then command-line `--key value` pairs. An unknown key or a bad
value raises ConfigError naming the key.
"""

from __future__ import annotations

import enum
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

from jproperties import Properties
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import PydanticUndefined

from rocketq import __version__
from rocketq.common.errors import ConfigError


class RocketConfig(BaseModel):
    """A config model: RocketMQ names as aliases, python names too, unknown keys forbidden."""

    # Attribute docstrings become field descriptions: `--help` of the daemons lists them (config_help).
    model_config = ConfigDict(
        populate_by_name=True, extra="forbid", validate_assignment=True, use_attribute_docstrings=True
    )
    # Java's system-property spellings some keys also have (`tls.server.certPath` ...) -> field name.
    JAVA_PROPERTY_NAMES: ClassVar[dict[str, str]] = {}

    @classmethod
    def known_keys(cls) -> dict[str, str]:
        """Every accepted spelling (alias, python name, kebab-case of both) -> python field name."""
        keys: dict[str, str] = {}
        for name, info in cls.model_fields.items():
            for spelling in {name, info.alias or name}:
                keys[spelling] = name
                keys[spelling.replace("_", "-")] = name
        keys.update(cls.JAVA_PROPERTY_NAMES)
        return keys

    @classmethod
    def build(cls, values: Mapping[str, Any], source: str = "configuration") -> Self:
        known = cls.known_keys()
        data: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                raise ConfigError(f"{source}: unknown key {key!r} for {cls.__name__}")
            data[known[key]] = value
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            alias = cls.model_fields[str(first["loc"][0])].alias if first["loc"] else None
            raise ConfigError(
                f"{source}: bad value for {alias or loc!r}: {first['msg']} (got {first.get('input')!r})"
            ) from None


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Key/values of a TOML file (.toml) or a RocketMQ properties file (anything else)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {p}: {exc.strerror}") from None
    if p.suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: not valid TOML: {exc}") from None
        return _flatten(data)
    return parse_properties(text)


def _flatten(data: Mapping[str, Any]) -> dict[str, Any]:
    """TOML tables are allowed for grouping ([store], [broker]); their keys join the top level."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(_flatten(value))
        else:
            flat[key] = value
    return flat


def parse_properties(text: str) -> dict[str, str]:
    """Key/values of a Java .properties text, read as java.util.Properties#load reads them.

    `=`, `:` or whitespace between key and value, `#` and `!` comments, `\\` line continuations, and
    escapes (\\t, \\uXXXX, an escaped separator inside a key), through jproperties. Later keys win.
    """
    props = Properties()
    props.load(text.encode("utf-8"), "utf-8")
    return {str(key): str(value.data) for key, value in props.items()}


def parse_cli_overrides(args: Iterable[str]) -> dict[str, str]:
    """`--key value` and `--key=value` pairs (kebab, snake or RocketMQ camelCase keys)."""
    items = list(args)
    out: dict[str, str] = {}
    i = 0
    while i < len(items):
        arg = items[i]
        if not arg.startswith("--"):
            raise ConfigError(f"unexpected argument {arg!r}; options are --key value")
        key = arg[2:]
        if "=" in key:
            key, _, value = key.partition("=")
        else:
            if i + 1 >= len(items):
                raise ConfigError(f"option --{key} needs a value")
            i += 1
            value = items[i]
        out[key] = value
        i += 1
    return out


class DaemonArgs:
    """A daemon's own options (`-c FILE`, `-p`); everything else is `--KEY VALUE` config overrides."""

    def __init__(self) -> None:
        self.config_file: str | None = None
        self.print_config = False
        self.overrides: list[str] = []


def config_help(*models: type[RocketConfig]) -> str:
    """Every key of the models: its RocketMQ name, its default and its description (the daemons' --help)."""
    lines: list[str] = []
    for model in models:
        lines.append(f"\n{model.__name__} keys (in the -c file as key=value, or as --key value):")
        for name, info in model.model_fields.items():
            default = (
                info.get_default(call_default_factory=True)
                if info.default is not PydanticUndefined or info.default_factory
                else ""
            )
            shown = default.value if isinstance(default, enum.Enum) else default  # as a file would spell it
            lines.append(f"  {info.alias or name} (default: {shown})")
            for text in (info.description or "").strip().splitlines():
                lines.append(f"      {text.strip()}")
    return "\n".join(lines)


def parse_daemon_args(
    argv: Iterable[str], usage: str, details: Callable[[], str] | None = None
) -> DaemonArgs:
    """The argv of `rocketq namesrv|broker`: `-c FILE`, `-p`, `-h` and `-v` are the daemon's own (RocketMQ's
    mqnamesrv/mqbroker spell them the same); the rest is kept for parse_cli_overrides. `--help` prints the
    usage and then `details()` (every configuration key)."""
    args = DaemonArgs()
    items = iter(argv)
    for arg in items:
        if arg in ("-h", "--help"):
            print(usage)
            if details is not None:
                print(details())
            raise SystemExit(0)
        if arg in ("-v", "--version"):
            print(f"rocketq {__version__}")
            raise SystemExit(0)
        if arg in ("-c", "--config", "--configFile", "--config-file"):
            args.config_file = next(items, None)
            if args.config_file is None:
                raise ConfigError(f"option {arg} needs a file name")
        elif arg.startswith("-c="):
            args.config_file = arg[3:]
        elif arg in ("-p", "--printConfigItem", "--print-config-item"):
            args.print_config = True
        else:
            args.overrides.append(arg)
    return args
