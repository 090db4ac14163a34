"""LitePullConsumer, Admin, the `rocketq admin` CLI and the blocking facade against real daemons."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading

import pytest

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    LitePullConsumer,
    MessageQueue,
    Producer,
    blocking,
)
from rocketq.client.admin_cli import main as admin_main
from rocketq.client.errors import MQBrokerError, MQClientError
from rocketq.testing.waiting import wait_for

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


async def poll_until(lite: LitePullConsumer, n: int, rounds: int = 100) -> list:
    out: list = []
    for _ in range(rounds):
        out.extend(await lite.poll(timeout_ms=200))
        if len(out) >= n:
            break
    return out


async def test_lite_pull_subscribe_poll_commit_resume(cluster, h) -> None:
    ns, topic = cluster.namesrv_addr, "TopicLite"
    async with Producer("pg-lite", namesrv_addr=ns) as producer:
        first = [f"l{i}".encode() for i in range(60)]
        await h.send_all(producer, topic, first)
        async with LitePullConsumer(
            "cg-lite", namesrv_addr=ns, consume_from_where=FIRST, auto_commit=False
        ) as lite:
            lite.subscribe(topic, "*")
            await wait_for(lambda: len(lite.assignment()) == 4, timeout_s=15, what="four queues")
            got = await poll_until(lite, 60)
            assert sorted(m.body for m in got) == sorted(first)
            assert await lite.poll(timeout_ms=100) == []
            await lite.commit()
            queue = got[0]
            mq = MessageQueue(queue.topic, queue.broker_name, queue.queue_id)
            in_queue = sorted(m.queue_offset for m in got if m.queue_id == mq.queue_id)
            assert await lite.committed(mq) == in_queue[-1] + 1
            await lite.seek(mq, 0)
            again = await poll_until(lite, len(in_queue))
            assert sorted(m.queue_offset for m in again) == in_queue, "a seek replays the queue"
            with pytest.raises(MQClientError, match="outside"):
                await lite.seek(mq, 10_000)
            await lite.commit()
        second = [f"m{i}".encode() for i in range(20)]
        await h.send_all(producer, topic, second)
        async with LitePullConsumer("cg-lite", namesrv_addr=ns, consume_from_where=FIRST) as lite:
            lite.subscribe(topic, "*")
            got = await poll_until(lite, 20)
            assert sorted(m.body for m in got) == sorted(second), "resumed from the committed offsets"


async def test_lite_pull_assign_and_auto_commit(cluster, h) -> None:
    ns, topic = cluster.namesrv_addr, "TopicAssign"
    async with Producer("pg-assign", namesrv_addr=ns) as producer:
        results = await h.send_all(producer, topic, [f"a{i}".encode() for i in range(40)])
    mq = results[0].queue
    mine = [r for r in results if r.queue == mq]
    async with LitePullConsumer(
        "cg-assign", namesrv_addr=ns, consume_from_where=FIRST, auto_commit_interval_ms=50
    ) as lite:
        lite.assign([mq])
        got = await poll_until(lite, len(mine))
        assert {m.queue_id for m in got} == {mq.queue_id}
        assert len(got) == len(mine)
        await asyncio.sleep(0.06)
        await lite.poll(timeout_ms=10)  # the auto-commit happens inside poll
        await wait_for(lambda: lite.committed(mq), timeout_s=5, what="auto-committed offset")
        assert await lite.committed(mq) == mine[-1].queue_offset + 1


async def test_admin_topics_groups_queries_and_reset(cluster, h) -> None:
    ns, topic, group = cluster.namesrv_addr, "TopicAdmin", "cg-admin"
    async with Admin(namesrv_addr=ns) as admin:
        assert "broker-a" in (await admin.cluster_info()).broker_addr_table
        assert await admin.create_topic(topic, read_queues=2, write_queues=2)
        await wait_for(lambda: _has_topic(admin, topic), timeout_s=10, what="topic in the topic list")
        route = await admin.topic_route(topic)
        assert route.queue_datas[0].write_queue_nums == 2
        await admin.update_subscription_group(group, retry_max_times=3)
        async with Producer("pg-admin", namesrv_addr=ns) as producer:
            sent = await h.send_all(producer, topic, [f"q{i}".encode() for i in range(10)], keys=["order-7"])
        status = await admin.topic_status(topic)
        assert sum(o.max_offset for o in status.values()) == 10
        found = await admin.query_message_by_id(sent[3].offset_msg_id)
        assert found.body == b"q3"
        by_key = await wait_for(
            lambda: admin.query_message_by_key(topic, "order-7"), timeout_s=10, what="index"
        )
        assert {m.body for m in by_key} <= {f"q{i}".encode() for i in range(10)} and by_key
        by_uniq = await admin.query_message_by_unique_key(topic, sent[5].msg_id)
        assert [m.body for m in by_uniq] == [b"q5"]
        with pytest.raises(MQBrokerError, match="not exist"):  # the group never consumed the topic
            await admin.reset_offset_by_time(group, topic, 0)
        for qid in range(2):
            await admin.update_consumer_offset(group, MessageQueue(topic, "broker-a", qid), 5)
        offsets = await admin.reset_offset_by_time(group, topic, 0)
        assert dict(offsets) == {MessageQueue(topic, "broker-a", i): 0 for i in range(2)}
        assert not offsets.live, "no consumer online: the offsets were written directly"
        progress = await admin.consumer_progress(group, topic)
        assert {p.queue.queue_id for p in progress} <= {0, 1}
        assert await admin.broker_status(cluster.brokers[0].addr), "the broker reports runtime figures"
        await admin.delete_topic(topic)
        assert topic not in await admin.topic_list()


async def _has_topic(admin: Admin, topic: str) -> bool:
    return topic in await admin.topic_list()


async def test_admin_cli_verbs(cluster, capsys) -> None:
    ns = cluster.namesrv_addr

    def run(*argv: str) -> tuple[int, str]:
        code = admin_main(["--namesrv-addr", ns, *argv])
        return code, capsys.readouterr().out

    loop = asyncio.get_running_loop()
    code, out = await loop.run_in_executor(None, run, "update-topic", "-t", "TopicCli", "-r", "2", "-w", "2")
    assert code == 0 and "TopicCli" in out
    code, out = await loop.run_in_executor(
        None, run, "send-message", "-t", "TopicCli", "-p", "hello-cli", "--tags", "T1"
    )
    assert code == 0 and "SEND_OK" in out
    code, out = await loop.run_in_executor(
        None, run, "--json", "consume-message", "-t", "TopicCli", "-c", "1"
    )
    assert code == 0 and json.loads(out)[0]["body"] == "hello-cli"
    code, out = await loop.run_in_executor(None, run, "--json", "topic-route", "-t", "TopicCli")
    assert code == 0 and json.loads(out)[0]["writeQueues"] == 2
    for verb in (
        ["cluster-list"],
        ["topic-list"],
        ["topic-status", "-t", "TopicCli"],
        ["broker-status", "-b", cluster.brokers[0].addr],
    ):
        code, out = await loop.run_in_executor(None, run, *verb)
        assert code == 0, verb
    code, out = await loop.run_in_executor(
        None, run, "--json", "query-msg-by-unique-key", "-t", "TopicCli", "-i", "nope"
    )
    assert code == 0 and json.loads(out) == []
    sent = json.loads(
        (
            await loop.run_in_executor(
                None, run, "--json", "send-message", "-t", "TopicCli", "-p", "x", "--keys", "K9"
            )
        )[1]
    )
    code, out = await loop.run_in_executor(
        None, run, "--json", "query-msg-by-id", "-i", sent[0]["offsetMsgId"]
    )
    assert code == 0 and json.loads(out)[0]["body"] == "x"
    code, out = await loop.run_in_executor(
        None, run, "--json", "query-msg-by-unique-key", "-t", "TopicCli", "-i", sent[0]["msgId"]
    )
    assert code == 0 and json.loads(out)[0]["keys"] == "K9"
    for verb in (
        ["query-msg-by-key", "-t", "TopicCli", "-k", "K9"],
        ["update-sub-group", "-g", "cg-cli", "--retry-max-times", "5", "--consume-broadcast-enable", "false"],
        ["consumer-progress", "-g", "cg-cli"],
        ["delete-topic", "-t", "TopicCli", "-c", "DefaultCluster"],
    ):
        code, out = await loop.run_in_executor(None, run, *verb)
        assert code == 0, (verb, out)
    code, out = await loop.run_in_executor(None, run, "topic-route", "-t", "NoSuchTopicCli")
    assert code == 1


async def test_bench_cli_runs(cluster) -> None:
    from rocketq.client.bench import main as bench_main

    ns = cluster.namesrv_addr
    loop = asyncio.get_running_loop()
    for argv in (
        ["produce", "--mode", "sync", "--count", "50"],
        ["produce", "--mode", "pipelined", "--count", "300", "--inflight", "32"],
        ["produce", "--mode", "batch", "--count", "300", "--batch", "50", "--inflight", "2"],
        ["consume", "--count", "600", "--duration-s", "20"],
        ["latency", "--rate", "200", "--duration-s", "1"],
    ):
        code = await loop.run_in_executor(
            None, bench_main, [*argv, "--namesrv-addr", ns, "--topic", "TopicBench", "--quiet"]
        )
        assert code == 0, argv


def test_bench_local_starts_and_stops_its_own_cluster() -> None:
    # As a user runs it: the console command, which starts `rocketq cluster up` itself and stops it after.
    argv = [
        sys.executable,
        "-m",
        "rocketq",
        "bench",
        "produce",
        "--local",
        "--mode",
        "sync",
        "--count",
        "20",
        "--topic",
        "TopicBenchLocal",
        "--json",
        "--quiet",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["command"] == "produce"
    assert summary["messages"] == 20


def test_admin_cli_usage_errors(capsys) -> None:
    assert admin_main(["no-such-verb"]) == 2
    assert admin_main(["--namesrv-addr", "127.0.0.1:1", "update-topic"]) == 2


async def test_blocking_facade_basic_flow(cluster) -> None:
    ns = cluster.namesrv_addr

    def script() -> list[bytes]:
        got: list[bytes] = []
        done = threading.Event()

        def listener(msgs):
            got.extend(m.body for m in msgs)
            if len(got) >= 30:
                done.set()

        with blocking.Producer("pg-blocking", namesrv_addr=ns) as producer:
            results = [producer.send(blocking.Message("TopicBlocking", f"x{i}".encode())) for i in range(20)]
            assert all(r.status is blocking.SendStatus.SEND_OK for r in results)
            futures = [
                producer.send_async(blocking.Message("TopicBlocking", f"y{i}".encode())) for i in range(10)
            ]
            assert all(f.result(timeout=10).status is blocking.SendStatus.SEND_OK for f in futures)
        consumer = blocking.PushConsumer("cg-blocking", namesrv_addr=ns, consume_from_where=FIRST)
        consumer.subscribe("TopicBlocking", "*")
        consumer.register_listener(listener)
        with consumer:
            assert done.wait(timeout=20)
        with blocking.Admin(namesrv_addr=ns) as admin:
            assert "TopicBlocking" in admin.topic_list()
        return got

    got = await asyncio.get_running_loop().run_in_executor(None, script)
    assert len(set(got)) == 30
