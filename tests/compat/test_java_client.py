"""Apache RocketMQ's own Java client 4.9.8 (org.apache.rocketmq:rocketmq-client) against our daemons.

Each test starts `rocketq namesrv` and `rocketq broker` as subprocesses (cluster_factory) and drives Apache's
DefaultMQProducer, TransactionMQProducer, DefaultMQPushConsumer (concurrently and orderly, clustering and
broadcasting), DefaultLitePullConsumer and DefaultMQAdminExt through one Driver JVM per module (java_support.py).
Nothing of the Java client is changed or configured around a broker behaviour: what it sends and expects is
what an unmodified Java application does. The ali-ons scenarios (test_js_client.py) are all here, plus the
Java client's own features.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from interop import python_receive, python_send
from java_support import JavaDriver, JavaError, b64, driver_fixture, skip_or_fail_when_missing, unb64

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeResult,
    LitePullConsumer,
    Message,
    Producer,
    PushConsumer,
)
from rocketq.common.message import MessageQueue
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.fixtures import cluster_factory
from rocketq.testing.tls_certs import make_test_ca
from rocketq.testing.waiting import wait_for

__all__ = ["cluster_factory"]

if (_skip := skip_or_fail_when_missing()) is not None:
    pytestmark = _skip

CLUSTER = "DefaultCluster"
# Short delay levels: level 3 + reconsume times is the broker's retry back-off, level 2 the delay test's.
DELAY_LEVELS = "1s 2s 1s 1s 1s 1s 1s 1s"


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaDriver]:
    yield from driver_fixture(tmp_path_factory)


def spec(
    topic: str, body: bytes, *, tags: str | None = None, keys: list[str] | None = None, **props: Any
) -> dict[str, Any]:
    """One message for the Java side: its properties are set as the client would (MessageAccessor)."""
    out: dict[str, Any] = {"topic": topic, "body": b64(body), "props": {k: str(v) for k, v in props.items()}}
    if tags is not None:
        out["tags"] = tags
    if keys is not None:
        out["keys"] = keys
    return out


@asynccontextmanager
async def cluster_with_topics(
    cluster_factory: Any,
    java: JavaDriver,
    *topics: str,
    broker_count: int = 1,
    queues: int = 4,
    **broker_overrides: Any,
) -> AsyncIterator[LocalCluster]:
    """A NameServer and broker(s) (short delay levels) with `topics`; a failure prints the Java driver's log."""
    cluster: LocalCluster = await cluster_factory(
        broker_count=broker_count, broker_overrides={"messageDelayLevel": DELAY_LEVELS, **broker_overrides}
    )
    try:
        async with Admin(namesrv_addr=cluster.namesrv_addr) as admin:
            await create_routed_topics(admin, topics, queues, broker_count)
        yield cluster
    except BaseException:
        print(f"---- Java driver stderr tail:\n{java.stderr_tail(120)}")
        raise
    finally:
        await java.call("closeAll")  # what a failed test left open must not deliver into the next one


async def create_routed_topics(
    admin: Admin, topics: tuple[str, ...], queues: int, broker_count: int = 1
) -> None:
    """Create `topics` on the cluster and wait until every one is routed to `broker_count` brokers."""
    for topic in topics:
        await admin.create_topic(topic, cluster=CLUSTER, read_queues=queues, write_queues=queues)

    async def routed() -> bool:
        for topic in topics:
            route = await admin.topic_route(topic)
            if len(route.broker_datas) < broker_count:
                return False
        return True

    await wait_for(routed, timeout_s=15, what=f"routes of {topics}")


ACL_KEY = ("RocketMQ", "12345678")  # the account of Java's sample plain_acl.yml


def write_acl(directory: Path) -> Path:
    """A plain_acl.yml (Java's file format) with one admin account allowed everything."""
    acl = directory / "plain_acl.yml"
    acl.write_text(
        f"accounts:\n  - accessKey: {ACL_KEY[0]}\n    secretKey: '{ACL_KEY[1]}'\n    admin: true\n"
        "    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: PUB|SUB\n"
    )
    return acl


Offsets = dict[tuple[str, int], tuple[int, int]]


async def committed_offsets(ns: str, group: str, topic: str) -> Offsets:
    """(broker offset, committed offset) per (broker, queue id) of `topic` for `group`, from our Admin
    (GET_CONSUME_STATS)."""
    async with Admin(namesrv_addr=ns) as admin:
        return {
            (p.queue.broker_name, p.queue.queue_id): (p.broker_offset, p.consumer_offset)
            for p in await admin.consumer_progress(group, topic)
        }


async def wait_caught_up(ns: str, group: str, topic: str, timeout_s: float = 30) -> Offsets:
    async def caught_up() -> Offsets | None:
        offsets = await committed_offsets(ns, group, topic)
        return offsets if offsets and all(b == c for b, c in offsets.values()) else None

    got: Offsets = await wait_for(
        caught_up, timeout_s=timeout_s, interval_s=0.2, what=f"{group}'s committed offsets on {topic}"
    )
    return got


def bodies(messages: list[dict[str, Any]]) -> Counter[bytes]:
    return Counter(unb64(m["body"]) for m in messages)


# -- 1. DefaultMQProducer: sync, async, oneway, batch -> our broker -> our Python consumer ------------------


