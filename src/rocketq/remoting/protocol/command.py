"""RemotingCommand: the logical command carried by every frame (docs/protocol.md 1.3, 1.4, 1.8).

Port of org.apache.rocketmq.remoting.protocol.RemotingCommand, without its codec (see header_codec.py
and frame.py). A response always carries its request's opaque and serialize type.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from rocketq.remoting.protocol.codes import LanguageCode, ResponseCode, SerializeType
from rocketq.remoting.protocol.compiled import constructor

# Our daemons and SDK speak as RocketMQ 4.9.8 (clients gate SQL92 on the broker's version >= 232).
CURRENT_VERSION = 409

RPC_TYPE = 0x1  # flag bit 0: response
RPC_ONEWAY = 0x2  # flag bit 1: oneway request

_opaque_counter = itertools.count(1)
# An enum member read through its class costs a descriptor call (~80 ns in 3.11); hot paths use these.
_PYTHON = LanguageCode.PYTHON


def next_opaque() -> int:
    """A process-wide request id, wrapping inside the signed 32-bit range Java uses."""
    return next(_opaque_counter) & 0x7FFFFFFF


@dataclass(slots=True)
class RemotingCommand:
    """One request or response. `ext_fields` holds the custom header, every value a string."""

    code: int
    language: LanguageCode = LanguageCode.PYTHON
    version: int = CURRENT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] | None = None
    body: bytes = b""
    serialize_type: SerializeType = SerializeType.JSON
    # The decoded header's size, for accounting; not part of the wire form.
    header_length: int = field(default=0, compare=False, repr=False)

    # -- flags -----------------------------------------------------------------------------------
    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_TYPE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY)

    def mark_response(self) -> None:
        self.flag |= RPC_TYPE

    def mark_oneway(self) -> None:
        self.flag |= RPC_ONEWAY

    # -- constructors ----------------------------------------------------------------------------
    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        oneway: bool = False,
        serialize_type: SerializeType = SerializeType.JSON,
        remark: str | None = None,
    ) -> RemotingCommand:
        # Positional, in field order (cheaper than keywords); next_opaque() inlined.
        return cls(
            int(code),
            _PYTHON,
            CURRENT_VERSION,
            next(_opaque_counter) & 0x7FFFFFFF,
            RPC_ONEWAY if oneway else 0,
            remark,
            ext_fields,
            body,
            serialize_type,
        )

    def make_response(
        self,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        """The response to this request: same opaque and serialize type, response flag set."""
        return _new_command(
            int(code), _PYTHON, CURRENT_VERSION, self.opaque, RPC_TYPE, remark, ext_fields, body, self.serialize_type, 0
        )  # fmt: skip

    def ext(self, key: str, default: str | None = None) -> str | None:
        """One extFields value (for transport-level code; handlers use typed headers)."""
        if self.ext_fields is None:
            return default
        return self.ext_fields.get(key, default)

    def describe(self) -> str:
        kind = "response" if self.is_response else ("oneway" if self.is_oneway else "request")
        return f"{kind} code={self.code} opaque={self.opaque} remark={self.remark!r}"


# Every field given: without the dataclass's Python __init__ when compiled (rocketq.remoting.protocol.compiled).
_new_command = constructor(RemotingCommand)
