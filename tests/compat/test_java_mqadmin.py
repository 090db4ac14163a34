"""Apache's mqadmin 4.9.8 (org.apache.rocketmq.tools.command.MQAdminStartup, rocketmq-tools) against our daemons.

One `rocketq namesrv` and one `rocketq broker` serve the whole module: a topic with messages sent by Apache's
Java producer, a Java push consumer group online (and its offsets committed), a producer group registered. Each
test runs one verb the way a user types it (`mqadmin <verb> -n <namesrv> ...`, in the Driver JVM: see
java_support.py) and checks what it prints. A verb whose command fails prints a stack trace on stderr, which
fails its test with the trace. Verbs that change things use their own topics and groups, and undo what they did.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from interop import python_receive
from java_support import JavaDriver, b64, driver_fixture, skip_or_fail_when_missing

from rocketq.client import Admin
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.waiting import wait_for

pytestmark = [pytest.mark.asyncio(loop_scope="module")]
if (_skip := skip_or_fail_when_missing()) is not None:
    pytestmark.append(_skip)

CLUSTER = "DefaultCluster"
TOPIC = "AdminTopic"
GROUP = "cg-mqadmin"
PRODUCER_GROUP = "pg-mqadmin-tx"
SENT = 8


@dataclass
class World:
    cluster: LocalCluster
    java: JavaDriver
    sent: list[dict[str, Any]]
    client_id: str

    @property
    def ns(self) -> str:
        return self.cluster.namesrv_addr

    @property
    def broker(self) -> str:
        return self.cluster.brokers[0].addr

    async def mqadmin(self, verb: str, *args: str) -> str:
        return await self.java.mqadmin(verb, "-n", self.ns, *args)


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaDriver]:
    yield from driver_fixture(tmp_path_factory)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(java: JavaDriver, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    cluster = LocalCluster(
        tmp_path_factory.mktemp("mqadmin-cluster"), broker_overrides={"enablePropertyFilter": "true"}
    )
    await cluster.start()
    try:
        ns = cluster.namesrv_addr
        async with Admin(namesrv_addr=ns) as admin:
            await admin.create_topic(TOPIC, cluster=CLUSTER, read_queues=4, write_queues=4)
            await wait_for(lambda: admin.topic_route(TOPIC), timeout_s=15, what=f"route of {TOPIC}")
        sent = await java.call(
            "send",
            namesrv=ns,
            group="pg-mqadmin",
            mode="sync",
            messages=[
                {
                    "topic": TOPIC,
                    "body": b64(f"admin-{i}".encode()),
                    "tags": "TagA",
                    "keys": [f"key-{i}"],
                    "props": {"n": str(i)},
                }
                for i in range(SENT)
            ],
        )
        client_id = await java.call(
            "push", name="online", namesrv=ns, group=GROUP, topic=TOPIC, expr="*", fromWhere="FIRST_OFFSET"
        )
        await java.wait(
            lambda: len(java.messages("online")) == SENT, 30, "the online group consumed everything"
        )
        # A producer group stays registered (its heartbeat) for producerConnection.
        await java.call("transaction", name="tx", namesrv=ns, group=PRODUCER_GROUP, topic=TOPIC, messages=[])
        state = World(cluster, java, sent, client_id)

        async def committed() -> bool:
            out = await state.mqadmin("consumerProgress", "-g", GROUP)
            return "Diff Total: 0" in out

        await wait_for(committed, timeout_s=30, interval_s=0.5, what="the online group's offsets committed")
        yield state
    except BaseException:
        print(cluster.log_tails())
        print(f"---- Java driver stderr tail:\n{java.stderr_tail(120)}")
        raise
    finally:
        await cluster.close()


def rows(out: str) -> list[list[str]]:
    """The table lines of a verb's output (after its '#' header), split on runs of spaces."""
    return [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]


# -- cluster, broker, namesrv -----------------------------------------------------------------------------


async def test_cluster_list(world: World) -> None:
    out = await world.mqadmin("clusterList")
    [row] = rows(out)
    assert row[:5] == [CLUSTER, "broker-a", "0", world.broker, "V4_9_8"], out
    assert "#InTPS(LOAD)" in out and "null" not in out


