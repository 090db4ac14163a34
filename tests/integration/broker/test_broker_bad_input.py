"""Bad input to a real broker: each answered with its code and a remark, logged once, the broker keeps serving."""

from __future__ import annotations

from broker_client import SMALL_STORE, BrokerTestClient

from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.waiting import wait_for

FOUR_MIB = 4 * 1024 * 1024


async def test_refusals_and_the_broker_keeps_serving(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_overrides={**SMALL_STORE, "autoCreateTopicEnable": False})
    proc = cluster.brokers[0]
    async with BrokerTestClient(proc.addr) as broker:
        unknown = await broker.send("NoSuchTopic", b"x")
        assert unknown.code == ResponseCode.TOPIC_NOT_EXIST and "NoSuchTopic" in (unknown.remark or "")

        assert (await broker.create_topic("Open", queues=1)).code == 0
        too_big = await broker.send("Open", b"x" * (FOUR_MIB + 1))
        assert too_big.code == ResponseCode.MESSAGE_ILLEGAL and "msg body length limit 4194304B" in (
            too_big.remark or ""
        )

        assert (await broker.create_topic("ReadOnly", queues=1, perm=4)).code == 0
        forbidden = await broker.send("ReadOnly", b"x")
        assert forbidden.code == ResponseCode.NO_PERMISSION and "ReadOnly" in (forbidden.remark or "")
        system = await broker.send("SCHEDULE_TOPIC_XXXX", b"x")
        assert system.code == ResponseCode.NO_PERMISSION

        bad_queue = await broker.send("Open", b"x", queue_id=5)
        assert bad_queue.code == ResponseCode.SYSTEM_ERROR and "queueId[5]" in (bad_queue.remark or "")
        no_topic_field = await broker.call(RequestCode.SEND_MESSAGE, {"producerGroup": "pg"}, b"x")
        assert no_topic_field.code == ResponseCode.SYSTEM_ERROR and "topic" in (no_topic_field.remark or "")
        bad_body = await broker.call(RequestCode.HEART_BEAT, None, b"{not json")
        assert bad_body.code == ResponseCode.SYSTEM_ERROR and "HeartbeatData" in (bad_body.remark or "")
        unsupported = await broker.call(9999)
        assert unsupported.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

        # pull offsets out of range: Apache's status and the right next offset
        for i in range(2):
            assert (await broker.send("Open", b"m%d" % i)).code == 0
        beyond = await broker.pull("cg", "Open", 0, 10)
        assert beyond.code == ResponseCode.PULL_OFFSET_MOVED and beyond.remark == "OFFSET_OVERFLOW_BADLY"
        assert (beyond.ext_fields or {})["nextBeginOffset"] == "2" and (beyond.ext_fields or {})[
            "maxOffset"
        ] == "2"
        caught_up = await broker.pull("cg", "Open", 0, 2)
        assert (
            caught_up.code == ResponseCode.PULL_NOT_FOUND
            and (caught_up.ext_fields or {})["nextBeginOffset"] == "2"
        )
        no_queue = await broker.pull("cg", "Open", 3, 0)
        assert no_queue.code == ResponseCode.SYSTEM_ERROR and "queueId[3]" in (no_queue.remark or "")

        # still serving, and each refusal was logged once
        assert (await broker.send("Open", b"after all that")).code == 0
        assert len(await broker.pull_messages("cg", "Open", 0)) == 3
    log_text = await wait_for(
        lambda: proc.log_text() if "ReadOnly" in proc.log_text() else None, what="the log"
    )
    assert log_text.count("topic[NoSuchTopic] not exist") == 1
    assert log_text.count("the topic[ReadOnly] sending message is forbidden") == 1


async def test_a_frame_of_garbage_closes_only_its_connection(cluster_factory: ClusterFactory) -> None:
    import asyncio

    cluster = await cluster_factory(broker_overrides=SMALL_STORE)
    host, port = cluster.brokers[0].addr.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"\x00\x00\x00\x08\x05\xff\xff\xffgarbage!")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), timeout=5) == b""  # the broker closed this connection
    writer.close()
    async with BrokerTestClient(cluster.brokers[0].addr) as broker:
        assert (await broker.send("AfterGarbage", b"ok", queue_id=-1)).code == 0
