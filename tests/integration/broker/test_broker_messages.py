"""Messages through a real `rocketq broker`: sends pulled back byte for byte, long polling, query, offsets."""

from __future__ import annotations

import asyncio

from broker_client import SMALL_STORE, BrokerTestClient

from rocketq.common.message import Message
from rocketq.common.msg_id import parse_offset_msg_id
from rocketq.common.record.codec import decode_records, iter_record_spans
from rocketq.common.record.layout import body_crc
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.headers.query import QueryMessageRequestHeader, ViewMessageRequestHeader
from rocketq.testing.fixtures import ClusterFactory

TOPIC = "Orders"


async def test_v1_v2_and_batch_sends_come_back_byte_for_byte(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_overrides=SMALL_STORE)
    addr = cluster.brokers[0].addr
    async with BrokerTestClient(addr) as broker:
        assert (await broker.create_topic(TOPIC, queues=2)).code == 0
        props1 = {"UNIQ_KEY": "AAAA0001", "TAGS": "TagA", "KEYS": "k1 k2", "WAIT": "true", "color": "red"}
        props2 = {"UNIQ_KEY": "AAAA0002", "TAGS": "TagB", "WAIT": "true"}
        body2 = bytes(range(256)) * 40
        r1 = await broker.send(TOPIC, b"one", props1, queue_id=1, code=RequestCode.SEND_MESSAGE, flag=7)
        r2 = await broker.send(TOPIC, body2, props2, queue_id=1, code=RequestCode.SEND_MESSAGE_V2)
        batch = [
            Message(TOPIC, b"b%d" % i, tags="TagC", properties={"UNIQ_KEY": f"BBBB000{i}"}) for i in range(3)
        ]
        r3 = await broker.send_batch(TOPIC, batch, queue_id=1)
        for r in (r1, r2, r3):
            assert r.code == ResponseCode.SUCCESS, r.remark
            ext = r.ext_fields or {}
            assert (
                ext["queueId"] == "1" and ext["MSG_REGION"] == "DefaultRegion" and ext["TRACE_ON"] == "true"
            )
        assert [(r.ext_fields or {})["queueOffset"] for r in (r1, r2, r3)] == ["0", "1", "2"]
        msg_ids = [
            (r1.ext_fields or {})["msgId"],
            (r2.ext_fields or {})["msgId"],
            *(r3.ext_fields or {})["msgId"].split(","),
        ]
        assert len(msg_ids) == 5

        pulled = await broker.pull("cg", TOPIC, 1, 0)
        assert pulled.code == ResponseCode.SUCCESS, pulled.remark
        msgs = decode_records(pulled.body)
        assert [m.queue_offset for m in msgs] == [0, 1, 2, 3, 4]
        assert [m.body for m in msgs] == [b"one", body2, b"b0", b"b1", b"b2"]
        cluster_prop = {"CLUSTER": "DefaultCluster"}
        assert msgs[0].properties == {k: v for k, v in props1.items() if k != "WAIT"} | cluster_prop
        assert msgs[1].properties == {k: v for k, v in props2.items() if k != "WAIT"} | cluster_prop
        for i, m in enumerate(msgs[2:]):  # batch: own properties, then the batch's (WAIT kept) and CLUSTER
            assert m.properties == {"TAGS": "TagC", "UNIQ_KEY": f"BBBB000{i}", "WAIT": "true"} | cluster_prop
        assert msgs[0].flag == 7
        for m, msg_id in zip(msgs, msg_ids, strict=True):
            assert m.topic == TOPIC and m.queue_id == 1
            assert f"{m.store_host[0]}:{m.store_host[1]}" == addr  # STOREHOST = the registered address
            assert m.offset_msg_id == msg_id
            ip, port, offset = parse_offset_msg_id(msg_id)
            assert (f"{ip}:{port}", offset) == (addr, m.commit_log_offset)
            assert m.born_host[0] == "127.0.0.1" and m.body_crc == body_crc(m.body)
        # VIEW_MESSAGE_BY_ID returns the very bytes the pull returned
        spans = list(iter_record_spans(pulled.body))
        for (start, size), m in zip(spans, msgs, strict=True):
            view = await broker.call(
                RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=m.commit_log_offset)
            )
            assert view.code == 0 and view.body == pulled.body[start : start + size]


