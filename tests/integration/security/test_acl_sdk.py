"""Our SDK with credentials against an ACL cluster: every path works when signed (send, batch,
transaction with check-back, push / lite pull / simple consume, admin, the admin CLI), and a client
without credentials is refused with NO_PERMISSION."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rocketq.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeResult,
    LitePullConsumer,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SimpleConsumer,
    TransactionProducer,
)
from rocketq.client.admin_cli import main as admin_main
from rocketq.client.errors import SendFailedError
from rocketq.client.model import LocalTransactionState
from rocketq.remoting.errors import BrokerResponseError
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.waiting import wait_for

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
FAST_CHECKS = {"transactionTimeOut": 1000, "transactionCheckInterval": 300}


def creds(key: tuple[str, str]) -> dict[str, Any]:
    return {"access_key": key[0], "secret_key": key[1]}


@pytest.mark.timeout(120)
async def test_every_sdk_path_works_signed(
    cluster_factory: ClusterFactory, tmp_path: Path, sec: SimpleNamespace
) -> None:
    acl_file = sec.write_acl(tmp_path / "conf")
    cluster = await cluster_factory(
        broker_overrides={**sec.acl_overrides(acl_file), **FAST_CHECKS},
        namesrv_overrides=sec.acl_overrides(acl_file),
    )
    ns, user, topic = cluster.namesrv_addr, creds(sec.USER), "TopicAclSdk"
    async with Admin(namesrv_addr=ns, **creds(sec.ADMIN)) as admin:
        await admin.create_topic(topic, read_queues=2, write_queues=2)
        assert await admin.topic_status(topic)
    async with Admin(namesrv_addr=ns, instance_name="plain-admin") as plain_admin:
        with pytest.raises(BrokerResponseError) as refused:
            await plain_admin.create_topic("TopicNotAllowed", read_queues=1, write_queues=1)
        assert refused.value.code == ResponseCode.NO_PERMISSION
    async with Producer("pg-acl-sdk", namesrv_addr=ns, **user) as producer:
        await producer.send(Message(topic, b"one"))
        await producer.send_batch([Message(topic, b"batch-1"), Message(topic, b"batch-2")])
    async with Producer("pg-acl-none", namesrv_addr=ns, instance_name="unsigned") as unsigned:
        with pytest.raises(SendFailedError) as failed:
            await unsigned.send(Message(topic, b"never"))
        assert failed.value.code == ResponseCode.NO_PERMISSION
        assert "No accessKey is configured" in str(failed.value)
    # a transaction left UNKNOW is decided through the broker's check-back, over the signed connection
    asked: list[bytes] = []

    def checker(msg: MessageExt) -> LocalTransactionState:
        asked.append(msg.body)
        return LocalTransactionState.COMMIT_MESSAGE

    async with TransactionProducer(
        "pg-acl-tx", namesrv_addr=ns, checker=checker, heartbeat_broker_interval_ms=300, **user
    ) as tx:
        await tx.send_in_transaction(Message(topic, b"tx"), lambda _m, _a: LocalTransactionState.UNKNOW)
        await wait_for(lambda: asked == [b"tx"], timeout_s=30, what="the broker's check-back answered")
    expected = Counter({b"one": 1, b"batch-1": 1, b"batch-2": 1, b"tx": 1})
    # push
    seen: Counter[bytes] = Counter()

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        seen.update(m.body for m in msgs)
        return ConsumeResult.SUCCESS

    push = PushConsumer("cg-acl-push", namesrv_addr=ns, consume_from_where=FIRST, **user)
    push.subscribe(topic, "*")
    push.register_listener(listener)
    async with push:
        await wait_for(
            lambda: seen == expected, timeout_s=30, what=f"push consumer got {expected} (has {seen})"
        )
    # lite pull
    got: list[MessageExt] = []
    async with LitePullConsumer("cg-acl-lite", namesrv_addr=ns, consume_from_where=FIRST, **user) as lite:
        lite.subscribe(topic, "*")
        for _ in range(150):
            got.extend(await lite.poll(timeout_ms=200))
            if len(got) >= 4:
                break
    assert Counter(m.body for m in got) == expected
    # simple (POP)
    async with SimpleConsumer(
        "cg-acl-simple", namesrv_addr=ns, subscriptions={topic: "*"}, await_duration_ms=1000, **user
    ) as simple:
        popped: list[MessageExt] = []
        for _ in range(30):
            popped.extend(await simple.receive(16, invisible_duration_ms=20_000))
            if len(popped) >= 4:
                break
        for m in popped:
            await simple.ack(m)
    assert Counter(m.body for m in popped) == expected
    # the CLI, credentials from options and from the environment
    code = await asyncio.to_thread(admin_main, ["--namesrv-addr", ns, "--access-key", sec.ADMIN[0], "--secret-key", sec.ADMIN[1],
                                                "updateAclConfig", "-a", "cliAdded1", "-s", "cliSecret1", "-t", f"{topic}=PUB",
                                                "-c", "DefaultCluster"])  # fmt: skip
    assert code == 0
    async with Producer(
        "pg-acl-cli",
        namesrv_addr=ns,
        instance_name="cli-added",
        access_key="cliAdded1",
        secret_key="cliSecret1",
    ) as p:
        await p.send(Message(topic, b"by the account the CLI made"))
    async with Admin(namesrv_addr=ns, instance_name="acl-admin", **creds(sec.ADMIN)) as admin:
        [config] = await admin.get_acl_config(cluster="DefaultCluster")
        added = [a for a in config["plainAccessConfigs"] if a["accessKey"] == "cliAdded1"]
        assert added and "secretKey" not in added[0] and added[0]["topicPerms"] == [f"{topic}=PUB"]
        [version] = await admin.cluster_acl_config_version(cluster="DefaultCluster")
        assert version["version"]["counter"] == 1  # one change written by updateAclConfig
        await admin.delete_acl_config("cliAdded1", cluster="DefaultCluster")
    code = await asyncio.to_thread(
        admin_main, ["--namesrv-addr", ns, "--json", "clusterAclConfigVersion", "-c", "DefaultCluster"]
    )
    assert code == 1, "without credentials the CLI is refused"
    code = await asyncio.to_thread(
        admin_main,
        ["--namesrv-addr", ns, "--access-key", sec.ADMIN[0], "--secret-key", sec.ADMIN[1],
         "getAccessConfigSubCommand", "-c", "DefaultCluster"],
    )  # fmt: skip
    assert code == 0
