from hypothesis import given
from hypothesis import strategies as st

from rocketq.common.message import Message, MessageExt, MessageQueue, decode_properties, encode_properties

_text = st.text(
    alphabet=st.characters(exclude_characters="\u0001\u0002", exclude_categories=["Cs"]), min_size=1
)


@given(st.dictionaries(_text, _text, max_size=8))
def test_properties_round_trip(props: dict[str, str]) -> None:
    assert decode_properties(encode_properties(props)) == props


def test_properties_decoding_drops_segments_like_java() -> None:
    # empty key, empty value and a segment without separator are dropped (string2messageProperties)
    text = "\u0001v\u0002k\u0001\u0002plain\u0002TAGS\u0001TagA"
    assert decode_properties(text) == {"TAGS": "TagA"}
    assert decode_properties("") == {}


def test_message_views_over_properties() -> None:
    msg = Message("T", b"x", tags="TagA", keys=["k1", "k2"], properties={"a": "1"}, delay_level=3)
    assert msg.properties["TAGS"] == "TagA"
    assert msg.properties["KEYS"] == "k1 k2"
    assert msg.keys == ["k1", "k2"]
    assert msg.delay_level == 3
    msg.delay_level = 0
    assert "DELAY" not in msg.properties
    msg.deliver_time_ms = 1234
    assert msg.deliver_time_ms == 1234
    assert msg.wait_store_msg_ok


def test_message_ext_msg_id_prefers_uniq_key() -> None:
    ext = MessageExt("T", b"", offset_msg_id="C0A8001400002A9F000000000001E240", queue_id=2)
    assert ext.msg_id == "C0A8001400002A9F000000000001E240"
    ext.properties["UNIQ_KEY"] = "ABC"
    assert ext.msg_id == "ABC"
    assert ext.queue_id == 2


def test_message_queue_orders_like_java() -> None:
    mqs = [MessageQueue("T", "b", 0), MessageQueue("T", "a", 1), MessageQueue("T", "a", 0)]
    assert sorted(mqs) == [MessageQueue("T", "a", 0), MessageQueue("T", "a", 1), MessageQueue("T", "b", 0)]
    assert MessageQueue.from_json(mqs[0].to_json()) == mqs[0]
