"""Request-reply over the 4.6 protocol against real daemons: request(), a replying consumer, timeouts."""

from __future__ import annotations

import asyncio
import logging

import pytest

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeResult,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from rocketq.client.errors import MQClientError, RequestTimeoutError
from rocketq.client.producer import request_reply
from rocketq.client.producer.request_reply import create_reply_message
from rocketq.common import constants as C

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


async def test_request_gets_the_reply_of_a_consumer(cluster) -> None:
    ns = cluster.namesrv_addr
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic("TopicRpc", read_queues=2, write_queues=2)
    async with Producer("pg-replier", namesrv_addr=ns) as replier_producer:
        seen: list[MessageExt] = []

        async def replier(msgs: list[MessageExt]) -> ConsumeResult:
            for m in msgs:
                seen.append(m)
                await replier_producer.reply(m, b"pong:" + m.body)
            return ConsumeResult.SUCCESS

        consumer = PushConsumer("cg-replier", namesrv_addr=ns, consume_from_where=FIRST)
        consumer.subscribe("TopicRpc", "*")
        consumer.register_listener(replier)
        async with consumer, Producer("pg-requester", namesrv_addr=ns) as requester:
            replies = await asyncio.gather(
                *(
                    requester.request(Message("TopicRpc", f"ping{i}".encode()), timeout_ms=20_000)
                    for i in range(5)
                )
            )
            assert sorted(r.body for r in replies) == sorted(f"pong:ping{i}".encode() for i in range(5))
            reply = replies[0]
            assert reply.topic == f"{C.DEFAULT_CLUSTER}_{C.REPLY_TOPIC_POSTFIX}"
            assert reply.properties[C.PROPERTY_MESSAGE_TYPE] == "reply"
            assert reply.properties[C.PROPERTY_MESSAGE_REPLY_TO_CLIENT] == requester.client_id
            requests = {m.properties[C.PROPERTY_CORRELATION_ID]: m for m in seen}
            assert {r.properties[C.PROPERTY_CORRELATION_ID] for r in replies} == set(requests)
            assert all(m.properties[C.PROPERTY_MESSAGE_TTL] == "20000" for m in seen)

            # the callback form
            got: list[tuple[MessageExt | None, BaseException | None]] = []
            future = requester.request_async(
                Message("TopicRpc", b"cb"), 20_000, lambda r, e: got.append((r, e))
            )
            assert (await future).body == b"pong:cb"
            assert got[0][0] is not None and got[0][1] is None
            assert request_reply.pending_requests() == 0, "every finished request is forgotten"


async def test_a_request_nobody_answers_times_out_naming_its_correlation_id(cluster) -> None:
    ns = cluster.namesrv_addr
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic("TopicRpcSilent", read_queues=1, write_queues=1)
    async with Producer("pg-silent", namesrv_addr=ns) as requester:
        msg = Message("TopicRpcSilent", b"hello?")
        with pytest.raises(RequestTimeoutError) as timeout:
            await requester.request(msg, timeout_ms=1500)
        cid = msg.properties[C.PROPERTY_CORRELATION_ID]
        assert timeout.value.correlation_id == cid and cid in str(timeout.value)
        assert "wait reply message timeout, 1500 ms" in str(timeout.value)
        with pytest.raises(MQClientError, match="not a request"):
            create_reply_message(MessageExt("T", b"", properties={C.PROPERTY_CLUSTER: "DefaultCluster"}), b"")


async def test_a_reply_for_an_unknown_request_is_dropped_and_logged_once(cluster, caplog) -> None:
    ns = cluster.namesrv_addr
    async with Producer("pg-stray", namesrv_addr=ns) as requester:
        with pytest.raises(
            RequestTimeoutError
        ):  # a request fetches the route and heartbeats: the broker knows us
            await requester.request(Message("TopicStray", b"x"), timeout_ms=300)
        stray = MessageExt(
            "TopicStray",
            b"late",
            properties={
                C.PROPERTY_CLUSTER: C.DEFAULT_CLUSTER,
                C.PROPERTY_CORRELATION_ID: "no-such-request",
                C.PROPERTY_MESSAGE_REPLY_TO_CLIENT: requester.client_id,
                C.PROPERTY_MESSAGE_TTL: "3000",
            },
        )
        with caplog.at_level(logging.WARNING, logger="rocketq.client.request_reply"):
            result = await requester.reply(stray, b"nobody waits")
        assert result.status.name == "SEND_OK", "the push reached this client, which dropped it"
        lines = [r for r in caplog.records if "not matched any request" in r.getMessage()]
        assert len(lines) == 1 and "no-such-request" in lines[0].getMessage()
        # a reply to a client the broker does not know: the replier is told so
        stray.properties[C.PROPERTY_MESSAGE_REPLY_TO_CLIENT] = "10.0.0.9@gone"
        with pytest.raises(Exception, match="not found"):
            await requester.reply(stray, b"to nobody")
