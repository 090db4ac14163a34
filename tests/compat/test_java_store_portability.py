"""A store directory moves between Apache's broker and ours, both ways: the migration path of a RocketMQ user.

Apache's NameServer and broker (4.9.7 jars, apache_support.py) write a store through Apache's Java client:
commit log, consume queues, index files, checkpoint and config/*.json (topics, consumer offsets). Then
`rocketq broker` opens that same directory, and every message is pulled with its body and properties, found by
key and by unique key, and the group's committed offsets are there. And the other way: a store written by our
broker is opened by Apache's, with the same checks made through Apache's client and admin API.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apache_support import COMMIT_LOG_FILE_BYTES, ApacheCluster
from interop import python_receive, python_send
from java_support import JavaDriver, b64, driver_fixture, skip_or_fail_when_missing, unb64

from rocketq.client import Admin, Message
from rocketq.testing.fixtures import cluster_factory
from rocketq.testing.waiting import wait_for

__all__ = ["cluster_factory"]

if (_skip := skip_or_fail_when_missing()) is not None:
    pytestmark = _skip

CLUSTER = "DefaultCluster"
TOPIC = "Portable"
COUNT = 24


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaDriver]:
    yield from driver_fixture(tmp_path_factory)


def body(i: int) -> bytes:
    return f"portable-{i}-".encode() + bytes(range(i % 7, 40))


async def pull_from_start(java: JavaDriver, ns: str, group: str, timeout_ms: int) -> dict[str, Any]:
    """Every message of TOPIC through Java's DefaultLitePullConsumer, assigned its 4 queues from offset 0."""
    result: dict[str, Any] = await java.call(
        "litePull",
        namesrv=ns,
        group=group,
        topic=TOPIC,
        mode="assign",
        seek={str(q): 0 for q in range(4)},
        count=COUNT,
        timeoutMs=timeout_ms,
    )
    return result


async def start_apache(work: Path, store: Path) -> ApacheCluster:
    apache = ApacheCluster(work, store)
    try:
        await asyncio.to_thread(apache.start)
    except BaseException:
        await asyncio.to_thread(apache.close)
        raise
    return apache