async def test_broker_status(world: World) -> None:
    out = await world.mqadmin("brokerStatus", "-b", world.broker)
    table = dict(re.findall(r"^(\w+)\s*: (.*)$", out, re.M))
    assert table["brokerVersionDesc"] == "V4_9_8" and table["brokerVersion"] == "409"
    assert int(table["msgPutTotalTodayNow"]) >= SENT and int(table["msgGetTotalTodayNow"]) >= SENT
    assert {"putTps", "getTransferedTps", "commitLogMaxOffset", "earliestMessageTimeStamp"} <= set(table)


async def test_get_and_update_broker_config(world: World) -> None:
    out = await world.mqadmin("getBrokerConfig", "-b", world.broker)
    config = dict(re.findall(r"^(\w+)\s*=\s*(.*)$", out, re.M))
    assert config["brokerName"] == "broker-a" and config["brokerClusterName"] == CLUSTER
    assert config["enablePropertyFilter"] == "true"
    out = await world.mqadmin(
        "updateBrokerConfig", "-b", world.broker, "-k", "maxMessageSize", "-v", "2000000"
    )
    assert f"update broker config success, {world.broker}" in out
    out = await world.mqadmin("getBrokerConfig", "-b", world.broker)
    assert re.search(r"^maxMessageSize\s*=\s*2000000$", out, re.M), out
    await world.mqadmin("updateBrokerConfig", "-b", world.broker, "-k", "maxMessageSize", "-v", "4194304")


async def test_get_namesrv_config(world: World) -> None:
    out = await world.mqadmin("getNamesrvConfig")
    assert f"============{world.ns}============" in out
    config = dict(re.findall(r"^(\w+)\s*=\s*(.*)$", out, re.M))
    assert "kvConfigPath" in config and "orderMessageEnable" in config


