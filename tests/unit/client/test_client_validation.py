import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.errors import MessageIllegalError
from rocketq.client.producer.validation import check_batch, check_message, maybe_compress, properties_string
from rocketq.common.message import Message

MAX = 4 * 1024 * 1024


@pytest.mark.parametrize(
    "msg,match",
    [
        (Message("", b"x"), "empty"),
        (Message("a b", b"x"), "characters"),
        (Message("T" * 128, b"x"), "longer than 127"),
        (Message("SCHEDULE_TOPIC_XXXX", b"x"), "not allowed"),
        (Message("T", b""), "zero"),
        (Message("T", b"x" * (MAX + 1)), "over the maximum"),
        (Message("T", b"x", tags="   "), "blank"),
        (Message("T", b"x", tags="A||B"), "'||'"),
        (Message("T", b"x", properties={"k": "v\u0001"}), "control character"),
    ],
)
def test_illegal_messages(msg: Message, match: str) -> None:
    with pytest.raises(MessageIllegalError, match=match):
        check_message(msg, MAX)


def test_body_type_and_exact_limit() -> None:
    check_message(Message("T", b"x" * MAX), MAX)
    with pytest.raises(MessageIllegalError, match="bytes"):
        check_message(Message("T", "text"), MAX)  # type: ignore[arg-type]
    with pytest.raises(MessageIllegalError, match="Message"):
        check_message("not a message", MAX)  # type: ignore[arg-type]


def test_batch_rules() -> None:
    assert check_batch([Message("T", b"a"), Message("T", b"b")], MAX) == "T"
    with pytest.raises(MessageIllegalError, match="one topic"):
        check_batch([Message("T", b"a"), Message("U", b"b")], MAX)
    with pytest.raises(MessageIllegalError, match="delayed"):
        check_batch([Message("T", b"a", delay_level=3)], MAX)
    with pytest.raises(MessageIllegalError, match="retry"):
        check_batch([Message("%RETRY%g", b"a")], MAX)
    with pytest.raises(MessageIllegalError, match="wait_store_msg_ok"):
        check_batch([Message("T", b"a"), Message("T", b"b", wait_store_msg_ok=False)], MAX)
    with pytest.raises(MessageIllegalError, match="at least one"):
        check_batch([], MAX)


def test_compression_threshold_flag_and_round_trip() -> None:
    small = b"a" * 4095
    assert maybe_compress(small, 4096, 5) == (small, 0)
    body = b"abc" * 2000
    packed, flag = maybe_compress(body, 4096, 5)
    assert flag == 0x301 and zlib.decompress(packed) == body
    random_like = bytes((i * 7919) % 251 for i in range(5000))
    incompressible = zlib.compress(random_like, 9) * 2
    out, flag = maybe_compress(incompressible[:5000], 4096, 5)
    assert (flag == 0) == (out == incompressible[:5000])


def test_properties_string_limit() -> None:
    assert properties_string({"A": "1", "B": "2"}) == "A\u00011\u0002B\u00012"
    with pytest.raises(MessageIllegalError, match="32767"):
        properties_string({"K": "x" * 40000})


@given(
    st.dictionaries(st.text(min_size=1, max_size=5), st.one_of(st.none(), st.text(max_size=5)), max_size=4)
)
def test_the_fast_properties_encoding_equals_encode_properties(props: dict) -> None:
    from rocketq.client.producer.validation import properties_string
    from rocketq.common.message import encode_properties
    from rocketq.common.record.codec import decode_batch, encode_batch

    if len(encode_properties(props).encode()) <= 32767:
        assert properties_string(props) == encode_properties(props)
    msg = Message("T", b"x")
    msg.properties = props
    [(_flag, body, decoded)] = decode_batch(encode_batch([msg]))
    from rocketq.common.message import decode_properties

    assert body == b"x" and decoded == decode_properties(encode_properties(props))


def test_a_batch_refuses_delays_and_mixed_wait_whatever_else_the_properties_hold() -> None:
    delayed = Message("T", b"x", properties={"a": "1"})
    delayed.delay_level = 2
    timer = Message("T", b"x")
    timer.deliver_time_ms = 1_700_000_000_000
    for bad in (delayed, timer):
        with pytest.raises(MessageIllegalError, match="delayed"):
            check_batch([Message("T", b"x"), bad], 1024)
    zero_delay = Message("T", b"x", properties={"DELAY": "0"})
    assert check_batch([Message("T", b"x"), zero_delay], 1024) == "T"
    with pytest.raises(MessageIllegalError, match="wait_store_msg_ok"):
        check_batch([Message("T", b"x"), Message("T", b"y", wait_store_msg_ok=False)], 1024)


def _reference_decode_properties(text: str) -> dict[str, str]:
    """Java string2messageProperties as first written (find + slices): the shortcut must match it."""
    props: dict[str, str] = {}
    for segment in text.split("\u0002") if text else []:
        idx = segment.find("\u0001")
        if idx <= 0 or idx == len(segment) - 1:
            continue
        props[segment[:idx]] = segment[idx + 1 :]
    return props


@given(st.text(alphabet="ab\u0001\u0002", max_size=24))
def test_decode_properties_keeps_javas_rules(text: str) -> None:
    from rocketq.common.message import decode_properties

    assert decode_properties(text) == _reference_decode_properties(text)


def test_record_hosts_are_texts_of_their_bytes() -> None:
    from rocketq.common.record.layout import unpack_host

    assert unpack_host(b"\x7f\x00\x00\x01") == "127.0.0.1" == unpack_host(b"\x7f\x00\x00\x01")
    assert unpack_host(bytes(15) + b"\x01") == "::1"