@pytest.mark.timeout(240)
async def test_a_store_written_by_apaches_broker_is_served_by_ours(
    cluster_factory: Any, java: JavaDriver, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    apache = await start_apache(tmp_path / "apache", store)
    try:
        ns = apache.namesrv_addr
        await java.mqadmin("updateTopic", "-n", ns, "-c", CLUSTER, "-t", TOPIC, "-r", "4", "-w", "4")
        specs = [
            {
                "topic": TOPIC,
                "body": b64(body(i)),
                "tags": f"Tag{i % 3}",
                "keys": [f"key-{i}"],
                "props": {"n": str(i)},
            }
            for i in range(COUNT)
        ]
        sent = await java.call("send", namesrv=ns, group="pg-port", mode="sync", messages=specs)
        assert {r["status"] for r in sent} == {"SEND_OK"}
        # A group consumes half of it and commits (config/consumerOffset.json when the broker stops).
        half = await pull_from_start(java, ns, "cg-port", timeout_ms=20000)
        assert len(half["messages"]) == COUNT
        # The consumer's shutdown sends its offsets oneway: wait until Apache's broker has them, so that
        # stopping it now writes them to config/consumerOffset.json.
        expected = dict(Counter(r["queueId"] for r in sent))
        async with Admin(namesrv_addr=ns) as admin:

            async def committed_on_apache() -> bool:
                progress = await admin.consumer_progress("cg-port", TOPIC)
                return {p.queue.queue_id: p.consumer_offset for p in progress} == expected

            await wait_for(
                committed_on_apache, timeout_s=20, what="the Java consumer's offsets on Apache's broker"
            )
    except BaseException:
        print(apache.log_tails())
        raise
    finally:
        await asyncio.to_thread(apache.close)

    cluster = await cluster_factory(
        broker_overrides={"storePathRootDir": str(store), "mappedFileSizeCommitLog": COMMIT_LOG_FILE_BYTES}
    )
    ns = cluster.namesrv_addr
    got = await python_receive(ns, "cg-py-port", TOPIC, COUNT)
    by_n = {int(m.properties["n"]): m for m in got}
    assert sorted(by_n) == list(range(COUNT))
    for i, r in enumerate(sent):
        m = by_n[i]
        assert (m.body, m.tags, m.keys) == (body(i), f"Tag{i % 3}", [f"key-{i}"])
        assert (m.queue_id, m.queue_offset, m.properties["UNIQ_KEY"]) == (
            r["queueId"],
            r["queueOffset"],
            r["msgId"],
        )
    async with Admin(namesrv_addr=ns) as admin:
        for i in (0, 7, COUNT - 1):  # the index files Apache wrote answer our lookups
            [by_key] = await admin.query_message_by_key(TOPIC, f"key-{i}")
            assert by_key.body == body(i)
            [by_uniq] = await admin.query_message_by_unique_key(TOPIC, sent[i]["msgId"])
            assert by_uniq.body == body(i)
        progress = await admin.consumer_progress("cg-port", TOPIC)
        committed = {p.queue.queue_id: p.consumer_offset for p in progress}
        assert committed == dict(Counter(r["queueId"] for r in sent)), (
            "the group's offsets from consumerOffset.json"
        )


@pytest.mark.timeout(240)
async def test_a_store_written_by_our_broker_is_served_by_apaches(
    cluster_factory: Any, java: JavaDriver, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    cluster = await cluster_factory(
        broker_overrides={"storePathRootDir": str(store), "mappedFileSizeCommitLog": COMMIT_LOG_FILE_BYTES}
    )
    ns = cluster.namesrv_addr
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(TOPIC, cluster=CLUSTER, read_queues=4, write_queues=4)
        await wait_for(lambda: admin.topic_route(TOPIC), timeout_s=15, what="the topic's route")
    msgs = [
        Message(TOPIC, body(i), tags=f"Tag{i % 3}", keys=[f"key-{i}"], properties={"n": str(i)})
        for i in range(COUNT)
    ]
    results = await python_send(ns, "pg-py-port", msgs)
    # The Java client commits a group's offsets on our broker (config/consumerOffset.json when it stops).
    pulled = await java.call(
        "litePull", namesrv=ns, group="cg-port", topic=TOPIC, mode="subscribe", count=COUNT, timeoutMs=20000
    )
    assert len(pulled["messages"]) == COUNT
    await cluster.close()

    apache = await start_apache(tmp_path / "apache", store)
    try:
        ns = apache.namesrv_addr
        again = await pull_from_start(java, ns, "cg-java-after", timeout_ms=30000)
        by_n = {int(m["props"]["n"]): m for m in again["messages"]}
        assert sorted(by_n) == list(range(COUNT))
        for i, r in enumerate(results):
            m = by_n[i]
            assert (unb64(m["body"]), m["tags"], m["keys"]) == (body(i), f"Tag{i % 3}", f"key-{i}")
            assert (m["queueId"], m["queueOffset"], m["msgId"]) == (
                r.queue.queue_id,
                r.queue_offset,
                r.msg_id,
            )
        for i in (0, 7, COUNT - 1):  # Apache's index lookups find what ours wrote
            [by_key] = await java.call("admin", namesrv=ns, call="queryMessage", topic=TOPIC, key=f"key-{i}")
            assert unb64(by_key["body"]) == body(i)
            by_uniq = await java.call(
                "admin", namesrv=ns, call="viewMessage", topic=TOPIC, msgId=results[i].msg_id
            )
            assert unb64(by_uniq["body"]) == body(i)
        stats = await java.call("admin", namesrv=ns, call="examineConsumeStats", group="cg-port")
        assert stats["diff"] == 0 and sum(q["consumer"] for q in stats["queues"].values()) == COUNT
    except BaseException:
        print(apache.log_tails())
        raise
    finally:
        await asyncio.to_thread(apache.close)