async def test_long_polling_and_query(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_overrides=SMALL_STORE)
    async with BrokerTestClient(cluster.brokers[0].addr) as broker:
        assert (await broker.create_topic(TOPIC, queues=1)).code == 0
        # suspend bit clear: answered at once
        quick = await broker.pull("cg", TOPIC, 0, 0)
        assert quick.code == ResponseCode.PULL_NOT_FOUND
        assert {"suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"} <= set(
            quick.ext_fields or {}
        )
        # suspend bit set: held until a message arrives
        held = asyncio.ensure_future(broker.pull("cg", TOPIC, 0, 0, suspend_ms=15_000, timeout_ms=30_000))
        done, _ = await asyncio.wait({held}, timeout=0.5)
        assert not done, "an empty pull with the suspend bit must be held"
        sent = await broker.send(TOPIC, b"wake up", {"UNIQ_KEY": "CCCC0001", "KEYS": "order-42"})
        assert sent.code == 0
        answer = await asyncio.wait_for(held, timeout=5)  # far sooner than the 15 s hold
        assert answer.code == ResponseCode.SUCCESS and decode_records(answer.body)[0].body == b"wake up"
        # a held pull that nothing wakes answers PULL_NOT_FOUND when its hold time is up
        expired = await asyncio.wait_for(broker.pull("cg", TOPIC, 0, 1, suspend_ms=300, timeout_ms=10_000), 8)
        assert (
            expired.code == ResponseCode.PULL_NOT_FOUND
            and (expired.ext_fields or {})["nextBeginOffset"] == "1"
        )

        def query(key: str, unique: bool = False) -> QueryMessageRequestHeader:
            return QueryMessageRequestHeader(
                topic=TOPIC,
                key=key,
                max_num=32,
                begin_timestamp=0,
                end_timestamp=2**62,
                unique_key_query=unique or None,
            )

        by_key = await broker.call(RequestCode.QUERY_MESSAGE, query("order-42"))
        assert by_key.code == 0 and [m.body for m in decode_records(by_key.body)] == [b"wake up"]
        by_uniq = await broker.call(RequestCode.QUERY_MESSAGE, query("CCCC0001", unique=True))
        assert by_uniq.code == 0 and decode_records(by_uniq.body)[0].properties["UNIQ_KEY"] == "CCCC0001"
        nothing = await broker.call(RequestCode.QUERY_MESSAGE, query("no-such-key"))
        assert nothing.code == ResponseCode.QUERY_NOT_FOUND


async def test_offsets_survive_a_broker_restart(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_overrides=SMALL_STORE)
    broker_proc = cluster.brokers[0]
    async with BrokerTestClient(broker_proc.addr) as broker:
        assert (await broker.create_topic(TOPIC, queues=2)).code == 0
        for i in range(3):
            assert (await broker.send(TOPIC, b"m%d" % i, queue_id=0)).code == 0
        before = await broker.query_offset("cg", TOPIC, 0)
        assert before.code == 0 and (before.ext_fields or {})["offset"] == "0"  # young queue: Java's offset 0
        await broker.commit_offset("cg", TOPIC, 0, 2)
        await broker.commit_offset("cg", TOPIC, 1, 7, oneway=True)
        pulled = await broker.pull("cg2", TOPIC, 0, 1, commit_offset=1)  # the piggy-backed commit
        assert pulled.code == 0
    await broker_proc.restart()
    async with BrokerTestClient(broker_proc.addr) as broker:
        offsets = [await broker.query_offset(g, TOPIC, q) for g, q in (("cg", 0), ("cg", 1), ("cg2", 0))]
        assert [(r.code, (r.ext_fields or {}).get("offset")) for r in offsets] == [
            (0, "2"),
            (0, "7"),
            (0, "1"),
        ]
        assert await broker.max_offset(TOPIC, 0) == 3
        assert [m.body for m in await broker.pull_messages("cg", TOPIC, 0, 2)] == [b"m2"]
