"""Reading properties for filters: the decoders (pure Python and, when built, compiled) agree with a
line-by-line port of Java's string2messageProperties, on arbitrary properties strings and on stored records.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.filter.properties import PropertySelector
from rocketq.common.message import MessageExt, decode_properties, encode_properties
from rocketq.common.record.codec import encode_record, record_properties, record_properties_text
from rocketq.common.record.properties import decode_properties_py

NAMES = ["a", "b", "ab", "TAGS"]
# Short texts over the separators and a few name characters hit every odd case: empty names, empty
# values, values holding U+0001, repeated names, separators at either end.
texts = st.lists(st.sampled_from(["a", "b", "TAGS", "\x01", "\x02", "x"]), max_size=24).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_fast_decode_is_java_decode(text: str) -> None:
    assert decode_properties(text) == java_string2message_properties(text)
    assert decode_properties_py(text) == java_string2message_properties(text)


def java_string2message_properties(text: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties step by step: split at U+0002, then at the first U+0001;
    a segment counts with at least one character each side."""
    props: dict[str, str] = {}
    for segment in text.split("\x02"):
        name, sep, value = segment.partition("\x01")
        if sep and name and value:
            props[name] = value
    return props


@settings(max_examples=400, deadline=None)
@given(texts)
def test_selector_returns_what_a_full_decode_holds(text: str) -> None:
    full = decode_properties(text)
    expected = {name: full[name] for name in NAMES if name in full}
    assert PropertySelector(NAMES).select(text) == expected


def test_selector_cases() -> None:
    select = PropertySelector(["a", "price"]).select
    assert select(encode_properties({"price": "10", "xprice": "20", "a": "v\x01w"})) == {
        "price": "10",
        "a": "v\x01w",
    }
    assert select("price\x011\x02price\x012") == {"price": "2"}
    assert select("price\x011\x02price\x01") == {"price": "1"}  # the empty later one does not count
    assert select("") == {}


@pytest.mark.parametrize("v6", [False, True])
def test_record_properties(v6: bool) -> None:
    host = ("::1", 10911) if v6 else ("127.0.0.1", 10911)
    props = {"TAGS": "TagA", "price": "150", "note": "caf\u00e9 \u2603"}
    record = encode_record(MessageExt("T", b"b" * 500, properties=props, born_host=host, store_host=host))
    assert record_properties(record) == props
    assert record_properties_text(memoryview(record)) == encode_properties(props)


def test_record_without_properties_or_garbled() -> None:
    assert record_properties(encode_record(MessageExt("T", b"x"))) == {}
    assert record_properties_text(b"\x00" * 10) == ""
    record = encode_record(MessageExt("T", b"x", properties={"a": "1"}))
    assert record_properties_text(record[:-3]) in ("", "a\x01")  # cut short: never raises
