"""What a kill -9 must not take away besides the log: topics the broker said it created.

Java persists topics.json on the caller's thread before it answers UPDATE_AND_CREATE_TOPIC, and
before it answers the send that auto-created a topic; so after a crash the topic is there and so
are the acknowledged messages in it. These tests kill the broker right after the answer (the broker
awaits a topics.json write on a worker thread before answering either request).
"""

from __future__ import annotations

from rocketq.remoting.protocol.codes import ResponseCode
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
