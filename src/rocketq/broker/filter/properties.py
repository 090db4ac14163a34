"""Message properties read straight from a stored record, for filters that run once per message.

Java's ExpressionMessageFilter decodes a record's properties (MessageDecoder.decodeProperties) to
evaluate SQL92 on the commit log; reading and decoding them is rocketq.common.record's. `PropertySelector` reads
only the properties an expression names, which costs a few string searches instead of splitting
the whole properties string; it returns what decode_properties would hold for those names.
"""

from __future__ import annotations

from collections.abc import Iterable

from rocketq.common import constants as C
from rocketq.common.record.codec import record_properties, record_properties_text
from rocketq.common.record.properties import decode_properties

__all__ = ["PropertySelector", "decode_properties", "record_properties", "record_properties_text"]

_SEP = C.PROPERTY_SEPARATOR  # between properties
_KV = C.NAME_VALUE_SEPARATOR  # between a name and its value


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
                value = decode_properties(text).get(name, "")
                if not value:
                    continue
            found[name] = value
        return found
