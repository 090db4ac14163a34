"""Transactions against real daemons with the SDK's TransactionProducer: commit visible exactly once,
rollback never, UNKNOWN settled by the checker, a dead producer replaced by another of its group, a broker
restart in the middle of checks, checks exhausted into TRANS_CHECK_MAX_TIME_TOPIC, and what may not be
sent in a transaction. Checks are fast here: transactionTimeOut 1 s, transactionCheckInterval 0.3 s,
transactionCheckMax 3.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from typing import Any

import pytest

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    LitePullConsumer,
    LocalTransactionState,
    Message,
    MessageExt,
    Producer,
    TransactionProducer,
)
from rocketq.client.errors import MQClientError
from rocketq.common import constants as C
from rocketq.remoting.errors import BrokerResponseError
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.waiting import wait_for

FAST_CHECKS = {"transactionTimeOut": 1000, "transactionCheckInterval": 300, "transactionCheckMax": 3}
COMMIT, ROLLBACK, UNKNOW = (
    LocalTransactionState.COMMIT_MESSAGE,
    LocalTransactionState.ROLLBACK_MESSAGE,
    LocalTransactionState.UNKNOW,
)
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
HALF = C.RMQ_SYS_TRANS_HALF_TOPIC


async def start_cluster(cluster_factory: Any, **overrides: Any) -> LocalCluster:
    return await cluster_factory(broker_overrides={**FAST_CHECKS, **overrides})  # type: ignore[no-any-return]


def tx_producer(ns: str, group: str, checker: Any = None) -> TransactionProducer:
    # Heartbeats every 0.3 s so that a restarted broker knows the producer again at once.
    return TransactionProducer(group, namesrv_addr=ns, checker=checker, heartbeat_broker_interval_ms=300)


async def stored_count(admin: Admin, topic: str) -> int:
    try:
        status = await admin.topic_status(topic)
    except Exception:
        return 0
    return sum(t.max_offset for t in status.values())


async def checker_passed_all(admin: Admin) -> bool:
    """The check progress reached the end of the half queue: every half message was decided on."""
    progress = await admin.consumer_progress(C.CID_SYS_RMQ_TRANS, HALF)
    return bool(progress) and all(p.consumer_offset >= p.broker_offset for p in progress)


async def read_topic(ns: str, topic: str, expected: int, group: str) -> list[MessageExt]:
    """Every message of `topic` from its first offset (stops once `expected` arrived)."""
    out: list[MessageExt] = []
    async with LitePullConsumer(group, namesrv_addr=ns, consume_from_where=FIRST) as lite:
        lite.subscribe(topic, "*")
        await wait_for(lambda: lite.assignment(), timeout_s=15, what=f"queues of {topic} assigned")
        for _ in range(100):
            out.extend(await lite.poll(timeout_ms=200))
            if len(out) >= expected:
                break
    return out


async def test_commit_is_visible_once_and_rollback_never(cluster_factory: Any) -> None:
    cluster = await start_cluster(cluster_factory)
    ns, topic = cluster.namesrv_addr, "TopicTxCommit"
    decisions = {b"c%d" % i: COMMIT for i in range(8)} | {b"r%d" % i: ROLLBACK for i in range(8)}
    checked: list[bytes] = []
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=4, write_queues=4)
        async with tx_producer(ns, "pg_tx_commit", lambda m: checked.append(m.body) or UNKNOW) as producer:
            for body, state in decisions.items():
                result = await producer.send_in_transaction(Message(topic, body), lambda _m, s: s, state)
                assert result.local_transaction_state is state
            # The checker walks past every half message (once they are older than transactionTimeOut)
            # without asking about any of them.
            await wait_for(
                lambda: checker_passed_all(admin), timeout_s=15, what="the checker passed the half queue"
            )
        assert checked == []
        assert await stored_count(admin, topic) == 8
    got = await read_topic(ns, topic, 8, "cg_tx_commit")
    assert Counter(m.body for m in got) == Counter({b"c%d" % i: 1 for i in range(8)})
    assert all(m.properties.get("TRAN_MSG") is None and m.properties.get("REAL_TOPIC") is None for m in got)


async def test_unknown_then_the_checker_commits(cluster_factory: Any) -> None:
    cluster = await start_cluster(cluster_factory)
    ns, topic = cluster.namesrv_addr, "TopicTxUnknown"
    asked: list[MessageExt] = []

    def checker(msg: MessageExt) -> LocalTransactionState:
        asked.append(msg)
        return COMMIT

    async with Admin(namesrv_addr=ns) as admin, tx_producer(ns, "pg_tx_unknown", checker) as producer:
        result = await producer.send_in_transaction(
            Message(topic, b"later", keys=["k1"]), lambda _m, _a: UNKNOW
        )
        assert result.local_transaction_state is UNKNOW
        assert await stored_count(admin, topic) == 0
        await wait_for(lambda: asked, timeout_s=15, what="a transaction check")
        msg = asked[0]
        assert msg.topic == topic and msg.body == b"later" and msg.keys == ["k1"]
        assert msg.transaction_id == result.msg_id
        assert msg.properties[C.PROPERTY_TRANSACTION_CHECK_TIMES] == "1"
        await wait_for(lambda: stored_count(admin, topic), timeout_s=10, what="the committed message")
        await wait_for(
            lambda: checker_passed_all(admin), timeout_s=15, what="the checker passed the half queue"
        )
        assert len(asked) == 1 and await stored_count(admin, topic) == 1
    [got] = await read_topic(ns, topic, 1, "cg_tx_unknown")
    assert got.body == b"later" and got.msg_id == result.msg_id


PRODUCER_THAT_DIES = """
import asyncio, os, sys
from rocketq.client import LocalTransactionState, Message, TransactionProducer

