"""mqadmin habits against real daemons: camelCase verbs with mqadmin's options, the operator verbs, --json."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

from rocketq.client import Admin, Message, MessageQueue, Producer
from rocketq.client.admin_cli import main as admin_main


async def test_mqadmin_verbs_against_a_cluster(cluster, capsys) -> None:
    ns = cluster.namesrv_addr
    broker = cluster.brokers[0].addr
    loop = asyncio.get_running_loop()

    async def run(*argv: str) -> tuple[int, str]:
        code = await loop.run_in_executor(None, admin_main, list(argv))
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    async def rows(*argv: str) -> list[dict]:
        code = await loop.run_in_executor(None, admin_main, [*argv, "--json"])
        captured = capsys.readouterr()
        assert code == 0, (argv, captured.err)
        return json.loads(captured.out)

    code, out = await run(
        "updateTopic", "-n", ns, "-t", "TopicMq", "-c", "DefaultCluster", "-r", "2", "-w", "2"
    )
    assert code == 0 and "TopicMq" in out
    async with Producer("pg-mq", namesrv_addr=ns) as producer:
        await producer.send(
            Message("TopicMq", b"\xff\xfebinary", tags="B"), queue=MessageQueue("TopicMq", "broker-a", 0)
        )
        for i in range(3):
            await producer.send(
                Message("TopicMq", f"text-{i}".encode(), tags="A", keys=[f"k{i}"]),
                queue=MessageQueue("TopicMq", "broker-a", 0),
            )

    [found] = await rows(
        "queryMsgByOffset", "-n", ns, "-t", "TopicMq", "-b", "broker-a", "-i", "0", "-o", "0"
    )
    assert found["bodyEncoding"] == "base64" and found["body"] == "//5iaW5hcnk="
    printed = await rows("printMsg", "-n", ns, "-t", "TopicMq", "-b", "0")
    assert [r["body"] for r in printed if r["bodyEncoding"] == "utf-8"] == ["text-0", "text-1", "text-2"]
    per_tag = await rows(
        "printMsgByQueue", "-n", ns, "-t", "TopicMq", "-a", "broker-a", "-i", "0", "-f", "true"
    )
    assert {r["tag"]: r["count"] for r in per_tag} == {"A": 3, "B": 1}
    cq = await rows("queryCq", "-n", ns, "-t", "TopicMq", "-q", "0", "-i", "1", "-c", "2", "-b", "broker-a")
    assert [r["queueOffset"] for r in cq] == [1, 2] and cq[0]["commitLogOffset"] < cq[1]["commitLogOffset"]
    code, out = await run("queryMsgByKey", "-n", ns, "-t", "TopicMq", "-k", "k1")
    assert code == 0 and "text-1" in out

    # groups: settings, progress of every group, clone, skip
    assert (await rows("updateSubGroup", "-n", ns, "-g", "cg-mq", "-r", "3"))[0]["retry_max_times"] == 3
    [cfg] = await rows("getConsumerConfig", "-n", ns, "-g", "cg-mq")
    assert cfg["retryMaxTimes"] == 3
    async with Admin(namesrv_addr=ns) as admin:
        for qid in (0, 1):  # the broker resets only a group holding offsets on every queue (Broker2Client)
            await admin.update_consumer_offset("cg-mq", MessageQueue("TopicMq", "broker-a", qid), 1 - qid)
    code, out = await run(
        "resetOffsetByTime", "-n", ns, "-g", "cg-mq", "-t", "TopicMq", "-s", "2000-01-01#00:00:00:000"
    )
    assert code == 0 and "directly" in out, out
    cloned = await rows("cloneGroupOffset", "-n", ns, "-s", "cg-mq", "-d", "cg-mq-copy", "-t", "TopicMq")
    assert {(r["queue"], r["offset"]) for r in cloned} == {(0, 0), (1, 0)}
    skipped = await rows("skipAccumulatedMessage", "-n", ns, "-g", "cg-mq-copy", "-t", "TopicMq")
    assert {(r["queue"], r["offset"]) for r in skipped} == {(0, 4), (1, 0)}
    stats = await rows("brokerConsumeStats", "-n", ns, "-b", broker)
    assert {(r["group"], r["queue"], r["diff"]) for r in stats if r["topic"] == "TopicMq"} >= {
        ("cg-mq", 0, 4),
        ("cg-mq-copy", 0, 0),
    }
    every = await rows("consumerProgress", "-n", ns)
    assert {r["group"]: r["diffTotal"] for r in every if r["group"].startswith("cg-mq")} == {
        "cg-mq": 4,
        "cg-mq-copy": 0,
    }
    all_stats = await rows("statsAll", "-n", ns, "-t", "TopicMq")
    assert {(r["group"], r["accumulation"]) for r in all_stats} == {("cg-mq", 4), ("cg-mq-copy", 0)}

    # brokers, name servers, topics
    assert (await rows("wipeWritePerm", "-n", ns, "-b", "broker-a"))[0]["wipedTopics"] >= 1
    route = await rows("topicRoute", "-n", ns, "-t", "TopicMq")
    assert route[0]["perm"] == 4
    assert (await rows("addWritePerm", "-n", ns, "-b", "broker-a"))[0]["addedTopics"] >= 1
    assert (await rows("topicRoute", "-n", ns, "-t", "TopicMq"))[0]["perm"] == 6
    assert (await rows("updateTopicPerm", "-n", ns, "-t", "TopicMq", "-p", "4", "-c", "DefaultCluster"))[0][
        "perm"
    ] == 4
    assert (await rows("topicClusterList", "-n", ns, "-t", "TopicMq")) == [{"cluster": "DefaultCluster"}]
    shares = await rows("allocateMQ", "-n", ns, "-t", "TopicMq", "-i", "c1,c2")
    assert [r["queues"] for r in shares] == ["broker-a:0", "broker-a:1"]
    [ha] = await rows("haStatus", "-n", ns)
    assert ha["role"] == "MASTER" and ha["addr"] == broker
    assert any(r["key"] == "listenPort" for r in await rows("getNamesrvConfig", "-n", ns))
    assert await rows(
        "updateKvConfig", "-n", ns, "-s", "ORDER_TOPIC_CONFIG", "-k", "TopicMq", "-v", "broker-a:2"
    )
    assert await rows("deleteKvConfig", "-n", ns, "-s", "ORDER_TOPIC_CONFIG", "-k", "TopicMq")
    assert any(
        r["key"] == "brokerName" for r in await rows("getBrokerConfig", "-n", ns, "-c", "DefaultCluster")
    )
    code, out = await run(
        "queryMsgByOffset", "-n", ns, "-t", "TopicMq", "-b", "broker-a", "-i", "0", "-o", "99"
    )
    assert code == 1 and "no message at offset 99" in out

    # `--json ... | head -1`: the pipe closes early; the command ends quietly
    env = {**os.environ, "NAMESRV_ADDR": ns}
    proc = await asyncio.create_subprocess_shell(
        f"{sys.executable} -m rocketq admin getBrokerConfig -c DefaultCluster --json | head -1",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    out_b, err_b = await asyncio.wait_for(proc.communicate(), 60)
    assert out_b.decode().strip() == "[" and b"Traceback" not in err_b and b"BrokenPipe" not in err_b, (
        err_b.decode()
    )
