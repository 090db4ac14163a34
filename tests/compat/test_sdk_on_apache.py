"""Our Python SDK against Apache's NameServer and broker (4.9.7 jars) as well as ours, the same scenarios on both.

Python users with an existing RocketMQ cluster want a pure-Python client: each scenario runs, parametrised,
against `rocketq namesrv` + `rocketq broker` and against Apache's daemons (apache_support.py), one cluster of
each for the module (topics and groups differ per scenario). The SDK speaks JSON headers (its default
`header_codec`): Apache's broker never gets our own codec.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from apache_support import COMMIT_LOG_FILE_BYTES, ApacheCluster, running
from interop import create_topic, python_receive
from java_support import skip_or_fail_when_missing

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeResult,
    LocalTransactionState,
    Message,
    MessageExt,
    MessageModel,
    Producer,
    PushConsumer,
    TransactionProducer,
)
from rocketq.client.producer.selectors import SelectMessageQueueByHash
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.waiting import wait_for

pytestmark = [pytest.mark.asyncio(loop_scope="module")]
if (_skip := skip_or_fail_when_missing()) is not None:
    pytestmark.append(_skip)

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
# The same broker settings on both: short delay levels (level 3 + reconsume times is the retry back-off) and
# fast transaction checks.
BROKER = {"messageDelayLevel": "1s 2s 1s 1s 1s 1s 1s 1s", "transactionTimeOut": 1000,
          "transactionCheckInterval": 500, "transactionCheckMax": 5}  # fmt: skip


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["rocketq", "apache"])
async def ns(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """The NameServer address of a cluster of the kind `request.param` names."""
    work = tmp_path_factory.mktemp(f"sdk-on-{request.param}")
    if request.param == "rocketq":
        async with LocalCluster(
            work, broker_overrides={**BROKER, "mappedFileSizeCommitLog": COMMIT_LOG_FILE_BYTES}
        ) as ours:
            yield ours.namesrv_addr
        return
    async with running(ApacheCluster(work / "apache", work / "store", **BROKER)) as apache:
        yield apache.namesrv_addr


@pytest.mark.timeout(120)
async def test_producer_batch_lite_pull_and_admin(ns: str) -> None:
    topic = "SdkBasics"
    await create_topic(ns, topic)
    async with Producer(
        "pg-sdk", namesrv_addr=ns, send_latency_fault_enable=True, retry_times_when_send_failed=2
    ) as producer:
        single = [
            await producer.send(
                Message(topic, f"one-{i}".encode(), tags="T", keys=[f"k{i}"], properties={"n": str(i)})
            )
            for i in range(10)
        ]
        batch = await producer.send_batch([Message(topic, f"batch-{i}".encode(), tags="B") for i in range(5)])
    assert all(r.send_status.name == "SEND_OK" for r in [*single, batch])
    got = await python_receive(ns, "cg-sdk-lite", topic, 15)
    assert Counter(m.body for m in got) == Counter(
        [*(f"one-{i}".encode() for i in range(10)), *(f"batch-{i}".encode() for i in range(5))]
    )
    by_n = {m.properties["n"]: m for m in got if "n" in m.properties}
    assert [by_n[str(i)].keys for i in range(10)] == [[f"k{i}"] for i in range(10)]
    async with Admin(namesrv_addr=ns) as admin:
        [found] = await admin.query_message_by_key(topic, "k4")
        assert found.body == b"one-4"
        status = await admin.topic_status(topic)
        assert sum(t.max_offset for t in status.values()) == 15
        [cluster] = (await admin.cluster_info()).cluster_addr_table.values()
        assert "broker-a" in cluster


@pytest.mark.timeout(150)
async def test_push_consumer_retry_then_dead_letter(ns: str) -> None:
    topic = "SdkRetry"
    await create_topic(ns, topic)
    seen: list[tuple[bytes, int]] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        for m in msgs:
            seen.append((m.body, m.reconsume_times))
        return ConsumeResult.RECONSUME_LATER  # always: once retried, then past max_reconsume_times -> DLQ

    consumer = PushConsumer("cg-sdk-retry", namesrv_addr=ns, consume_from_where=FIRST, max_reconsume_times=1)
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    await consumer.start()
    try:
        async with Producer("pg-sdk-retry", namesrv_addr=ns) as producer:
            await producer.send(Message(topic, b"doomed", tags="R", keys=["doomed"]))
        await wait_for(
            lambda: sorted(seen) == [(b"doomed", 0), (b"doomed", 1)],
            timeout_s=60,
            what="the first delivery and one retry (CONSUMER_SEND_MSG_BACK)",
        )
    finally:
        await consumer.shutdown()
    [dead] = await python_receive(ns, "cg-sdk-dlq-reader", "%DLQ%cg-sdk-retry", 1, timeout_s=40)
    assert dead.body == b"doomed" and dead.keys == ["doomed"]


@pytest.mark.timeout(150)
async def test_orderly_consumer_and_delay_level(ns: str) -> None:
    topic = "SdkOrderly"
    await create_topic(ns, topic)
    events: list[tuple[int, int]] = []
    consumer = PushConsumer("cg-sdk-orderly", namesrv_addr=ns, consume_from_where=FIRST)
    consumer.subscribe(topic, "*")
    consumer.register_orderly_listener(
        lambda msgs: events.extend((m.queue_id, int(m.body.split(b":")[1])) for m in msgs)
    )
    await consumer.start()
    try:
        selector = SelectMessageQueueByHash()
        async with Producer("pg-sdk-orderly", namesrv_addr=ns) as producer:
            for i in range(40):
                await producer.send(Message(topic, f"{i % 4}:{i}".encode()), selector=selector, arg=i % 4)
            late = Message(topic, b"late:999", delay_level=2)
            await producer.send(late)
        await wait_for(lambda: len({seq for _, seq in events}) == 41, timeout_s=60, what="every message")
    finally:
        await consumer.shutdown()
    for queue in {q for q, _ in events}:
        firsts: list[int] = []
        for q, seq in events:
            if q == queue and seq not in firsts and seq != 999:
                firsts.append(seq)
        assert firsts == sorted(firsts), f"queue {queue} out of order: {firsts}"
    [late_msg] = [
        m for m in await python_receive(ns, "cg-sdk-delay-reader", topic, 41) if m.body == b"late:999"
    ]
    assert late_msg.store_timestamp - late_msg.born_timestamp >= 1900  # level 2 = 2 s in SCHEDULE_TOPIC_XXXX


@pytest.mark.timeout(150)
async def test_transactions_with_check_back(ns: str) -> None:
    topic = "SdkTx"
    await create_topic(ns, topic)
    asked: list[str] = []

    def checker(msg: MessageExt) -> LocalTransactionState:
        asked.append(msg.keys[0])
        return LocalTransactionState.COMMIT_MESSAGE

    local = {"commit": LocalTransactionState.COMMIT_MESSAGE, "rollback": LocalTransactionState.ROLLBACK_MESSAGE,
             "unknown": LocalTransactionState.UNKNOW}  # fmt: skip
    async with TransactionProducer(
        "pg-sdk-tx", namesrv_addr=ns, checker=checker, heartbeat_broker_interval_ms=300
    ) as producer:
        for key, state in local.items():
            await producer.send_in_transaction(
                Message(topic, key.encode(), keys=[key]),
                lambda _m, _a, s=state: s,  # type: ignore[misc]
            )
        await wait_for(
            lambda: "unknown" in asked, timeout_s=60, what="the broker's check-back of the unknown one"
        )
        got = await python_receive(ns, "cg-sdk-tx-reader", topic, 2, timeout_s=30)
    assert sorted(m.body for m in got) == [b"commit", b"unknown"]
    assert set(asked) == {"unknown"}


@pytest.mark.timeout(150)
async def test_broadcast_consumers_each_get_everything(ns: str, tmp_path: Path) -> None:
    topic = "SdkBroadcast"
    await create_topic(ns, topic)
    got: dict[int, list[bytes]] = {0: [], 1: []}
    consumers = []
    for i in range(2):
        c = PushConsumer(
            "cg-sdk-bc",
            namesrv_addr=ns,
            consume_from_where=FIRST,
            message_model=MessageModel.BROADCASTING,
            offset_store_dir=str(tmp_path / str(i)),
            instance_name=f"bc-{i}",
        )
        c.subscribe(topic, "*")
        c.register_listener(lambda msgs, i=i: got[i].extend(m.body for m in msgs))  # type: ignore[misc]
        await c.start()
        consumers.append(c)
    try:
        await wait_for(
            lambda: all(len(c.assigned_queues()) == 4 for c in consumers),
            timeout_s=30,
            what="all queues each",
        )
        bodies = [f"bc-{i}".encode() for i in range(20)]
        async with Producer("pg-sdk-bc", namesrv_addr=ns) as producer:
            for body in bodies:
                await producer.send(Message(topic, body))
        await wait_for(
            lambda: all(set(bodies) <= set(b) for b in got.values()),
            timeout_s=40,
            what="every message at both",
        )
    finally:
        for c in consumers:
            await c.shutdown()