async def main(ns, topic):
    producer = TransactionProducer("pg_tx_dies", namesrv_addr=ns)
    await producer.start()
    await producer.send_in_transaction(Message(topic, b"orphan"), lambda _m, _a: LocalTransactionState.UNKNOW)
    print("SENT", flush=True)
    await asyncio.sleep(60)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_a_dead_producers_transaction_is_checked_by_its_successor(cluster_factory: Any) -> None:
    cluster = await start_cluster(cluster_factory, transactionCheckMax=15)
    ns, topic = cluster.namesrv_addr, "TopicTxDies"
    asked: list[bytes] = []
    successor = tx_producer(ns, "pg_tx_dies", lambda m: asked.append(m.body) or COMMIT)
    async with Admin(namesrv_addr=ns) as admin, successor:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", PRODUCER_THAT_DIES, ns, topic, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 30)
            assert line.strip() == b"SENT"
        finally:
            proc.kill()
            await proc.wait()
        await wait_for(lambda: asked, timeout_s=15, what="the successor asked about the orphan")
        await wait_for(lambda: stored_count(admin, topic), timeout_s=10, what="the orphan committed")
        assert asked[0] == b"orphan"
    [got] = await read_topic(ns, topic, 1, "cg_tx_dies")
    assert got.body == b"orphan"