@pytest.mark.timeout(120)
async def test_java_producer_every_send_mode_reaches_python_consumer_intact(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic = "JavaProduced"
    async with cluster_with_topics(cluster_factory, java, topic) as cluster:
        ns = cluster.namesrv_addr
        specs: dict[str, list[dict[str, Any]]] = {}
        for mode, n in (("sync", 12), ("async", 8), ("oneway", 5), ("batch", 6)):
            specs[mode] = [
                spec(
                    topic,
                    f"{mode}-{i}".encode() + b"\x00\xff\x01",
                    tags=f"Tag{i % 3}",
                    keys=[f"{mode}-k{i}", "shared"],
                    seq=f"{mode}-{i}",
                    origin="java",
                    greeting="héllo 世界",
                )
                for i in range(n)
            ]
        big = bytes(range(256)) * 20  # 5 KiB: the Java producer deflates it and sets the compressed sys flag
        specs["sync"][3]["body"] = b64(big)
        specs["sync"][4]["flag"] = 7
        results = {
            mode: await java.call("send", namesrv=ns, group="pg-java", mode=mode, messages=msgs)
            for mode, msgs in specs.items()
        }
        for mode in ("sync", "async"):
            assert [r.get("status") for r in results[mode]] == ["SEND_OK"] * len(specs[mode]), results[mode]
            # msgId: the client's UNIQ_KEY (its address may be IPv6: longer); offsetMsgId: our IPv4 store address.
            assert all(len(r["msgId"]) >= 32 and len(r["offsetMsgId"]) == 32 for r in results[mode])
        [batch] = results["batch"]
        assert batch["status"] == "SEND_OK" and len(batch["msgId"].split(",")) == 6, batch

        total = sum(len(v) for v in specs.values())
        got = await python_receive(ns, "cg-py-of-java", topic, total)
        by_seq = {m.properties["seq"]: m for m in got}
        assert len(got) == total and len(by_seq) == total
        for msgs in specs.values():
            for s in msgs:
                m = by_seq[s["props"]["seq"]]
                assert m.body == unb64(s["body"]), s["props"]["seq"]
                assert (m.tags, m.keys) == (s["tags"], s["keys"])
                assert m.properties["greeting"] == "héllo 世界" and m.properties["origin"] == "java"
                assert m.flag == s.get("flag", 0)
        # The Java client's msgId is its UNIQ_KEY; the offset msgId is the store address and commit-log offset.
        for s, r in zip(specs["sync"], results["sync"], strict=True):
            m = by_seq[s["props"]["seq"]]
            assert m.properties["UNIQ_KEY"] == r["msgId"] and m.offset_msg_id == r["offsetMsgId"]
            assert (m.queue_id, m.queue_offset) == (r["queueId"], r["queueOffset"])
        assert {m.properties["UNIQ_KEY"] for m in got if m.properties["seq"].startswith("batch")} == set(
            batch["msgId"].split(",")
        )

        # DefaultMQAdminExt finds them: VIEW_MESSAGE_BY_ID (offset id), QUERY_MESSAGE by key and by unique key.
        first = results["sync"][3]
        viewed = await java.call("admin", namesrv=ns, call="viewMessage", msgId=first["offsetMsgId"])
        assert unb64(viewed["body"]) == big and viewed["props"]["seq"] == "sync-3"
        by_key = await java.call("admin", namesrv=ns, call="queryMessage", topic=topic, key="async-k5")
        assert [m["props"]["seq"] for m in by_key] == ["async-5"]
        by_uniq = await java.call("admin", namesrv=ns, call="viewMessage", topic=topic, msgId=first["msgId"])
        assert by_uniq["props"]["seq"] == "sync-3" and unb64(by_uniq["body"]) == big


# -- 2. our Producer -> Java push consumer: tags, offsets, restart, two members, SQL92 ---------------------


@pytest.mark.timeout(180)
async def test_java_push_consumer_tag_filter_offsets_and_resume(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic, group = "PyToJava", "cg-java-tags"
    async with cluster_with_topics(cluster_factory, java, topic) as cluster:
        ns = cluster.namesrv_addr
        tags = ["TagA", "TagB", "TagC"]
        first = [
            Message(topic, f"first-{i}".encode() + b"\x00\xfe", tags=tags[i % 3], keys=[f"k{i}"], flag=i)
            for i in range(30)
        ]
        await python_send(ns, "pg-py", first)
        wanted = Counter(m.body for m in first if m.tags in ("TagA", "TagC"))
        client_id = await java.call(
            "push",
            name="tags-1",
            namesrv=ns,
            group=group,
            topic=topic,
            expr="TagA || TagC",
            fromWhere="FIRST_OFFSET",
        )
        await java.wait(lambda: bodies(java.messages("tags-1")) == wanted, 40, "the TagA/TagC messages")
        by_body = {m.body: m for m in first}
        for got in java.messages("tags-1"):
            m = by_body[unb64(got["body"])]
            assert (got["tags"], got["keys"], got["flag"], got["reconsumeTimes"]) == (
                m.tags,
                " ".join(m.keys),
                m.flag,
                0,
            )

        async with Admin(namesrv_addr=ns) as admin:
            conn = await admin.consumer_connections(group)
            [client] = conn.connection_set
            assert (client.client_id, client.language.name, client.version) == (
                client_id,
                "JAVA",
                409,
            )  # V4_9_8
            assert conn.subscription_table[topic].sub_string == "TagA || TagC"
            assert conn.message_model is not None and conn.message_model.name == "CLUSTERING"
        # The Java consumer commits every 5 s (persistConsumerOffsetInterval) and when it shuts down. A queue whose
        # last messages are filtered out (TagB) moves past them when the long-polling pull comes back empty
        # (NO_NEW_MSG after the 15 s suspend, then correctTagsOffset): the committed offsets reach every queue's end.
        offsets = await wait_caught_up(ns, group, topic, timeout_s=40)
        await java.call("close", name="tags-1")
        assert sum(c for _, c in offsets.values()) == len(first)

        second = [Message(topic, f"second-{i}".encode(), tags=tags[i % 3]) for i in range(9)]
        await python_send(ns, "pg-py", second)
        await java.call(
            "push",
            name="tags-2",
            namesrv=ns,
            group=group,
            topic=topic,
            expr="TagA || TagC",
            fromWhere="FIRST_OFFSET",
        )
        wanted_again = Counter(m.body for m in second if m.tags in ("TagA", "TagC"))
        await java.wait(
            lambda: bodies(java.messages("tags-2")) == wanted_again, 40, "the messages sent after the restart"
        )
        await java.call("close", name="tags-2")
        assert bodies(java.messages("tags-2")) == wanted_again, (
            "nothing consumed before the restart came again"
        )


@pytest.mark.timeout(150)
async def test_two_java_consumers_share_the_queues_and_sql92_filters(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic, sql_topic, group = "JavaShared", "JavaSql", "cg-java-shared"
    async with cluster_with_topics(
        cluster_factory, java, topic, sql_topic, enablePropertyFilter="true"
    ) as cluster:
        ns = cluster.namesrv_addr
        client_ids = {
            name: await java.call(
                "push", name=name, namesrv=ns, group=group, topic=topic, expr="*", fromWhere="FIRST_OFFSET"
            )
            for name in ("shared-1", "shared-2")
        }

        async def queues_split() -> dict[str, set[str]] | None:
            """Each member's queues (GET_CONSUMER_RUNNING_INFO), once both rebalanced with both in the group."""
            held = {}
            for name, client_id in client_ids.items():
                info = await java.call(
                    "admin", namesrv=ns, call="getConsumerRunningInfo", group=group, clientId=client_id
                )
                held[name] = {q for q in info["queues"] if q.startswith(f"{topic}/")}
            one, two = held.values()
            return held if one and two and not one & two and len(one | two) == 4 else None

        # GET_CONSUMER_LIST_BY_GROUP and NOTIFY_CONSUMER_IDS_CHANGED: each takes half the queues.
        await wait_for(queues_split, timeout_s=60, interval_s=0.5, what="the two members' rebalance")
        msgs = [Message(topic, f"shared-{i}".encode(), tags="S") for i in range(40)]
        await python_send(ns, "pg-py-shared", msgs)

        def received() -> Counter[bytes]:
            return bodies(java.messages("shared-1")) + bodies(java.messages("shared-2"))

        await java.wait(lambda: set(received()) == {m.body for m in msgs}, 60, "every message", received)
        assert received() == Counter(m.body for m in msgs), "each message once"
        one = {m["queueId"] for m in java.messages("shared-1")}
        two = {m["queueId"] for m in java.messages("shared-2")}
        assert one and two and not one & two, (one, two)

        # SQL92 (broker enablePropertyFilter=true): the expression travels in the heartbeat; our broker filters.
        await java.call(
            "push",
            name="sql",
            namesrv=ns,
            group="cg-java-sql",
            topic=sql_topic,
            sql=True,
            expr="a BETWEEN 3 AND 7 AND (color = 'red' OR color IS NULL)",
            fromWhere="FIRST_OFFSET",
        )
        sql_msgs = [
            Message(
                sql_topic,
                f"sql-{i}".encode(),
                tags="Q",
                properties={"a": str(i), **({"color": "red" if i % 2 else "blue"} if i < 6 else {})},
            )
            for i in range(10)
        ]
        await python_send(ns, "pg-py-sql", sql_msgs)
        wanted = Counter(f"sql-{i}".encode() for i in (3, 5, 6, 7))
        await java.wait(
            lambda: bodies(java.messages("sql")) == wanted, 40, "the messages matching the SQL92 filter"
        )
        for name in ("shared-1", "shared-2", "sql"):
            await java.call("close", name=name)
        await wait_caught_up(ns, group, topic, timeout_s=15)


# -- 3. retry and DLQ, broadcast --------------------------------------------------------------------------


@pytest.mark.timeout(150)
async def test_java_reconsume_later_retries_then_dead_letters(cluster_factory: Any, java: JavaDriver) -> None:
    topic, group = "JavaRetry", "cg-java-retry"
    async with cluster_with_topics(cluster_factory, java, topic) as cluster:
        ns = cluster.namesrv_addr
        # fail=once: RECONSUME_LATER once; fail=always: every time, so past maxReconsumeTimes (2) -> %DLQ%.
        await java.call(
            "push",
            name="retry",
            namesrv=ns,
            group=group,
            topic=topic,
            expr="*",
            fromWhere="FIRST_OFFSET",
            failTimes=1,
            maxReconsumeTimes=2,
        )
        await java.call(
            "push",
            name="dead",
            namesrv=ns,
            group=group + "-dlq",
            topic=topic,
            expr="*",
            fromWhere="FIRST_OFFSET",
            failTimes=100,
            maxReconsumeTimes=1,
        )
        msgs = [
            spec(topic, f"retry-{i}".encode(), tags="R", keys=[f"r{i}"], fail=f"m{i}", n=i) for i in range(4)
        ]
        sent = await java.call("send", namesrv=ns, group="pg-java-retry", mode="sync", messages=msgs)

        def redelivered() -> list[dict[str, Any]]:
            return [m for m in java.messages("retry", "ok") if m["reconsumeTimes"] == 1]

        await java.wait(
            lambda: len(redelivered()) == 4,
            60,
            "each failed message once more (CONSUMER_SEND_MSG_BACK, %RETRY% topic, back-off)",
        )
        uniq = {r["msgId"] for r in sent}
        for m in redelivered():
            # The Java consumer restores the topic from RETRY_TOPIC; the message keeps its id and properties.
            assert m["topic"] == topic and m["props"]["RETRY_TOPIC"] == topic
            assert m["msgId"] in uniq and m["props"]["n"] == m["keys"][1:]
            assert m["props"].get("ORIGIN_MESSAGE_ID") in {r["offsetMsgId"] for r in sent} | uniq
        assert bodies(java.messages("retry", "later")) == bodies(redelivered())

        # maxReconsumeTimes 1: delivered, RECONSUME_LATER, redelivered once, RECONSUME_LATER -> %DLQ%<group>.
        await java.wait(
            lambda: len(java.messages("dead", "later")) == 8, 60, "two deliveries of each, then no more"
        )
        dlq = await python_receive(ns, "cg-py-dlq", f"%DLQ%{group}-dlq", 4)
        assert Counter(m.body for m in dlq) == Counter(unb64(s["body"]) for s in msgs)
        assert all(m.properties["UNIQ_KEY"] in uniq for m in dlq)
        for name in ("retry", "dead"):
            await java.call("close", name=name)


@pytest.mark.timeout(120)
async def test_java_broadcast_consumers_each_get_everything_with_local_offsets(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic, group = "JavaBroadcast", "cg-java-bc"
    async with cluster_with_topics(cluster_factory, java, topic) as cluster:
        ns = cluster.namesrv_addr
        for name in ("bc-1", "bc-2"):
            await java.call(
                "push",
                name=name,
                namesrv=ns,
                group=group,
                topic=topic,
                expr="B",
                broadcast=True,
                fromWhere="FIRST_OFFSET",
            )
        msgs = [Message(topic, f"bc-{i}".encode(), tags="B" if i % 4 else "Other") for i in range(20)]
        await python_send(ns, "pg-py-bc", msgs)
        wanted = Counter(m.body for m in msgs if m.tags == "B")
        for name in ("bc-1", "bc-2"):
            await java.wait(lambda n=name: bodies(java.messages(n)) == wanted, 40, f"{name}: every B message")
        client_ids = {name: await java.call("clientId", name=name) for name in ("bc-1", "bc-2")}
        for name in ("bc-1", "bc-2"):
            await java.call("close", name=name)
        # Broadcasting keeps offsets in the client's files (LocalFileOffsetStore), nothing on the broker.
        # The file is fastjson's OffsetSerializeWrapper, MessageQueue objects as map keys: {{..}:offset, ..}.
        offsets_root = Path(java.stderr_path).parent / "offsets"
        for client_id in client_ids.values():
            stored = (offsets_root / client_id / group / "offsets.json").read_text()
            queue_offsets = [int(n) for n in re.findall(r"\}:(\d+)", stored)]
            # (a queue that only ever held filtered-out messages has no entry until a pull comes back empty)
            assert sum(wanted.values()) <= sum(queue_offsets) <= len(msgs), stored
        assert all(c == 0 for _, c in (await committed_offsets(ns, group, topic)).values())


@pytest.mark.timeout(150)
async def test_java_namespace_cjk_tags_and_a_new_group_from_the_last_offset(
    cluster_factory: Any, java: JavaDriver
) -> None:
    ns_topic, topic = "inst1%JavaNs", "JavaLast"
    # accessMessageInMemoryMaxRatio=0: every stored message counts as on disk (the LAST_OFFSET part below)
    async with cluster_with_topics(
        cluster_factory, java, ns_topic, topic, accessMessageInMemoryMaxRatio=0
    ) as cluster:
        ns = cluster.namesrv_addr
        # A namespace (topics and groups "inst1%<name>" on the wire) and CJK / emoji tags, filtered by our broker
        # with the heartbeat's subscription (the Java client's pulls carry no expression: postSubscriptionWhenPull
        # is false by default).
        await java.call(
            "push",
            name="ns",
            namespace="inst1",
            namesrv=ns,
            group="cg-java-ns",
            topic="JavaNs",
            expr="标签A || 🚀",
            fromWhere="FIRST_OFFSET",
        )
        tags = ["标签A", "🚀", "其他"]
        await java.call(
            "send",
            namespace="inst1",
            namesrv=ns,
            group="pg-java-ns",
            mode="sync",
            messages=[
                spec("JavaNs", f"ns-{i}".encode(), tags=tags[i % 3], keys=[f"键{i}"]) for i in range(9)
            ],
        )
        wanted = Counter(f"ns-{i}".encode() for i in range(9) if i % 3 != 2)
        await java.wait(
            lambda: bodies(java.messages("ns")) == wanted,
            40,
            "the 标签A and 🚀 messages",
            lambda: java.messages("ns"),
        )
        assert {m["keys"] for m in java.messages("ns")} == {f"键{i}" for i in range(9) if i % 3 != 2}
        async with Admin(namesrv_addr=ns) as admin:
            assert sum(t.max_offset for t in (await admin.topic_status(ns_topic)).values()) == 9
            conn = await admin.consumer_connections("inst1%cg-java-ns")
            assert conn.subscription_table[ns_topic].sub_string == "标签A || 🚀"

        # A new group from CONSUME_FROM_LAST_OFFSET: QUERY_CONSUMER_OFFSET answers QUERY_NOT_FOUND (the messages
        # are "on disk"), the Java client takes GET_MAX_OFFSET: only what is sent after it started comes.
        await java.call(
            "send",
            namesrv=ns,
            group="pg-java-last",
            mode="sync",
            messages=[spec(topic, f"old-{i}".encode()) for i in range(8)],
        )
        client_id = await java.call(
            "push",
            name="last",
            namesrv=ns,
            group="cg-java-last",
            topic=topic,
            expr="*",
            fromWhere="LAST_OFFSET",
        )

        async def started() -> bool:  # the offsets were computed: its process queues exist
            info = await java.call(
                "admin", namesrv=ns, call="getConsumerRunningInfo", group="cg-java-last", clientId=client_id
            )
            return sum(1 for q in info["queues"] if q.startswith(f"{topic}/")) == 4

        await wait_for(started, timeout_s=40, interval_s=0.5, what="the LAST_OFFSET consumer's queues")
        await java.call(
            "send",
            namesrv=ns,
            group="pg-java-last",
            mode="sync",
            messages=[spec(topic, f"new-{i}".encode()) for i in range(4)],
        )
        new = Counter(f"new-{i}".encode() for i in range(4))
        await java.wait(
            lambda: bodies(java.messages("last")) == new,
            40,
            "only the new messages",
            lambda: java.messages("last"),
        )


# -- 4. orderly, delay and timers -------------------------------------------------------------------------


@pytest.mark.timeout(180)
async def test_java_orderly_consumer_keeps_order_over_a_broker_restart(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic, group = "JavaOrdered", "cg-java-orderly"
    async with cluster_with_topics(cluster_factory, java, topic) as cluster:
        ns = cluster.namesrv_addr
        orders = ["order-1", "order-2", "order-3"]

        def batch(start: int, n: int) -> list[dict[str, Any]]:
            out = []
            for i in range(start, start + n):
                extra = (
                    {"fail": f"m{i}"} if i == 4 else {}
                )  # suspended once: redelivered in place, order kept
                out.append(
                    spec(
                        topic,
                        f"{orders[i % 3]}:{i}".encode(),
                        tags="O",
                        keys=[f"o{i}"],
                        shardingKey=orders[i % 3],
                        seq=i,
                        **extra,
                    )
                )
            return out

        await java.call(
            "push",
            name="orderly",
            namesrv=ns,
            group=group,
            topic=topic,
            expr="*",
            orderly=True,
            fromWhere="FIRST_OFFSET",
            failTimes=1,
        )
        first = await java.call(
            "send", namesrv=ns, group="pg-java-order", mode="selector", messages=batch(0, 15)
        )
        assert {r["status"] for r in first} == {"SEND_OK"}
        await java.wait(lambda: len(java.messages("orderly", "ok")) >= 15, 40, "the first half in order")

        await cluster.brokers[0].restart()  # the queue locks (LOCK_BATCH_MQ) are taken again after it
        second = await java.call(
            "send", namesrv=ns, group="pg-java-order", mode="selector", messages=batch(15, 15), retries=3
        )
        assert {r.get("status") for r in second} == {"SEND_OK"}, second

        def seqs_of(order: str) -> list[int]:
            return [
                int(m["props"]["seq"])
                for m in java.messages("orderly", "ok")
                if unb64(m["body"]).startswith(order.encode())
            ]

        await java.wait(
            lambda: all(set(seqs_of(o)) == set(range(orders.index(o), 30, 3)) for o in orders),
            60,
            "every message of every order",
        )
        for order in orders:
            seen: list[int] = []
            for seq in seqs_of(
                order
            ):  # a redelivery after the restart may repeat; never goes backwards past it
                if seq not in seen:
                    seen.append(seq)
            assert seen == sorted(seen), f"{order} delivered out of order: {seqs_of(order)}"
            # one queue per order (the selector), on which the broker kept the send order
            assert (
                len(
                    {
                        m["queueId"]
                        for m in java.messages("orderly")
                        if unb64(m["body"]).startswith(order.encode())
                    }
                )
                == 1
            )
        suspended = [m for m in java.messages("orderly", "suspend")]
        assert [m["props"]["seq"] for m in suspended] == ["4"]
        await java.call("close", name="orderly")


@pytest.mark.timeout(120)
async def test_java_delay_levels_and_timer_properties(cluster_factory: Any, java: JavaDriver) -> None:
    topic = "JavaDelayed"
    async with cluster_with_topics(cluster_factory, java, topic) as cluster:
        ns = cluster.namesrv_addr
        await java.call(
            "push",
            name="delay",
            namesrv=ns,
            group="cg-java-delay",
            topic=topic,
            expr="*",
            fromWhere="FIRST_OFFSET",
        )
        deliver_at = int(time.time() * 1000) + 2000
        msgs = [
            {**spec(topic, b"now", tags="Now")},
            {**spec(topic, b"level-2", tags="Level", keys=["late"]), "delayLevel": 2},
            spec(topic, b"aliyun-timer", tags="Start", __STARTDELIVERTIME=deliver_at),
            spec(topic, b"v5-timer", tags="Timer", TIMER_DELIVER_MS=deliver_at),
        ]
        sent = await java.call("send", namesrv=ns, group="pg-java-delay", mode="sync", messages=msgs)
        assert {r["status"] for r in sent} == {"SEND_OK"}
        await java.wait(
            lambda: len(java.messages("delay")) == 4, 40, "the immediate, delayed and timer messages"
        )
        by_tag = {m["tags"]: m for m in java.messages("delay")}
        late = by_tag["Level"]
        # Level 2 of the broker's messageDelayLevel is 2 s: stored again under the topic no earlier than that.
        assert late["storeTimestamp"] - late["bornTimestamp"] >= 1900 and late["props"]["DELAY"] == "2"
        assert late["keys"] == "late" and late["msgId"] == sent[1]["msgId"]
        for tag in ("Start", "Timer"):
            assert by_tag[tag]["storeTimestamp"] >= deliver_at - 50, (tag, by_tag[tag])
        assert by_tag["Now"]["storeTimestamp"] < deliver_at - 500
        await java.call("close", name="delay")


# -- 5. transactions, lite pull ---------------------------------------------------------------------------


@pytest.mark.timeout(150)
async def test_java_transaction_producer_commit_rollback_and_check_back(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic = "JavaTx"
    fast_checks = {"transactionTimeOut": 1000, "transactionCheckInterval": 300, "transactionCheckMax": 5}
    async with cluster_with_topics(cluster_factory, java, topic, **fast_checks) as cluster:
        ns = cluster.namesrv_addr
        cases = {
            "commit": ("COMMIT_MESSAGE", ["ROLLBACK_MESSAGE"]),
            "rollback": ("ROLLBACK_MESSAGE", ["COMMIT_MESSAGE"]),
            "unknown-commit": ("UNKNOW", ["UNKNOW", "COMMIT_MESSAGE"]),
            "unknown-rollback": ("UNKNOW", ["ROLLBACK_MESSAGE"]),
        }
        msgs = [
            {**spec(topic, key.encode(), tags="Tx", keys=[key]), "local": local, "checks": checks}
            for key, (local, checks) in cases.items()
        ]
        sent = await java.call(
            "transaction", name="tx", namesrv=ns, group="pg-java-tx", topic=topic, messages=msgs
        )
        assert [r["localState"] for r in sent] == [c[0] for c in cases.values()]
        assert all(r["status"] == "SEND_OK" for r in sent)

        def checks(key: str) -> list[dict[str, Any]]:
            return [e for e in java.of("check", "tx") if e["key"] == key]

        # CHECK_TRANSACTION_STATE reaches the Java producer for the undecided ones until it answers.
        await java.wait(
            lambda: len(checks("unknown-commit")) >= 2 and checks("unknown-rollback"),
            40,
            "the broker's check-backs of the undecided transactions",
        )
        got = await python_receive(ns, "cg-py-tx", topic, 2)
        assert sorted(m.body for m in got) == [b"commit", b"unknown-commit"]
        assert checks("commit") == [] and checks("rollback") == []
        tx_ids = {r["msgId"] for r in sent}  # the transaction id is the half message's UNIQ_KEY
        assert all(m.properties["UNIQ_KEY"] in tx_ids for m in got)
        assert {e["transactionId"] for e in checks("unknown-commit")} <= tx_ids
        await java.call("close", name="tx")


@pytest.mark.timeout(120)
async def test_java_lite_pull_consumer_subscribe_and_assign_with_seek(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic = "JavaLite"
    async with cluster_with_topics(cluster_factory, java, topic) as cluster:
        ns = cluster.namesrv_addr
        msgs = [spec(topic, f"lite-{i}".encode(), tags="L", keys=[f"l{i}"]) for i in range(24)]
        sent = await java.call("send", namesrv=ns, group="pg-java-lite", mode="sync", messages=msgs)
        per_queue = Counter(r["queueId"] for r in sent)

        sub = await java.call(
            "litePull",
            namesrv=ns,
            group="cg-java-lite",
            topic=topic,
            mode="subscribe",
            count=24,
            timeoutMs=20000,
        )
        assert bodies(sub["messages"]) == Counter(unb64(s["body"]) for s in msgs)
        assert {k.split(":")[1]: v for k, v in sub["committed"].items()} == {
            str(q): n for q, n in per_queue.items()
        }
        # commitSync stored them on our broker (UPDATE_CONSUMER_OFFSET): a new member resumes there.
        offsets = await committed_offsets(ns, "cg-java-lite", topic)
        assert {q: c for (_, q), (_, c) in offsets.items()} == dict(per_queue)

        # assign + seek: from offset 2 of every queue (queues hold 6 each: 4 per queue).
        # The group starts at the end of every queue, so that no pull can bring a message from before the
        # seek: Java's DefaultLitePullConsumer starts pulling at assign(), and a pull already under way
        # when seek() runs may still hand out messages from the old position (a race in its
        # PullTaskImpl; under load it showed a message below offset 2 from a start at 0).
        async with Admin(namesrv_addr=ns) as admin:
            for broker, q in offsets:
                await admin.update_consumer_offset(
                    "cg-java-assign", MessageQueue(topic, broker, q), per_queue[q]
                )
        seek = {str(q): 2 for q in per_queue}
        assigned = await java.call(
            "litePull",
            namesrv=ns,
            group="cg-java-assign",
            topic=topic,
            mode="assign",
            seek=seek,
            count=24 - 2 * len(per_queue),
            timeoutMs=20000,
        )
        assert all(m["queueOffset"] >= 2 for m in assigned["messages"])
        assert len(assigned["messages"]) == 24 - 2 * len(per_queue) and assigned["queues"] == 4
        offsets = await committed_offsets(ns, "cg-java-assign", topic)
        assert {q: c for (_, q), (_, c) in offsets.items()} == dict(per_queue)


# -- 6. admin calls reaching a Java consumer, two brokers, fault latency ----------------------------------


@pytest.mark.timeout(150)
async def test_admin_reaches_a_java_consumer_and_java_admin_reads_our_broker(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic, group = "JavaAdmin", "cg-java-admin"
    async with cluster_with_topics(cluster_factory, java, topic) as cluster:
        ns = cluster.namesrv_addr
        client_id = await java.call(
            "push", name="adm", namesrv=ns, group=group, topic=topic, expr="*", fromWhere="FIRST_OFFSET"
        )
        sent = await java.call(
            "send",
            namesrv=ns,
            group="pg-java-admin",
            mode="sync",
            messages=[spec(topic, f"adm-{i}".encode(), tags="A", keys=[f"a{i}"]) for i in range(8)],
        )
        await java.wait(lambda: len(java.messages("adm")) == 8, 30, "the 8 messages")
        await wait_caught_up(ns, group, topic)

        stats = await java.call("admin", namesrv=ns, call="examineTopicStats", topic=topic)
        assert sum(v["max"] for v in stats.values()) == 8 and len(stats) == 4
        consume = await java.call("admin", namesrv=ns, call="examineConsumeStats", group=group)
        assert consume["diff"] == 0 and sum(v["consumer"] for v in consume["queues"].values()) == 8
        conn = await java.call("admin", namesrv=ns, call="examineConsumerConnectionInfo", group=group)
        assert [c["clientId"] for c in conn["clients"]] == [client_id]
        assert conn["messageModel"] == "CLUSTERING" and conn["consumeType"] == "CONSUME_PASSIVELY"

        # GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY, forwarded by our broker to the Java consumer.
        running = await java.call(
            "admin", namesrv=ns, call="getConsumerRunningInfo", group=group, clientId=client_id, jstack=True
        )
        assert running["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY" and running["jstack"]
        assert sum(running["queues"].values()) == 8
        direct = await java.call(
            "admin",
            namesrv=ns,
            call="consumeMessageDirectly",
            group=group,
            clientId=client_id,
            topic=topic,
            msgId=sent[2]["offsetMsgId"],
        )
        assert direct["result"] == "CR_SUCCESS" and not direct["order"]
        assert [m["body"] for m in java.messages("adm")].count(
            b64(b"adm-2")
        ) == 2  # consumed once more, directly
        async with Admin(namesrv_addr=ns) as admin:  # and the same through our Admin
            info = await admin.consumer_running_info(group, client_id)
            assert info.properties["PROP_CLIENT_VERSION"] == "V4_9_8"
            ours = await admin.consume_message_directly(group, client_id, sent[3]["offsetMsgId"])
            assert ours.consume_result.name == "CR_SUCCESS"
        await java.call("close", name="adm")


@pytest.mark.timeout(120)
async def test_java_admin_resets_a_live_java_group_by_timestamp(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic, group = "JavaReset", "cg-java-reset"
    async with cluster_with_topics(cluster_factory, java, topic) as cluster:
        ns = cluster.namesrv_addr
        await java.call(
            "push", name="reset", namesrv=ns, group=group, topic=topic, expr="*", fromWhere="FIRST_OFFSET"
        )
        await java.call(
            "send",
            namesrv=ns,
            group="pg-java-reset",
            mode="sync",
            messages=[spec(topic, f"reset-{i}".encode(), tags="R") for i in range(8)],
        )
        await java.wait(lambda: len(java.messages("reset")) == 8, 30, "the 8 messages")

        async def reset_once() -> Any:
            # Java's broker (Broker2Client.resetOffset) refuses "THe consumer group <...> not exist" while
            # any queue of the topic has no committed offset: a queue none of the 8 messages landed on is
            # committed by the consumer's persist task (every 5 s), not by its pulls. Retried until then.
            try:
                return await java.call(
                    "admin", namesrv=ns, call="resetOffsetByTimestamp", topic=topic, group=group, timestamp=0
                )
            except JavaError as err:
                if "not exist" not in str(err):
                    raise
                return None

        reset = await wait_for(
            reset_once, timeout_s=30, interval_s=0.5, what="the group's offsets on every queue"
        )
        assert set(reset.values()) == {0}
        await java.wait(lambda: len(java.messages("reset")) == 16, 30, "every message again after the reset")
        await java.call("close", name="reset")


@pytest.mark.timeout(120)
async def test_java_message_trace_records_reach_the_trace_topic(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic = "JavaTraced"
    async with cluster_with_topics(cluster_factory, java, topic, traceTopicEnable="true") as cluster:
        ns = cluster.namesrv_addr
        await java.call(
            "push",
            name="traced",
            namesrv=ns,
            group="cg-java-trace",
            topic=topic,
            expr="*",
            fromWhere="FIRST_OFFSET",
            trace=True,
        )
        sent = await java.call(
            "send",
            namesrv=ns,
            group="pg-java-trace",
            mode="sync",
            trace=True,
            keepAs="traced-producer",
            messages=[spec(topic, f"traced-{i}".encode(), tags="Tr", keys=[f"t{i}"]) for i in range(3)],
        )
        await java.wait(lambda: len(java.messages("traced")) == 3, 30, "the traced messages")
        # The client's trace dispatcher batches records (fields split by \x01, records by \x02) into
        # RMQ_SYS_TRACE_TOPIC: a Pub record per send, SubBefore/SubAfter per consumption. It sends them
        # asynchronously and may drop those still on their way when its client shuts down, so both Java
        # clients stay open until every record is read.
        text = ""
        async with LitePullConsumer(
            "cg-py-trace", namesrv_addr=ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ) as lite:
            lite.subscribe("RMQ_SYS_TRACE_TOPIC", "*")

            async def every_record_read() -> bool:
                nonlocal text
                text += b"".join(m.body for m in await lite.poll(timeout_ms=200)).decode()
                return all(word in text for word in ("Pub", "SubBefore", "SubAfter")) and all(
                    r["msgId"] in text for r in sent
                )

            await wait_for(every_record_read, timeout_s=60, interval_s=0.05, what="the trace records")
        await java.call("close", name="traced")
        await java.call("close", name="traced-producer")


@pytest.mark.timeout(120)
async def test_java_acl_signed_requests(cluster_factory: Any, java: JavaDriver, tmp_path: Path) -> None:
    topic = "JavaAcl"
    acl = write_acl(tmp_path)
    cluster = await cluster_factory(broker_overrides={"aclEnable": "true", "aclFilePath": str(acl)})
    try:
        ns = cluster.namesrv_addr
        async with Admin(namesrv_addr=ns, access_key=ACL_KEY[0], secret_key=ACL_KEY[1]) as admin:
            await create_routed_topics(admin, (topic,), 4)
        msgs = [spec(topic, b"signed", tags="A")]
        # AclClientRPCHook signs every request (AccessKey, Signature extFields; HmacSHA1 of the sorted fields).
        ok = await java.call(
            "send",
            namesrv=ns,
            group="pg-java-acl",
            mode="sync",
            messages=msgs,
            accessKey=ACL_KEY[0],
            secretKey=ACL_KEY[1],
        )
        assert [r.get("status") for r in ok] == ["SEND_OK"]
        bad = await java.call(
            "send",
            namesrv=ns,
            group="pg-java-acl",
            mode="sync",
            messages=msgs,
            retries=0,
            accessKey=ACL_KEY[0],
            secretKey="wrong-secret",
        )
        assert "error" in bad[0], bad
        print("refused as:", bad[0]["error"][:300])
    except BaseException:
        print(f"---- Java driver stderr tail:\n{java.stderr_tail(120)}")
        raise
    finally:
        await java.call("closeAll")


@pytest.mark.timeout(120)
async def test_java_async_burst_meets_fast_failure(cluster_factory: Any, java: JavaDriver) -> None:
    topic = "JavaBusy"
    # 1 ms in the send queue is already too long: with one send at a time, each waiting for its fsync, a burst
    # of async sends queues up and gets SYSTEM_BUSY answers, which the Java client reports as
    # "[TIMEOUT_CLEAN_QUEUE]broker busy ..." instead of waiting for its send timeout.
    async with cluster_with_topics(
        cluster_factory,
        java,
        topic,
        waitTimeMillsInSendQueue=1,
        sendMessageThreadPoolNums=1,
        flushDiskType="SYNC_FLUSH",
    ) as cluster:
        ns = cluster.namesrv_addr
        results = await java.call(
            "send",
            namesrv=ns,
            group="pg-java-busy",
            mode="async",
            retries=0,
            timeoutMs=10000,
            messages=[spec(topic, f"busy-{i}".encode()) for i in range(400)],
        )
        busy = [r for r in results if "error" in r]
        assert busy and all("TIMEOUT_CLEAN_QUEUE" in r["error"] for r in busy), busy[:3]
        ok = [r for r in results if r.get("status") == "SEND_OK"]
        async with Admin(namesrv_addr=ns) as admin:  # every acknowledged message is stored, nothing else
            assert sum(t.max_offset for t in (await admin.topic_status(topic)).values()) == len(ok)


@pytest.mark.timeout(150)
async def test_java_producer_spreads_over_two_brokers_and_avoids_a_dead_one(
    cluster_factory: Any, java: JavaDriver
) -> None:
    topic = "JavaTwoBrokers"
    async with cluster_with_topics(cluster_factory, java, topic, broker_count=2) as cluster:
        ns = cluster.namesrv_addr
        msgs = [spec(topic, f"two-{i}".encode(), tags="T") for i in range(16)]
        sent = await java.call("send", namesrv=ns, group="pg-java-two", mode="sync", messages=msgs)
        assert Counter(r["brokerName"] for r in sent) == {"broker-a": 8, "broker-b": 8}
        # One push consumer pulls from, and commits on, both brokers.
        await java.call(
            "push",
            name="spread",
            namesrv=ns,
            group="cg-java-two",
            topic=topic,
            expr="*",
            fromWhere="FIRST_OFFSET",
        )
        await java.wait(
            lambda: bodies(java.messages("spread")) == Counter(unb64(s["body"]) for s in msgs),
            40,
            "both brokers' messages",
            lambda: [
                (
                    e["at"],
                    e["message"]["brokerName"],
                    e["message"]["queueId"],
                    e["message"]["queueOffset"],
                    e["thread"],
                )
                for e in java.of("message", "spread")
            ],
        )
        await java.call("close", name="spread")
        offsets = await committed_offsets(ns, "cg-java-two", topic)
        assert sum(c for _, c in offsets.values()) == 16, offsets

        # broker-b dies; its route stays until the NameServer notices. The sync sends retry on broker-a and,
        # with sendLatencyFaultEnable, keep away from broker-b.
        cluster.brokers[1].kill()
        await wait_for(lambda: not cluster.brokers[1].running, timeout_s=10, what="broker-b gone")
        after = await java.call(
            "send",
            namesrv=ns,
            group="pg-java-two",
            mode="sync",
            retries=2,
            latencyFault=True,
            timeoutMs=3000,
            messages=[spec(topic, f"after-{i}".encode()) for i in range(10)],
        )
        assert [r.get("status") for r in after] == ["SEND_OK"] * 10, after
        assert {r["brokerName"] for r in after} == {"broker-a"}


# -- 7. Java -> Python -> Java ----------------------------------------------------------------------------


@pytest.mark.timeout(120)
async def test_java_to_python_and_back_keeps_bodies_and_properties(
    cluster_factory: Any, java: JavaDriver
) -> None:
    there, back = "JavaToPy", "PyToJavaBack"
    async with cluster_with_topics(cluster_factory, java, there, back) as cluster:
        ns = cluster.namesrv_addr
        bodies_out = [b"", b"\x00" * 3, "ünïcode ✓".encode(), bytes(range(256)) * 24, b"plain"]
        msgs = [
            spec(there, body, tags="Round", keys=[f"rt{i}", "trip"], n=i, note="a=b;c d", emoji="🚀")
            for i, body in enumerate(bodies_out)
            if body
        ]  # an empty body is refused by the Java client itself
        await java.call("send", namesrv=ns, group="pg-java-rt", mode="sync", messages=msgs)
        got = await python_receive(ns, "cg-py-rt", there, len(msgs))
        # our Python producer sends each one on, properties and all
        onward = [
            Message(
                back,
                m.body,
                tags=m.tags,
                keys=m.keys,
                properties={k: m.properties[k] for k in ("n", "note", "emoji")},
            )
            for m in sorted(got, key=lambda m: int(m.properties["n"]))
        ]
        await python_send(ns, "pg-py-rt", onward)
        await java.call(
            "push",
            name="rt",
            namesrv=ns,
            group="cg-java-rt",
            topic=back,
            expr="Round",
            fromWhere="FIRST_OFFSET",
        )
        await java.wait(lambda: len(java.messages("rt")) == len(msgs), 40, "the messages back in Java")
        by_n = {m["props"]["n"]: m for m in java.messages("rt")}
        for s in msgs:
            m = by_n[s["props"]["n"]]
            assert m["body"] == s["body"] and m["keys"] == " ".join(s["keys"]) and m["tags"] == "Round"
            assert (m["props"]["note"], m["props"]["emoji"]) == ("a=b;c d", "🚀")
        await java.call("close", name="rt")


@pytest.mark.timeout(150)
async def test_request_reply_between_java_and_python_both_ways(
    cluster_factory: Any, java: JavaDriver
) -> None:
    to_java, to_python = "JavaRpcToJava", "JavaRpcToPython"
    async with cluster_with_topics(cluster_factory, java, to_java, to_python) as cluster:
        ns = cluster.namesrv_addr
        # Our SDK asks, a Java consumer answers with MessageUtil.createReplyMessage through its producer.
        await java.call(
            "push",
            name="java-replier",
            namesrv=ns,
            group="cg-java-replier",
            topic=to_java,
            expr="*",
            fromWhere="FIRST_OFFSET",
            replyPrefix="java:",
        )
        async with Producer("pg-py-requester", namesrv_addr=ns) as requester:
            reply = await requester.request(Message(to_java, b"ping-1"), timeout_ms=20_000)
        assert reply.body == b"java:ping-1"
        assert reply.properties["MSG_TYPE"] == "reply" and reply.properties["CORRELATION_ID"]
        # Java's DefaultMQProducer#request asks, our consumer answers with Producer.reply.
        async with Producer("pg-py-replier", namesrv_addr=ns) as replier:

            async def answer(msgs: list[Any]) -> ConsumeResult:
                for m in msgs:
                    await replier.reply(m, b"py:" + m.body)
                return ConsumeResult.SUCCESS

            consumer = PushConsumer(
                "cg-py-replier",
                namesrv_addr=ns,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            )
            consumer.subscribe(to_python, "*")
            consumer.register_listener(answer)
            async with consumer:
                got = await java.call(
                    "request",
                    namesrv=ns,
                    group="pg-java-requester",
                    requestTimeoutMs=20_000,
                    message=spec(to_python, b"ping-2"),
                )
        assert "error" not in got, got
        assert unb64(got["body"]) == b"py:ping-2" and got["props"]["MSG_TYPE"] == "reply"


@pytest.mark.timeout(150)
async def test_java_client_over_tls_with_acl(cluster_factory: Any, java: JavaDriver, tmp_path: Path) -> None:
    """Java's client with useTLS and AclClientRPCHook against enforcing TLS + ACL daemons (Java's client trusts
    any server certificate in its default tls.test.mode)."""
    topic = "JavaTls"
    ca = make_test_ca(tmp_path / "pki")
    leaf = ca.issue("server")
    tls = {"tlsMode": "enforcing", "tlsServerCertPath": leaf.cert, "tlsServerKeyPath": leaf.key}
    acl = write_acl(tmp_path)
    secure = {
        **tls,
        "aclEnable": "true",
        "aclFilePath": str(acl),
        "accessKey": ACL_KEY[0],
        "secretKey": ACL_KEY[1],
    }
    cluster = await cluster_factory(
        broker_overrides={**secure, "tlsEnable": "true", "tlsClientTrustCertPath": ca.ca},
        namesrv_overrides=tls,
    )
    creds = {"accessKey": ACL_KEY[0], "secretKey": ACL_KEY[1]}
    try:
        ns = cluster.namesrv_addr
        async with Admin(
            namesrv_addr=ns, access_key=ACL_KEY[0], secret_key=ACL_KEY[1], use_tls=True, tls_ca_file=ca.ca
        ) as admin:
            await create_routed_topics(admin, (topic,), 2)
        msgs = [spec(topic, f"tls-{i}".encode(), tags="S") for i in range(6)]
        sent = await java.call(
            "send", namesrv=ns, group="pg-java-tls", mode="sync", messages=msgs, useTLS=True, **creds
        )
        assert [r.get("status") for r in sent] == ["SEND_OK"] * 6, sent
        await java.call(
            "push",
            name="tls",
            namesrv=ns,
            group="cg-java-tls",
            topic=topic,
            expr="*",
            fromWhere="FIRST_OFFSET",
            useTLS=True,
            **creds,
        )
        await java.wait(lambda: len(java.messages("tls")) == 6, 40, "the 6 messages over TLS")
        assert sorted(unb64(m["body"]) for m in java.messages("tls")) == sorted(
            f"tls-{i}".encode() for i in range(6)
        )
        # Without TLS the enforcing NameServer does not serve the Java client at all.
        plain = await java.call(
            "send",
            namesrv=ns,
            group="pg-java-plain",
            mode="sync",
            retries=0,
            timeoutMs=3000,
            messages=msgs[:1],
            **creds,
        )
        assert "error" in plain[0], plain
    except BaseException:
        print(f"---- Java driver stderr tail:\n{java.stderr_tail(120)}")
        raise
    finally:
        await java.call("closeAll")
