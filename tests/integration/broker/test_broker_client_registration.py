"""Client registration on a real broker: heartbeats, the retry topic, NOTIFY_CONSUMER_IDS_CHANGED, locks."""

from __future__ import annotations

import asyncio
from typing import Any

from broker_client import SMALL_STORE, BrokerTestClient

from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies.consumer import (
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
)
from rocketq.remoting.protocol.bodies.heartbeat import (
    ConsumerData,
    HeartbeatData,
    ProducerData,
    SubscriptionData,
)
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.client import (
    GetConsumerListByGroupRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    UnregisterClientRequestHeader,
)
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.namesrv_client import NamesrvTestClient
from rocketq.testing.waiting import wait_for

GROUP = "cg_clients"


class NotifyRecorder:
    """Plays the client side of NOTIFY_CONSUMER_IDS_CHANGED (40)."""

    def __init__(self) -> None:
        self.groups: list[str] = []

    async def process_request(self, conn: Any, request: RemotingCommand) -> RemotingCommand | None:
        self.groups.append(
            NotifyConsumerIdsChangedRequestHeader.from_ext_fields(request.ext_fields).consumer_group
        )
        return None


def heartbeat(client_id: str) -> bytes:
    subs = [SubscriptionData(topic="Orders"), SubscriptionData(topic=f"%RETRY%{GROUP}")]
    return HeartbeatData(
        client_id=client_id,
        producer_data_set=[ProducerData("CLIENT_INNER_PRODUCER")],
        consumer_data_set=[ConsumerData(group_name=GROUP, subscription_data_set=subs)],
    ).encode()


async def consumer_ids(client: BrokerTestClient) -> list[str]:
    response = await client.call(
        RequestCode.GET_CONSUMER_LIST_BY_GROUP, GetConsumerListByGroupRequestHeader(GROUP)
    )
    if response.code != ResponseCode.SUCCESS:
        return []
    return sorted(GetConsumerListByGroupResponseBody.decode(response.body).consumer_id_list)


async def test_heartbeats_notify_the_group_and_create_its_retry_topic(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = await cluster_factory(broker_overrides=SMALL_STORE)
    addr = cluster.brokers[0].addr
    first, second = BrokerTestClient(addr), BrokerTestClient(addr)
    recorder = NotifyRecorder()
    first.remoting.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, recorder)
    try:
        answer = await first.call(RequestCode.HEART_BEAT, None, heartbeat("127.0.0.1@first"))
        assert answer.code == 0 and answer.version == 409  # clients read the broker's version from here
        assert await consumer_ids(first) == ["127.0.0.1@first"]
        # the retry topic was created and registered, so the consumer's route look-up finds it
        async with NamesrvTestClient(cluster.namesrv_addr) as ns:
            route = await wait_for(lambda: ns.route(f"%RETRY%{GROUP}"), what="the retry topic's route")
            assert route.queue_datas[0].read_queue_nums == 1
        await wait_for(
            lambda: GROUP in recorder.groups, what="the first notice"
        )  # joining notifies the group
        recorder.groups.clear()
        assert (await second.call(RequestCode.HEART_BEAT, None, heartbeat("127.0.0.1@second"))).code == 0
        await wait_for(lambda: recorder.groups == [GROUP], what="a notice for the second member")
        assert await consumer_ids(first) == ["127.0.0.1@first", "127.0.0.1@second"]
        recorder.groups.clear()
        await second.close()  # a closed connection leaves the group at once
        await wait_for(lambda: recorder.groups == [GROUP], what="a notice for the member that left")
        assert await consumer_ids(first) == ["127.0.0.1@first"]
        bye = UnregisterClientRequestHeader(client_id="127.0.0.1@first", consumer_group=GROUP)
        assert (await first.call(RequestCode.UNREGISTER_CLIENT, bye)).code == 0
        nobody = await first.call(
            RequestCode.GET_CONSUMER_LIST_BY_GROUP, GetConsumerListByGroupRequestHeader(GROUP)
        )
        assert nobody.code == ResponseCode.SYSTEM_ERROR and "no consumer for this group" in (
            nobody.remark or ""
        )
    finally:
        await first.close()
        await second.close()


async def test_orderly_locks(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_overrides=SMALL_STORE)
    mq = MessageQueue("Orders", "broker-a", 0)
    async with BrokerTestClient(cluster.brokers[0].addr) as client:

        async def lock(client_id: str) -> list[MessageQueue]:
            body = LockBatchRequestBody(consumer_group=GROUP, client_id=client_id, mq_set=[mq]).encode()
            response = await client.call(RequestCode.LOCK_BATCH_MQ, None, body)
            return LockBatchResponseBody.decode(response.body).lock_ok_mq_set

        assert await lock("c1") == [mq]
        assert await lock("c2") == []
        unlock = LockBatchRequestBody(consumer_group=GROUP, client_id="c1", mq_set=[mq]).encode()
        await client.call(RequestCode.UNLOCK_BATCH_MQ, None, unlock, oneway=True)
        assert await asyncio.wait_for(wait_for(lambda: _locked_by(lock, "c2"), what="c2's lock"), 10)


async def _locked_by(lock: Any, client_id: str) -> bool:
    return bool(await lock(client_id))