async def test_update_and_delete_kv_config(world: World) -> None:
    out = await world.mqadmin(
        "updateKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "KvTopic", "-v", "broker-a:4"
    )
    assert "create or update kv config to namespace success." in out
    out = await world.mqadmin("topicRoute", "-t", TOPIC)  # unrelated topic: no order conf
    assert "orderTopicConf" not in out
    out = await world.mqadmin("deleteKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "KvTopic")
    assert "delete kv config from namespace success." in out


async def test_wipe_and_add_write_perm(world: World) -> None:
    out = await world.mqadmin("wipeWritePerm", "-b", "broker-a")
    assert re.search(
        rf"wipe write perm of broker\[broker-a\] in name server\[{re.escape(world.ns)}\] OK, \d+", out
    ), out
    route = await world.mqadmin("topicRoute", "-t", TOPIC)
    assert '"perm":4' in route, route  # read only now
    out = await world.mqadmin("addWritePerm", "-b", "broker-a")
    assert re.search(r"add write perm of broker\[broker-a\] in name server\[.*\] OK, \d+", out), out
    assert '"perm":6' in await world.mqadmin("topicRoute", "-t", TOPIC)


# -- topics ------------------------------------------------------------------------------------------------


async def test_topic_list_route_and_status(world: World) -> None:
    topics = (await world.mqadmin("topicList")).split()
    assert TOPIC in topics and f"%RETRY%{GROUP}" in topics
    route = await world.mqadmin("topicRoute", "-t", TOPIC)
    assert '"brokerName":"broker-a"' in route and '"readQueueNums":4' in route and world.broker in route
    status = rows(await world.mqadmin("topicStatus", "-t", TOPIC))
    assert [r[1] for r in status] == ["0", "1", "2", "3"]
    assert sum(int(r[3]) for r in status) == SENT and {r[2] for r in status} == {"0"}


async def test_update_and_delete_topic(world: World) -> None:
    out = await world.mqadmin(
        "updateTopic", "-c", CLUSTER, "-t", "MadeByMqadmin", "-r", "3", "-w", "2", "-o", "false"
    )
    assert "create topic to" in out and "readQueueNums=3, writeQueueNums=2, perm=RW-" in out
    async with Admin(namesrv_addr=world.ns) as admin:
        route = await wait_for(
            lambda: admin.topic_route("MadeByMqadmin"), timeout_s=10, what="the new topic's route"
        )
        assert (route.queue_datas[0].read_queue_nums, route.queue_datas[0].write_queue_nums) == (3, 2)
    out = await world.mqadmin("deleteTopic", "-c", CLUSTER, "-t", "MadeByMqadmin")
    assert "delete topic [MadeByMqadmin] from cluster [DefaultCluster] success." in out
    assert "delete topic [MadeByMqadmin] from NameServer success." in out
    assert "MadeByMqadmin" not in (await world.mqadmin("topicList")).split()


# -- groups and connections ----------------------------------------------------------------------------------


async def test_update_and_delete_sub_group(world: World) -> None:
    out = await world.mqadmin("updateSubGroup", "-c", CLUSTER, "-g", "made-by-mqadmin", "-r", "5")
    assert (
        "create subscription group to" in out
        and "groupName=made-by-mqadmin" in out
        and "retryMaxTimes=5" in out
    )
    out = await world.mqadmin("deleteSubGroup", "-c", CLUSTER, "-g", "made-by-mqadmin")
    assert (
        f"delete subscription group [made-by-mqadmin] from broker [{world.broker}] in cluster [{CLUSTER}] success."
        in out
    )


async def test_consumer_progress_of_every_group_and_of_one(world: World) -> None:
    everyone = rows(await world.mqadmin("consumerProgress"))
    [mine] = [r for r in everyone if r[0] == GROUP]
    assert mine[1:5] == ["1", "V4_9_8", "PUSH", "CLUSTERING"] and mine[-1] == "0", mine
    out = await world.mqadmin("consumerProgress", "-g", GROUP)
    table = [r for r in rows(out) if r and r[0] == TOPIC]
    assert len(table) == 4 and all(r[3] == r[4] and r[5] == "0" for r in table), out
    assert sum(int(r[4]) for r in table) == SENT and "Diff Total: 0" in out


async def test_consumer_connection_and_status(world: World) -> None:
    out = await world.mqadmin("consumerConnection", "-g", GROUP)
    [client] = [r for r in rows(out) if r and r[0] == world.client_id]
    assert client[2:] == ["JAVA", "V4_9_8"], out
    assert "ConsumeType: CONSUME_PASSIVELY" in out and "MessageModel: CLUSTERING" in out
    out = await world.mqadmin("consumerStatus", "-g", GROUP)
    assert (
        world.client_id in out
        and "Same subscription in the same group of consumer" in out
        and "Rebalance OK" in out
    )
    # one client's running info, asked through our broker (GET_CONSUMER_RUNNING_INFO to the Java consumer)
    out = await world.mqadmin("consumerStatus", "-g", GROUP, "-i", world.client_id)
    assert re.search(r"^PROP_CONSUME_TYPE\s*: CONSUME_PASSIVELY$", out, re.M) and TOPIC in out


async def test_producer_connection(world: World) -> None:
    async def listed() -> str | None:
        out = await world.mqadmin("producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC)
        return out if "JAVA" in out else None

    out = await wait_for(listed, timeout_s=15, interval_s=0.5, what="the producer group's heartbeat")
    assert re.search(r"^0001\s+\S+@pg-mqadmin-tx-\d+\s+127\.0\.0\.1:\d+\s+JAVA\s+V4_9_8$", out, re.M), out


async def test_clone_group_offset(world: World) -> None:
    out = await world.mqadmin("cloneGroupOffset", "-s", GROUP, "-d", "cloned-group", "-t", TOPIC)
    assert f"clone group offset success. srcGroup[{GROUP}], destGroup=[cloned-group], topic[{TOPIC}]" in out
    async with Admin(namesrv_addr=world.ns) as admin:
        progress = await admin.consumer_progress("cloned-group", TOPIC)
    assert sum(p.consumer_offset for p in progress) == SENT


async def test_broker_consume_stats(world: World) -> None:
    out = await world.mqadmin("brokerConsumeStats", "-b", world.broker)
    mine = [r for r in rows(out) if r and r[0] == TOPIC and r[1] == GROUP]
    assert len(mine) == 4 and all(r[4] == r[5] for r in mine), out
    assert sum(int(r[5]) for r in mine) == SENT
    assert re.search(r"^Diff Total: \d+$", out, re.M)


async def test_stats_all(world: World) -> None:
    out = await world.mqadmin("statsAll", "-t", TOPIC)
    [row] = [r for r in rows(out) if r and r[0] == TOPIC and r[1] == GROUP]
    # accumulation (GET_CONSUME_STATS) 0: the group is caught up; InTPS, OutTPS, InMsg24Hour, OutMsg24Hour
    assert row[2] == "0" and len(row) == 7, out


# -- messages ------------------------------------------------------------------------------------------------


def fields(out: str) -> dict[str, str]:
    return dict(re.findall(r"^([A-Za-z][A-Za-z ]*?):\s+(.*)$", out, re.M))


async def test_query_msg_by_id_and_unique_key(world: World) -> None:
    first = world.sent[0]
    out = await world.mqadmin("queryMsgById", "-i", first["offsetMsgId"])
    got = fields(out)
    assert got["OffsetID"] == first["offsetMsgId"] and got["Topic"] == TOPIC and got["Keys"] == "[key-0]"
    assert got["Queue ID"] == str(first["queueId"]) and got["Queue Offset"] == str(first["queueOffset"])
    assert f"UNIQ_KEY={first['msgId']}" in got["Properties"] and "n=0" in got["Properties"]
    assert "MessageTrack [consumerGroup=cg-mqadmin, trackType=CONSUMED" in out, out
    body_path = Path(got["Message Body Path"])
    assert await asyncio.to_thread(body_path.read_bytes) == b"admin-0"  # mqadmin writes the body to a file
    out = await world.mqadmin("queryMsgByUniqueKey", "-t", TOPIC, "-i", first["msgId"])
    assert fields(out)["Keys"] == "[key-0]"


async def test_query_msg_by_key_and_by_offset(world: World) -> None:
    third = world.sent[3]
    out = await world.mqadmin("queryMsgByKey", "-t", TOPIC, "-k", "key-3")
    [row] = rows(out)
    assert row == [third["msgId"], str(third["queueId"]), str(third["queueOffset"])], out
    out = await world.mqadmin(
        "queryMsgByOffset",
        "-t",
        TOPIC,
        "-b",
        "broker-a",
        "-i",
        str(third["queueId"]),
        "-o",
        str(third["queueOffset"]),
    )
    got = fields(out)
    assert got["Keys"] == "[key-3]" and got["OffsetID"] == third["offsetMsgId"]


async def test_print_msg(world: World) -> None:
    out = await world.mqadmin("printMsg", "-t", TOPIC, "-c", "UTF-8")
    printed = re.findall(r"BODY: (admin-\d+)", out)
    assert sorted(printed) == sorted(f"admin-{i}" for i in range(SENT)), out
    assert len(re.findall(r"^minOffset=0, maxOffset=\d+, MessageQueue \[topic=AdminTopic", out, re.M)) == 4


async def test_send_message_and_consume_message(world: World) -> None:
    out = await world.mqadmin(
        "sendMessage", "-t", "MqadminSend", "-p", "sent by mqadmin", "-k", "mk", "-c", "TagM"
    )
    [row] = rows(out)
    assert row[0] == "broker-a" and row[2] == "SEND_OK", out  # the topic is auto-created through TBW102
    [got] = await python_receive(world.ns, "cg-py-mqadmin-send", "MqadminSend", 1)
    assert (got.body, got.tags, got.keys, got.properties["UNIQ_KEY"]) == (
        b"sent by mqadmin",
        "TagM",
        ["mk"],
        row[3],
    )
    deadline = time.monotonic() + 20
    out = ""
    while "sent by mqadmin" not in out and time.monotonic() < deadline:
        out = await world.mqadmin("consumeMessage", "-t", "MqadminSend", "-c", "5")
    assert "Consume ok" in out and "BODY: sent by mqadmin" in out, out


# Last in the module: they move the online group's offsets, which the tests above read.
async def test_reset_offset_by_time_of_an_online_group(world: World) -> None:
    before = len(world.java.messages("online"))
    out = await world.mqadmin("resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0")
    assert "rollback consumer offset by specified" in out
    await world.java.wait(lambda: len(world.java.messages("online")) >= before + SENT, 30, "everything again")


async def test_skip_accumulated_message(world: World) -> None:
    out = await world.mqadmin("skipAccumulatedMessage", "-g", GROUP, "-t", TOPIC)
    assert "broker-a" in out
