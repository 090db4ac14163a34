"""What a kill -9 must not take away besides the log: topics the broker said it created.

Java persists topics.json on the caller's thread before it answers UPDATE_AND_CREATE_TOPIC, and
before it answers the send that auto-created a topic; so after a crash the topic is there and so
are the acknowledged messages in it. These tests kill the broker right after the answer (the broker
awaits a topics.json write on a worker thread before answering either request). The same holds for
subscription groups (Java's SubscriptionGroupManager persists on update and delete) and for a deleted
topic, which must not come back.
"""

from __future__ import annotations

import json

from rocketq.remoting.protocol.bodies.admin import SubscriptionGroupConfig
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.headers.admin import (
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
)
from rocketq.store.config import FlushDiskType
from rocketq.testing.broker_probe import SMALL_STORE_OVERRIDES, BrokerProbe
from rocketq.testing.cluster import BrokerProcess
from rocketq.testing.fixtures import ClusterFactory


async def crash_and_restart(broker: BrokerProcess) -> BrokerProbe:
    broker.kill()
    assert await broker.wait_exit(10) is not None
    await broker.start()
    return await BrokerProbe.open(broker.addr, topic="AfterCrash")


async def test_a_created_topic_survives_kill_9(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(namesrv_count=0, broker_overrides=SMALL_STORE_OVERRIDES)
    broker = cluster.brokers[0]
    probe = await BrokerProbe.open(broker.addr)
    await probe.create_topic("JustCreated", 2)
    await probe.close()
    probe = await crash_and_restart(broker)
    try:
        response = await probe.pull("JustCreated", 0, 0)
        assert response.code == ResponseCode.PULL_NOT_FOUND, f"{response.code} {response.remark}"
    finally:
        await probe.close()


async def test_a_message_acknowledged_into_an_auto_created_topic_survives_kill_9(
    cluster_factory: ClusterFactory,
) -> None:
    # ASYNC_FLUSH: the process dies, the machine does not, so the message itself is safe in the page cache
    overrides = {**SMALL_STORE_OVERRIDES, "flushDiskType": FlushDiskType.ASYNC_FLUSH.value}
    cluster = await cluster_factory(namesrv_count=0, broker_overrides=overrides)
    broker = cluster.brokers[0]
    probe = await BrokerProbe.open(broker.addr)
    sent = await probe.send("AutoCreated", b"acknowledged", {"WAIT": "true"}, queue_id=0)
    await probe.close()
    probe = await crash_and_restart(broker)
    try:
        got = await probe.pull_messages("AutoCreated", 0, sent.queue_offset)
        assert [m.body for m in got] == [b"acknowledged"]
    finally:
        await probe.close()


async def _groups(probe: BrokerProbe) -> dict[str, dict[str, object]]:
    response = await probe.conn.call(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, timeout_s=probe.timeout_s)
    assert response.code == ResponseCode.SUCCESS, f"{response.code} {response.remark}"
    table: dict[str, dict[str, object]] = json.loads(response.body)["subscriptionGroupTable"]
    return table


async def _admin(probe: BrokerProbe, code: int, header: object = None, body: bytes = b"") -> None:
    fields = header.to_ext_fields() if header is not None else None  # type: ignore[attr-defined]
    response = await probe.conn.call(code, fields, body, timeout_s=probe.timeout_s)
    assert response.code == ResponseCode.SUCCESS, f"request {code}: {response.code} {response.remark}"


async def test_created_and_deleted_groups_survive_kill_9(cluster_factory: ClusterFactory) -> None:
    """Each cycle creates a group (with a non-default setting), deletes the previous cycle's group, and
    kills the broker right after the last answer: the restarted broker has exactly the last change."""
    cluster = await cluster_factory(namesrv_count=0, broker_overrides=SMALL_STORE_OVERRIDES)
    broker = cluster.brokers[0]
    probe = await BrokerProbe.open(broker.addr)
    try:
        for cycle in range(3):
            group = f"CrashGroup{cycle}"
            config = SubscriptionGroupConfig(
                group_name=group, retry_max_times=3 + cycle, consume_broadcast_enable=False
            )
            await _admin(probe, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.encode())
            if cycle:
                header = DeleteSubscriptionGroupRequestHeader(group_name=f"CrashGroup{cycle - 1}")
                await _admin(probe, RequestCode.DELETE_SUBSCRIPTIONGROUP, header)
            await probe.close()
            probe = await crash_and_restart(broker)
            table = await _groups(probe)
            assert group in table, f"cycle {cycle}: the acknowledged group {group} was lost by kill -9"
            assert (
                table[group]["retryMaxTimes"] == 3 + cycle and table[group]["consumeBroadcastEnable"] is False
            )
            if cycle:
                assert f"CrashGroup{cycle - 1}" not in table, f"cycle {cycle}: a deleted group came back"
    finally:
        await probe.close()


async def test_a_deleted_topic_stays_deleted_after_kill_9(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(namesrv_count=0, broker_overrides=SMALL_STORE_OVERRIDES)
    broker = cluster.brokers[0]
    probe = await BrokerProbe.open(broker.addr)
    await probe.create_topic("Doomed", 2)
    await _admin(probe, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic="Doomed"))
    await probe.close()
    probe = await crash_and_restart(broker)
    try:
        response = await probe.conn.call(RequestCode.GET_ALL_TOPIC_CONFIG, timeout_s=probe.timeout_s)
        assert response.code == ResponseCode.SUCCESS
        assert "Doomed" not in json.loads(response.body)["topicConfigTable"], (
            "a deleted topic came back after kill -9"
        )
    finally:
        await probe.close()
