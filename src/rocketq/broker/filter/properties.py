"""Message properties read straight from a stored record, for filters that run once per message.

Port of MessageDecoder.decodeProperties(ByteBuffer) and string2messageProperties (4.9.8), which
Java's ExpressionMessageFilter uses to evaluate SQL92 on the commit log. `select_properties` reads
only the properties an expression names, which costs a few string searches instead of splitting
the whole properties string; it returns what decode_properties would hold for those names.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable

from rocketq.common import constants as C
from rocketq.remoting.protocol.message_codec import RECORD_HEADER, SYSFLAG_POS

_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_SEP = C.PROPERTY_SEPARATOR  # between properties
_KV = C.NAME_VALUE_SEPARATOR  # between a name and its value
# Header size by the two IPv6 sysFlag bits (born host 0x10, store host 0x20) shifted down to 0..3.
_HEADER_SIZES = tuple(RECORD_HEADER[(bool(i & 1), bool(i & 2))].size for i in range(4))
_V6_SHIFT = 4
assert C.MessageSysFlag.BORNHOST_V6_FLAG == 1 << _V6_SHIFT
assert C.MessageSysFlag.STOREHOSTADDRESS_V6_FLAG == 2 << _V6_SHIFT
# One property per match: a segment starts the text or follows the separator, its name runs to the
# first name-value separator and both sides are non-empty; dict() keeps the last of a name, as Java.
_PROPERTY_RE = re.compile(f"(?:^|{_SEP})([^{_KV}{_SEP}]+){_KV}([^{_SEP}]+)")


def decode_properties_fast(text: str) -> dict[str, str]:
    """rocketq.common.message.decode_properties with the loop in C."""
    return dict(_PROPERTY_RE.findall(text))


def record_properties_text(record: bytes | bytearray | memoryview) -> str:
    """The properties string of a stored record (protocol.md 4.1); "" when the record cannot hold one."""
    try:
        (sys_flag,) = _INT.unpack_from(record, SYSFLAG_POS)
        header_size = _HEADER_SIZES[(sys_flag >> _V6_SHIFT) & 3]
        (body_len,) = _INT.unpack_from(record, header_size - 4)  # BODYLEN ends the fixed header
        pos = header_size + body_len
        pos += 1 + record[pos]  # topic length byte and topic
        (props_len,) = _SHORT.unpack_from(record, pos)
        if props_len <= 0:
            return ""
        pos += 2
        return bytes(record[pos : pos + props_len]).decode("utf-8")
    except (struct.error, IndexError, UnicodeDecodeError):
        return ""


def record_properties(record: bytes | bytearray | memoryview) -> dict[str, str]:
    """All properties of a stored record; none when it is too short or garbled."""
    return decode_properties_fast(record_properties_text(record))


class PropertySelector:
    """Reads a fixed set of property names out of properties strings."""

    __slots__ = ("_keys",)

    def __init__(self, names: Iterable[str]) -> None:
        # (name, "name<KV>" at the start of the text, "<SEP>name<KV>" anywhere else)
        self._keys = tuple((n, n + _KV, _SEP + n + _KV) for n in sorted(names))

    def select(self, text: str) -> dict[str, str]:
        """{name: value} for the selected names present in `text` (same values as a full decode)."""
        found: dict[str, str] = {}
        for name, head, inner in self._keys:
            i = text.rfind(inner)  # the last occurrence wins, as in a full decode
            if i >= 0:
                start = i + len(inner)
            elif text.startswith(head):
                start = len(head)
            else:
                continue
            end = text.find(_SEP, start)
            value = text[start:] if end < 0 else text[start:end]
            if not value:  # an empty value does not count; an earlier one may: decode it all
                value = decode_properties_fast(text).get(name, "")
                if not value:
                    continue
            found[name] = value
        return found
