"""properties_text_with: the stored properties cut from a request's text are exactly what encoding the
edited dict writes, or it declines (None), for any text, with either decoder (compiled or pure)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rocketq.common.record.properties import (
    decode_properties,
    decode_properties_py,
    encode_properties,
    properties_text_with,
)

# Separators, the names edited and a few characters that take 2, 3 and 4 UTF-8 bytes.
texts = st.lists(
    st.sampled_from(["\x01", "\x02", "a", "b", "WAIT", "true", "CLUSTER", "é", "😀"]), max_size=30
).map("".join)


def edited(decoded: dict[str, str], value: str) -> str:
    """What the send path stored before: WAIT dropped, CLUSTER set, the dict encoded."""
    props = dict(decoded)
    props.pop("WAIT", None)
    props["CLUSTER"] = value
    return encode_properties(props)


@pytest.mark.parametrize("decode", [decode_properties, decode_properties_py], ids=["active", "pure"])
@settings(max_examples=800, deadline=None)
@given(text=st.one_of(texts, st.text(max_size=60)), value=st.sampled_from(["DefaultCluster", "", "c\x01x"]))
@example(text="UNIQ_KEY\x01AB\x02WAIT\x01true", value="DefaultCluster")
@example(text="WAIT\x01true\x02UNIQ_KEY\x01AB", value="DefaultCluster")
@example(text="a\x01b\x02WAIT\x01true\x02c\x01d", value="DefaultCluster")
@example(text="WAIT\x01true", value="DefaultCluster")
@example(text="a\x01WAIT\x01true\x02WAIT\x01true", value="x")
def test_the_cut_text_is_the_encoded_edit_or_none(decode, text: str, value: str) -> None:  # type: ignore[no-untyped-def]
    decoded = decode(text)
    got = properties_text_with(text, decoded, "WAIT", "CLUSTER", value)
    if got is not None:
        assert got == edited(decoded, value)


def test_the_common_texts_are_cut_not_declined() -> None:
    for text in (
        "UNIQ_KEY\x01AB\x02WAIT\x01true",  # our SDK
        "KEYS\x01k\x02WAIT\x01true\x02TAGS\x01t\x02UNIQ_KEY\x01AB",  # a Java client's map order
        "UNIQ_KEY\x01AB",
    ):
        assert properties_text_with(text, decode_properties(text), "WAIT", "CLUSTER", "c") is not None
    # a repeated name, an empty value, CLUSTER given by the client: declined (the dict decides)
    for text in ("a\x01b\x02a\x01c", "a\x01\x02b\x01c", "CLUSTER\x01x\x02a\x01b"):
        assert properties_text_with(text, decode_properties(text), "WAIT", "CLUSTER", "c") is None
