"""The send hot path's shortcuts equal the typed headers they stand for: the V2 request decoded straight
into SendRequest (same values, same errors for missing or malformed fields) and the answer's extFields."""

from __future__ import annotations

from typing import Any

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


# A run's requests: known and new topics, forbidden and retry topics, queues in and out of range, bodies over
# maxMessageSize (1024 here), properties a plain message has and the ones that take the complete path.
RUN_TOPICS = st.sampled_from(["T", "T", "U", "%RETRY%g", "SCHEDULE_TOPIC_XXXX", "bad topic"])
RUN_PROPS = st.sampled_from(
    [
        None,
        {},
        {"UNIQ_KEY": "K", "WAIT": "false"},
        {"UNIQ_KEY": "K", "DELAY": "2"},
        {"TRAN_MSG": "true"},
        {"TRAN_MSG": "false", "TAGS": "A"},
        {"TIMER_DELAY_SEC": "5"},
        {"TAGS": "B", "KEYS": "k", "WAIT": "true"},
        {"X": "y" * 40_000},
    ]
)
RUN_REQUEST = st.tuples(
    RUN_TOPICS, st.sampled_from([-1, 0, 3, 4, 9]), RUN_PROPS, st.sampled_from([1, 2000]), st.booleans()
)


async def _stored_and_answered(
    specs: list[tuple[str, int, dict[str, str] | None, int, bool]], together: bool, sync_flush: bool
) -> tuple[list[Any], dict[Any, Any]]:
    from broker_fakes import FakeConnection, FakeStore, make_context

    from rocketq.broker.processors.send import SendMessageProcessor
    from rocketq.common.message import encode_properties
    from rocketq.store.config import MessageStoreConfig

    store = FakeStore()
    ctx = make_context(store)
    ctx.store_config = MessageStoreConfig.model_validate(
        {"maxMessageSize": 1024, "flushDiskType": "SYNC_FLUSH" if sync_flush else "ASYNC_FLUSH"}
    )
    proc = SendMessageProcessor(ctx)
    proc._random.seed(7)  # the same queues picked for queueId -1 both ways
    conn = FakeConnection("10.0.0.5:4321")
    requests = []
    for n, (topic, queue_id, props, size, v2) in enumerate(specs):
        ext = {**VALID, "b": topic, "e": str(queue_id)}
        if props is None:
            del ext["i"]
        else:
            ext["i"] = encode_properties(props)
        request = RemotingCommand.request(310, ext, b"x" * size)
        if not v2:  # the V1 header's long names
            v1 = decode_header(SendMessageRequestHeaderV2, request).to_v1().to_ext_fields()
            request = RemotingCommand.request(RequestCode.SEND_MESSAGE, v1, b"x" * size)
        request.opaque = n
        requests.append(request)
    if together:
        answers = await proc.process_requests(conn, requests)
    else:
        answers = [await proc.process_request(conn, r) for r in requests]
    got = [(a.code, a.remark, dict(a.ext_fields or {}), a.opaque) for a in answers if a is not None]
    return got, store.queues


@given(st.lists(RUN_REQUEST, min_size=2, max_size=12), st.booleans())
def test_a_run_stores_and_answers_each_request_as_the_complete_path(
    specs: list[tuple[str, int, dict[str, str] | None, int, bool]], sync_flush: bool
) -> None:
    """process_requests' plain messages (built in its own loop) against process_request (the complete path,
    `_message`) one request at a time: the same answers and the same stored messages, every field."""
    import asyncio

    together = asyncio.run(_stored_and_answered(specs, True, sync_flush))
    alone = asyncio.run(_stored_and_answered(specs, False, sync_flush))
    assert together == alone
