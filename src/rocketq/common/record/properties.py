"""The properties string of a message: name U+0001 value, joined with U+0002, no trailing separator.

Port of MessageDecoder.messageProperties2String / string2messageProperties (4.9.8). The decode is
the hottest string work of a consumer and of SQL92 filtering: the compiled one (_crecord) walks the
string once, without the pure-Python one's list of segments. Leaf module: rocketq.common.message
imports it.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq.common import constants as C
from rocketq.common.record.accel import compiled

_SEP = C.PROPERTY_SEPARATOR  # between properties
_KV = C.NAME_VALUE_SEPARATOR  # between a name and its value
_join_entry = _KV.join


def encode_properties(props: Mapping[str, str | None]) -> str:
    """The properties string of `props`; entries whose value is None are left out."""
    try:  # the common case (every value a str) at C speed
        return _SEP.join(map(_join_entry, props.items()))  # type: ignore[arg-type]
    except TypeError:  # a None (left out) or a non-str value
        return _SEP.join(f"{k}{_KV}{v}" for k, v in props.items() if v is not None)


def encode_properties_bytes(props: Mapping[str, str | None]) -> bytes:
    """encode_properties as the UTF-8 a record or a batch entry holds; b"" for no properties."""
    return encode_properties(props).encode("utf-8") if props else b""


def _decode_properties(text: str) -> dict[str, str]:
    """Java string2messageProperties: a segment counts only with >= 1 char each side of U+0001."""
    props: dict[str, str] = {}
    if not text:
        return props
    for segment in text.split(_SEP):
        # Split at the first U+0001; no separator, an empty name or an empty value skips the segment.
        name, _, value = segment.partition(_KV)
        if name and value:
            props[name] = value
    return props


def _properties_for_store(text: str, drop: str, name: str, value: str) -> tuple[dict[str, str], bytes | None]:
    """The properties a broker stores for a request's properties string: decode_properties(text) without
    `drop` and with `name` set to `value`, and their encode_properties_bytes when it can be had without
    encoding the dict (the compiled one cuts it from `text`); here always None, the store encodes the
    dict: a cut made by Python string operations measured slower than the encode (docs/performance-log.md)."""
    props = _decode_properties(text)
    props.pop(drop, None)
    props[name] = value
    return props, None


decode_properties = compiled.decode_properties if compiled is not None else _decode_properties
decode_properties_py = _decode_properties
properties_for_store = compiled.properties_for_store if compiled is not None else _properties_for_store
properties_for_store_py = _properties_for_store
