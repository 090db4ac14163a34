"""Master and slave daemons of one broker name: replication, SYNC_MASTER acks, reading from the slave.

A master (brokerId 0) and a slave (brokerId 1, brokerRole SLAVE) of broker-a, as subprocesses. The
slave learns its master's HA address from the NameServer's registration answer, follows the commit log
and copies the topic configs (SlaveSynchronize). Cases: what is sent to the master is on the slave
(same commit-log end, same bodies by pull, query by key); a SYNC_MASTER acknowledges with the slave up
and answers SLAVE_NOT_AVAILABLE once it is gone; a push consumer goes on from the slave after kill -9
of the master; a slave killed and restarted catches up.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from rocketq.client import Admin, ConsumeResult, Message, Producer, PushConsumer
from rocketq.client.config import ConsumeFromWhere
from rocketq.client.model import SendStatus
from rocketq.common.message import MessageExt
from rocketq.common.record.codec import decode_records
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.headers.query import QueryMessageRequestHeader
from rocketq.testing.broker_probe import BrokerProbe
from rocketq.testing.cluster import BrokerProcess, LocalCluster
from rocketq.testing.failover import FAST_REGISTRATION, wait_route
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.waiting import wait_for
from rocketq.testing.wire import RawConnection

TOPIC = "HaTopic"
QUEUES = 4
SLAVE = {"brokerId": 1, "brokerRole": "SLAVE", **FAST_REGISTRATION}


async def _master_and_slave(
    cluster_factory: ClusterFactory, master: dict[str, Any] | None = None, both: dict[str, Any] | None = None
) -> tuple[LocalCluster, BrokerProcess, BrokerProcess]:
    cluster = await cluster_factory(
        broker_count=1,
        broker_overrides={**FAST_REGISTRATION, **(master or {}), **(both or {})},
        namesrv_overrides={"scanNotActiveBrokerInterval": 500},
    )
    async with Admin(namesrv_addr=cluster.namesrv_addr, instance_name="ha-admin") as admin:
        await admin.create_topic(TOPIC, read_queues=QUEUES, write_queues=QUEUES)
    slave = await cluster.add_broker("broker-a", {**SLAVE, **(both or {})})
    return cluster, cluster.brokers[0], slave


async def _runtime(addr: str) -> dict[str, str]:
    conn = await RawConnection.open(addr)
    try:
        response = await conn.call(RequestCode.GET_BROKER_RUNTIME_INFO)
    finally:
        await conn.close()
    assert response.code == ResponseCode.SUCCESS
    return dict(fastjson.loads(response.body)["table"])


async def _commit_log_end(addr: str) -> int:
    return int((await _runtime(addr))["commitLogMaxOffset"])


async def _wait_caught_up(master: BrokerProcess, slave: BrokerProcess, timeout_s: float = 30) -> int:
    end = await _commit_log_end(master.addr)

    async def level() -> bool:
        return await _commit_log_end(slave.addr) == end

    await wait_for(level, timeout_s=timeout_s, what=f"the slave's commit log at the master's end {end}")
    return end


async def _send(producer: Producer, count: int, start: int = 0, pad: int = 0) -> dict[str, bytes]:
    sent: dict[str, bytes] = {}
    for i in range(start, start + count):
        body = f"ha-{i}-".encode() * (1 + i % 5) + bytes([i % 256]) * (pad + i % 7)
        result = await producer.send(Message(TOPIC, body, tags="T", keys=f"key-{i}"))
        assert result.status is SendStatus.SEND_OK, result
        sent[f"key-{i}"] = body
    return sent


async def _pull_all(addr: str) -> list[MessageExt]:
    probe = await BrokerProbe.open(addr)
    try:
        out: list[MessageExt] = []
        for queue_id in range(QUEUES):
            out += await probe.pull_all(TOPIC, queue_id)
        return out
    finally:
        await probe.close()


async def _query_key(addr: str, key: str) -> list[MessageExt]:
    header = QueryMessageRequestHeader(TOPIC, key, 32, 0, int(time.time() * 1000) + 60_000).to_ext_fields()
    conn = await RawConnection.open(addr)
    try:
        response = await conn.call(RequestCode.QUERY_MESSAGE, header)
    finally:
        await conn.close()
    return decode_records(response.body) if response.code == ResponseCode.SUCCESS and response.body else []


@pytest.mark.timeout(120)
async def test_what_the_master_stores_the_slave_stores(cluster_factory: ClusterFactory) -> None:
    # Small commit-log files: the slave gets several, with the master's end-of-file blank records.
    cluster, master, slave = await _master_and_slave(
        cluster_factory, both={"mappedFileSizeCommitLog": 256 * 1024}
    )
    async with Producer("pg-ha", namesrv_addr=cluster.namesrv_addr, instance_name="ha-producer") as producer:
        sent = await _send(producer, 200, pad=3000)
    end = await _wait_caught_up(master, slave)
    assert end > 2 * 256 * 1024

    async def slave_has_all() -> list[MessageExt]:  # the slave serves the topic once its config is copied
        got = await _pull_all(slave.addr)
        return got if len(got) >= len(sent) else []

    on_slave = await wait_for(slave_has_all, timeout_s=30, what="every message pulled from the slave")
    on_master = await _pull_all(master.addr)
    assert sorted((m.queue_id, m.queue_offset, m.body) for m in on_slave) == sorted(
        (m.queue_id, m.queue_offset, m.body) for m in on_master
    )
    assert sorted(m.body for m in on_slave) == sorted(sent.values())
    for key in ("key-0", "key-77", "key-199"):
        found = await _query_key(slave.addr, key)
        assert [m.body for m in found] == [sent[key]]
    # A slave takes no messages (Java's answer: SERVICE_NOT_AVAILABLE).
    probe = await BrokerProbe.open(slave.addr)
    try:
        with pytest.raises(AssertionError, match=f"{int(ResponseCode.SERVICE_NOT_AVAILABLE)}"):
            await probe.send(TOPIC, b"to the slave")
    finally:
        await probe.close()


@pytest.mark.timeout(120)
async def test_a_sync_master_acknowledges_with_the_slave_and_says_when_it_is_gone(
    cluster_factory: ClusterFactory,
) -> None:
    cluster, master, slave = await _master_and_slave(cluster_factory, {"brokerRole": "SYNC_MASTER"})
    async with Producer(
        "pg-ha-sync", namesrv_addr=cluster.namesrv_addr, instance_name="ha-sync-producer"
    ) as producer:
        statuses: list[SendStatus] = []

        async def send_status(expected: SendStatus) -> bool:
            result = await producer.send(Message(TOPIC, b"sync-%d" % len(statuses)))
            statuses.append(result.status)
            return result.status is expected

        await wait_for(
            lambda: send_status(SendStatus.SEND_OK), timeout_s=30, interval_s=0.2, what="a SEND_OK"
        )
        await _send(producer, 20, start=1000)  # every one acknowledged by the slave
        assert await _commit_log_end(slave.addr) == await _commit_log_end(master.addr)
        slave.kill()
        await wait_for(
            lambda: send_status(SendStatus.SLAVE_NOT_AVAILABLE),
            timeout_s=20,
            interval_s=0.2,
            what="SLAVE_NOT_AVAILABLE",
        )
    print(f"\nSYNC_MASTER send statuses: {[s.value for s in statuses]}")


@pytest.mark.timeout(150)
async def test_a_push_consumer_goes_on_from_the_slave_when_the_master_dies(
    cluster_factory: ClusterFactory,
) -> None:
    cluster, master, slave = await _master_and_slave(cluster_factory)
    ns = cluster.namesrv_addr
    async with Producer("pg-ha-fail", namesrv_addr=ns, instance_name="ha-fail-producer") as producer:
        sent = await _send(producer, 120)
    await _wait_caught_up(master, slave)
    await wait_for(lambda: _pull_all(slave.addr), timeout_s=30, what="the slave serving the topic")
    consumed: dict[str, bytes] = {}
    gate = asyncio.Event()

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        for msg in msgs:
            consumed[msg.keys[0] if msg.keys else ""] = msg.body
        if len(consumed) >= 30:
            await gate.wait()  # hold here until the master is dead: the rest must come from the slave
        return ConsumeResult.SUCCESS

    consumer = PushConsumer(
        "cg-ha-fail", namesrv_addr=ns, instance_name="ha-fail-consumer",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, pull_batch_size=1,
        pull_threshold_for_queue=1, consume_thread_min=1, consume_thread_max=1, poll_name_server_interval_ms=500,
    )  # fmt: skip
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(listener)
    async with consumer:
        await wait_for(lambda: len(consumed) >= 30, timeout_s=30, what="30 messages consumed from the master")
        master.kill()
        await master.wait_exit(10)
        await wait_for(lambda: len(consumed) < len(sent), timeout_s=1, what="messages left for the slave")
        left = len(sent) - len(consumed)
        gate.set()
        await wait_for(
            lambda: len(consumed) >= len(sent), timeout_s=60, what="the rest consumed from the slave"
        )
    assert consumed == sent
    print(f"\n{left} of {len(sent)} messages consumed from the slave after kill -9 of the master")


@pytest.mark.timeout(150)
async def test_a_killed_slave_restarts_and_catches_up(cluster_factory: ClusterFactory) -> None:
    cluster, master, slave = await _master_and_slave(cluster_factory)
    async with Producer(
        "pg-ha-rs", namesrv_addr=cluster.namesrv_addr, instance_name="ha-rs-producer"
    ) as producer:
        sent = await _send(producer, 100)
        await _wait_caught_up(master, slave)
        slave.kill()
        assert await slave.wait_exit(10) is not None
        sent |= await _send(producer, 100, start=100)
        await slave.restart()
        await _wait_caught_up(master, slave)
        sent |= await _send(producer, 50, start=200)
    await _wait_caught_up(master, slave)

    async def slave_has_all() -> list[MessageExt]:
        got = await _pull_all(slave.addr)
        return got if len(got) >= len(sent) else []

    on_slave = await wait_for(
        slave_has_all, timeout_s=30, what="every message pulled from the restarted slave"
    )
    assert sorted(m.body for m in on_slave) == sorted(sent.values())
    assert await wait_route(cluster.namesrv_addr, TOPIC, {"broker-a"}, timeout_s=5) >= 0
