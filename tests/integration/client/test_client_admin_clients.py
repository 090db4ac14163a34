"""Admin over a group's live clients against real daemons: connections, a consumer's own report, a
message consumed on demand, broker settings, and the matching `rocketq admin` verbs (mqadmin's
producerConnection, consumerConnection, consumerStatus, consumeMessage directly, getBrokerConfig,
updateBrokerConfig, deleteSubGroup)."""

from __future__ import annotations

import asyncio
import json

import pytest

from rocketq.client import Admin, ConsumeResult, Message, MessageExt, Producer, PushConsumer
from rocketq.client.admin_cli import main as admin_main
from rocketq.client.config import ConsumeFromWhere
from rocketq.client.errors import MQBrokerError
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.testing.waiting import wait_for

TOPIC, PGROUP, CGROUP = "TopicConn", "pg-conn", "cg-conn"


@pytest.mark.timeout(90)
async def test_admin_sees_and_drives_live_clients(cluster, capsys) -> None:
    ns = cluster.namesrv_addr
    broker = cluster.brokers[0].addr
    bodies: list[bytes] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        bodies.extend(m.body for m in msgs)
        return ConsumeResult.SUCCESS

    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(TOPIC, read_queues=2, write_queues=2)
        consumer = PushConsumer(
            CGROUP, namesrv_addr=ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        )
        consumer.subscribe(TOPIC, "*")
        consumer.register_listener(listener)
        async with Producer(PGROUP, namesrv_addr=ns) as producer, consumer:
            sent = [await producer.send(Message(TOPIC, b"conn-%d" % i)) for i in range(3)]
            await wait_for(lambda: len(bodies) >= 3, timeout_s=30, what="the three messages consumed")

            producers = await admin.producer_connections(PGROUP, TOPIC)
            assert [c.client_id for c in producers.connection_set] == [producer.client_id]
            with pytest.raises(MQBrokerError) as refused:
                await admin.producer_connections("pg-nobody", TOPIC)
            assert refused.value.code == ResponseCode.SYSTEM_ERROR and "pg-nobody" in str(refused.value)

            members = await admin.consumer_connections(CGROUP)
            assert [c.client_id for c in members.connection_set] == [consumer.client_id]
            assert TOPIC in members.subscription_table

            info = await wait_for(
                lambda: _with_queues(admin, consumer.client_id),
                timeout_s=30,
                what="the consumer reporting its queues",
            )
            assert TOPIC in {sd.topic for sd in info.subscription_set}
            with pytest.raises(MQBrokerError) as offline:
                await admin.consumer_running_info(CGROUP, "10.0.0.9@nobody")
            assert "not online" in str(offline.value)

            # The broker loads the stored message and the consumer's listener takes it once more.
            result = await admin.consume_message_directly(CGROUP, consumer.client_id, sent[1].offset_msg_id)
            assert result.consume_result is not None and result.consume_result.name == "CR_SUCCESS", result
            assert bodies.count(b"conn-1") == 2

            settings = await admin.broker_config(broker)
            assert settings["brokerName"] == "broker-a"
            await admin.update_broker_config(broker, {"statsInterval": "30000"})
            assert (await admin.broker_config(broker))["statsInterval"] == "30000"

            loop = asyncio.get_running_loop()

            def run(*argv: str) -> tuple[int, str]:
                code = admin_main(["--namesrv-addr", ns, "--json", *argv])
                return code, capsys.readouterr().out

            code, out = await loop.run_in_executor(
                None, run, "producer-connection", "-g", PGROUP, "-t", TOPIC
            )
            assert code == 0 and json.loads(out)[0]["clientId"] == producer.client_id
            code, out = await loop.run_in_executor(None, run, "consumer-connection", "-g", CGROUP)
            assert code == 0 and json.loads(out)[0]["clientId"] == consumer.client_id
            code, out = await loop.run_in_executor(None, run, "consumer-status", "-g", CGROUP)
            assert code == 0 and {row["topic"] for row in json.loads(out)} == {TOPIC, "%RETRY%" + CGROUP}
            code, out = await loop.run_in_executor(
                None, run, "update-broker-config", "-b", broker, "-k", "statsInterval", "-v", "45000"
            )
            assert code == 0 and json.loads(out)[0]["value"] == "45000"
            code, out = await loop.run_in_executor(None, run, "get-broker-config", "-b", broker)
            assert code == 0 and {"key": "statsInterval", "value": "45000"} in json.loads(out)

        await admin.update_subscription_group("cg-doomed", retry_max_times=2)
        assert await admin.delete_subscription_group("cg-doomed") == [broker]
        code, out = await asyncio.get_running_loop().run_in_executor(
            None,
            lambda: (
                admin_main(["--namesrv-addr", ns, "delete-sub-group", "-g", "cg-doomed"]),
                capsys.readouterr().out,
            ),
        )
        assert code == 0 and "cg-doomed" in out


async def _with_queues(admin: Admin, client_id: str):  # the running info once rebalance gave it queues
    info = await admin.consumer_running_info(CGROUP, client_id)
    return info if info.mq_table else None