@pytest.mark.timeout(90)
async def test_a_broker_restart_in_the_middle_of_checks(cluster_factory: Any) -> None:
    cluster = await start_cluster(cluster_factory, transactionCheckMax=50)
    ns, topic = cluster.namesrv_addr, "TopicTxRestart"
    answers: list[int] = []
    decide = {"state": UNKNOW}

    def checker(msg: MessageExt) -> LocalTransactionState:
        answers.append(int(msg.properties[C.PROPERTY_TRANSACTION_CHECK_TIMES]))
        return decide["state"]

    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, read_queues=2, write_queues=2)
    async with tx_producer(ns, "pg_tx_restart", checker) as producer:
        await producer.send_in_transaction(Message(topic, b"survivor"), lambda _m, _a: UNKNOW)
        await wait_for(lambda: len(answers) >= 2, timeout_s=15, what="two checks before the restart")
        await cluster.brokers[0].restart()
        before = len(answers)
        decide["state"] = COMMIT
        await wait_for(lambda: len(answers) > before, timeout_s=30, what="a check after the restart")
        async with Admin(namesrv_addr=ns) as admin:
            await wait_for(lambda: stored_count(admin, topic), timeout_s=15, what="the message committed")
            await wait_for(
                lambda: checker_passed_all(admin), timeout_s=15, what="the checker passed the half queue"
            )
            assert await stored_count(admin, topic) == 1
    # The check count went on from where it was: the restart did not start it over.
    assert answers == sorted(answers) and answers[-1] > answers[0]
    [got] = await read_topic(ns, topic, 1, "cg_tx_restart")
    assert got.body == b"survivor"


async def test_unanswered_checks_end_in_the_check_max_time_topic(cluster_factory: Any) -> None:
    cluster = await start_cluster(cluster_factory)
    ns, topic = cluster.namesrv_addr, "TopicTxMax"
    asked: list[int] = []

    def checker(msg: MessageExt) -> LocalTransactionState:
        asked.append(int(msg.properties[C.PROPERTY_TRANSACTION_CHECK_TIMES]))
        return UNKNOW

    async with Admin(namesrv_addr=ns) as admin, tx_producer(ns, "pg_tx_max", checker) as producer:
        await producer.send_in_transaction(Message(topic, b"undecided"), lambda _m, _a: UNKNOW)
        tcmt = C.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC
        await wait_for(
            lambda: stored_count(admin, tcmt), timeout_s=20, what="the message in TRANS_CHECK_MAX_TIME_TOPIC"
        )
        await wait_for(
            lambda: checker_passed_all(admin), timeout_s=15, what="the checker passed the half queue"
        )
        assert asked == [1, 2, 3]
        assert await stored_count(admin, topic) == 0
    [kept] = await read_topic(ns, C.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 1, "cg_tx_max")
    assert kept.body == b"undecided" and kept.properties[C.PROPERTY_REAL_TOPIC] == topic


async def test_delays_and_batches_are_refused_in_transactions(cluster_factory: Any) -> None:
    cluster = await start_cluster(cluster_factory)
    ns, topic = cluster.namesrv_addr, "TopicTxRefused"
    async with tx_producer(ns, "pg_tx_refused") as producer:
        delayed = Message(topic, b"x")
        delayed.delay_level = 3
        with pytest.raises(MQClientError, match="delay"):
            await producer.send_in_transaction(delayed, lambda _m, _a: COMMIT)
    # A client that does not check: the broker refuses a delayed half message and a batch holding one.
    async with Producer("pg_tx_raw", namesrv_addr=ns) as raw:
        half = Message(topic, b"x", properties={"TRAN_MSG": "true", "PGROUP": "pg_tx_raw", "DELAY": "2"})
        with pytest.raises(BrokerResponseError) as info:
            await raw.send(half)
        assert info.value.code == 13 and "delay level" in info.value.remark
        batch = [Message(topic, b"a"), Message(topic, b"b", properties={"TRAN_MSG": "true"})]
        with pytest.raises((BrokerResponseError, MQClientError), match="transaction"):
            await raw.send_batch(batch)


async def test_send_in_transaction_refuses_a_batch_clearly(cluster_factory: Any) -> None:
    cluster = await start_cluster(cluster_factory)
    async with tx_producer(cluster.namesrv_addr, "pg_tx_batch") as producer:
        with pytest.raises(MQClientError, match="batch"):
            await producer.send_in_transaction([Message("TopicTxBatch", b"a")], lambda _m, _a: COMMIT)  # type: ignore[arg-type]
