"""The send hot path's shortcuts equal the typed headers they stand for: the V2 request decoded straight
into SendRequest (same values, same errors for missing or malformed fields) and the answer's extFields."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.processors.common import RequestError, decode_header
from rocketq.broker.processors.send import SendRequest
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.send import SendMessageRequestHeaderV2

VALID = {"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "1700000000000", "h": "0",
         "i": "UNIQ_KEY\u0001x\u0002WAIT\u0001true", "j": "0", "k": "false", "m": "false", "n": "broker-a"}  # fmt: skip
KEYS = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "bname"]
VALUES = st.sampled_from(
    ["", "0", "7", "-1", "2147483648", "9223372036854775808", "true", "TRUE", "x", " 1", "+5", "1_0"]
)


def reference(ext: dict[str, str]) -> SendRequest | tuple[int, str]:
    """What the typed header gives (the behaviour before the shortcut)."""
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext)
    try:
        v2 = decode_header(SendMessageRequestHeaderV2, request)
    except RequestError as err:
        return err.code, err.remark
    return SendRequest(v2.b, v2.c, v2.d, v2.e, v2.f, v2.g, v2.h, v2.i, v2.j, v2.k, v2.m, v2.l)


def shortcut(ext: dict[str, str]) -> SendRequest | tuple[int, str]:
    try:
        return SendRequest.of(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext))
    except RequestError as err:
        return err.code, err.remark


def test_a_valid_header_decodes_to_the_same_request() -> None:
    got = shortcut(dict(VALID))
    assert got == reference(dict(VALID))
    assert isinstance(got, SendRequest) and got.topic == "T" and got.queue_id == 3 and got.batch is False


@given(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=len(KEYS)), st.sets(st.sampled_from(KEYS)))
def test_any_header_decodes_or_fails_as_the_typed_header_does(
    changes: dict[str, str], dropped: set[str]
) -> None:
    ext = {k: v for k, v in {**VALID, **changes}.items() if k not in dropped}
    assert shortcut(ext) == reference(ext)


def test_unknown_fields_are_refused_when_compiling() -> None:
    with pytest.raises(TypeError, match="no fields"):
        SendMessageRequestHeaderV2.compile_decoder_into(SendRequest, ("b", "topic"))


async def test_the_answer_is_what_the_typed_response_header_encodes() -> None:
    from broker_fakes import FakeConnection, FakeStore, make_context

    from rocketq.broker.processors.send import SendMessageProcessor
    from rocketq.remoting.protocol.headers.send import SendMessageResponseHeader

    for trace_on in (True, False):
        proc = SendMessageProcessor(make_context(FakeStore(), traceOn=trace_on))
        resp = await proc.process_request(
            FakeConnection("10.0.0.5:4321"), RemotingCommand.request(310, dict(VALID), b"x")
        )
        assert resp is not None and resp.code == 0
        ext = resp.ext_fields or {}
        typed = SendMessageResponseHeader(
            msg_id=ext["msgId"],
            queue_id=3,
            queue_offset=int(ext["queueOffset"]),
            msg_region="DefaultRegion",
            trace_on=trace_on,
        )
        assert list(ext.items()) == list(typed.to_ext_fields().items())
        # The JSON text the answer carries is what the codec writes for the plain map.
        from rocketq.remoting.protocol.frame import encode_frame

        plain = resp.make_response(0, None, dict(ext))
        plain.opaque, plain.flag = resp.opaque, resp.flag
        assert encode_frame(resp) == encode_frame(plain)


async def test_a_msgpack_send_gets_the_same_answer_without_json_text() -> None:
    from broker_fakes import FakeConnection, FakeStore, make_context

    from rocketq.broker.processors.send import SendMessageProcessor
    from rocketq.remoting.protocol.codes import SerializeType
    from rocketq.remoting.protocol.frame import encode_frame

    proc = SendMessageProcessor(make_context(FakeStore()))
    request = RemotingCommand.request(310, dict(VALID), b"x", serialize_type=SerializeType.MSGPACK)
    resp = await proc.process_request(FakeConnection("10.0.0.5:4321"), request)
    assert resp is not None and resp.code == 0 and resp.serialize_type is SerializeType.MSGPACK
    ext = resp.ext_fields or {}
    assert list(ext) == ["msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"]
    plain = resp.make_response(0, None, dict(ext))
    plain.opaque, plain.flag = resp.opaque, resp.flag
    assert encode_frame(resp) == encode_frame(plain)
    resp.serialize_type = plain.serialize_type = SerializeType.JSON  # were it re-encoded as JSON
    assert encode_frame(resp) == encode_frame(plain)
