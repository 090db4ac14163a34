"""SQL92 in the broker's processors: heartbeat registration, CHECK_CLIENT_CONFIG, PULL with either
subscription source, parked pulls keeping their filter, and enablePropertyFilter (also changed live)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from transaction_fakes import FakeConnection, make_context, open_store

from rocketq.broker.long_polling import PullRequestHoldService
from rocketq.broker.processors.client_manage import ClientManageProcessor
from rocketq.broker.processors.pull import PullMessageProcessor
from rocketq.common.clock import ManualClock
from rocketq.common.constants import PullSysFlag
from rocketq.common.record.codec import decode_records
from rocketq.remoting.protocol.bodies.heartbeat import (
    CheckClientRequestBody,
    ConsumerData,
    HeartbeatData,
    SubscriptionData,
)
from rocketq.remoting.protocol.bodies.register import TopicConfig
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.client import UnregisterClientRequestHeader
from rocketq.remoting.protocol.headers.pull import PullMessageRequestHeader
from rocketq.store.message import BrokerMessage
from rocketq.store.message_store import MessageStore

TOPIC, GROUP = "TopicSql", "cg_sql"
SUB, SUSPEND = PullSysFlag.FLAG_SUBSCRIPTION, PullSysFlag.FLAG_SUSPEND
GOOD, BAD = "price > 100 AND region = 'eu'", "price > > 100"


class Rig:
    def __init__(self, store: MessageStore, clock: ManualClock, **cfg: Any) -> None:
        self.store = store
        self.ctx = make_context(
            store, clock, enablePropertyFilter=cfg.pop("enablePropertyFilter", True), **cfg
        )
        self.ctx.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 1, 1, 6))
        self.client = ClientManageProcessor(self.ctx)
        self.pull = PullMessageProcessor(self.ctx)
        self.hold = PullRequestHoldService(store.get_max_offset_in_queue, self.pull.replay, clock)
        self.ctx.pull_hold_service = self.hold
        store.add_arrival_listener(self.hold.on_message_arrival)
        self.conn = FakeConnection()

    async def heartbeat(self, expression: str, version: int = 1) -> RemotingCommand | None:
        sub = SubscriptionData(
            topic=TOPIC, sub_string=expression, sub_version=version, expression_type="SQL92"
        )
        data = HeartbeatData(
            client_id="c1", consumer_data_set=[ConsumerData(group_name=GROUP, subscription_data_set=[sub])]
        )
        return await self.client.process_request(
            self.conn, RemotingCommand.request(RequestCode.HEART_BEAT, None, data.encode())
        )

    async def check_config(self, expression: str) -> RemotingCommand | None:
        body = CheckClientRequestBody(
            "c1", GROUP, SubscriptionData(topic=TOPIC, sub_string=expression, expression_type="SQL92")
        )
        return await self.client.process_request(
            self.conn, RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, None, body.encode())
        )

    async def pull_request(
        self, offset: int = 0, sys_flag: int = 0, expression: str | None = None, version: int = 1
    ) -> RemotingCommand | None:
        h = PullMessageRequestHeader(
            consumer_group=GROUP, topic=TOPIC, queue_id=0, queue_offset=offset, max_msg_nums=32, sys_flag=sys_flag,
            commit_offset=0, suspend_timeout_millis=15_000, sub_version=version, subscription=expression,
            expression_type="SQL92",
        )  # fmt: skip
        return await self.pull.process_request(
            self.conn, RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext_fields())
        )

    async def put(self, n: int, price: int, region: str = "eu") -> None:
        props = {"price": str(price), "region": region, "n": str(n)}
        result = await self.store.put_message(BrokerMessage(TOPIC, 0, b"m%d" % n, properties=props))
        assert result.is_ok


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    clock = ManualClock()
    store = open_store(tmp_path / "store", clock)
    yield Rig(store, clock)
    store.close()


def numbers(resp: RemotingCommand | None) -> list[int]:
    assert resp is not None and resp.code == ResponseCode.SUCCESS, resp
    return [int(m.properties["n"]) for m in decode_records(resp.body)]


async def test_heartbeat_expression_filters_pulls(rig: Rig) -> None:
    resp = await rig.heartbeat(GOOD)
    assert resp is not None and resp.code == ResponseCode.SUCCESS
    for n, (price, region) in enumerate([(50, "eu"), (150, "eu"), (150, "us"), (300, "eu")]):
        await rig.put(n, price, region)
    assert numbers(await rig.pull_request()) == [1, 3]


async def test_pull_with_its_own_expression(rig: Rig) -> None:
    for n in range(6):
        await rig.put(n, n * 50)
    assert numbers(await rig.pull_request(sys_flag=SUB, expression="price >= 200")) == [4, 5]
    resp = await rig.pull_request(sys_flag=SUB, expression=BAD)
    assert resp is not None and resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "line 1, column 9" in (resp.remark or ""), resp.remark


async def test_a_bad_heartbeat_expression_succeeds_but_is_not_held(rig: Rig) -> None:
    resp = await rig.heartbeat(BAD)
    assert resp is not None and resp.code == ResponseCode.SUCCESS
    await rig.put(0, 500)
    resp = await rig.pull_request()
    assert resp is not None and resp.code == ResponseCode.FILTER_DATA_NOT_EXIST, resp
    resp = await rig.check_config(BAD)
    assert resp is not None and resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "line 1, column 9" in (resp.remark or "") and ">" in (resp.remark or "")
    resp = await rig.check_config(GOOD)
    assert resp is not None and resp.code == ResponseCode.SUCCESS
    # A corrected subscription (newer version) replaces it.
    await rig.heartbeat(GOOD, version=2)
    assert numbers(await rig.pull_request(version=2)) == [0]


async def test_a_pull_newer_than_the_registered_expression(rig: Rig) -> None:
    await rig.heartbeat(GOOD, version=5)
    resp = await rig.pull_request(version=6)
    assert (
        resp is not None and resp.code == ResponseCode.SUBSCRIPTION_NOT_LATEST
    )  # the heartbeat's own check first


async def test_property_filter_off_is_a_clear_system_error(tmp_path: Path) -> None:
    clock = ManualClock()
    store = open_store(tmp_path / "store", clock)
    try:
        rig = Rig(store, clock, enablePropertyFilter=False)
        remark = "The broker does not support consumer to filter message by SQL92"
        resp = await rig.check_config(GOOD)
        assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR and resp.remark == remark
        await rig.heartbeat(GOOD)
        await rig.put(0, 500)
        for resp in (await rig.pull_request(), await rig.pull_request(sys_flag=SUB, expression=GOOD)):
            assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR and resp.remark == remark
        rig.ctx.broker_config.enable_property_filter = True  # UPDATE_BROKER_CONFIG at run time
        assert numbers(await rig.pull_request()) == [0]
    finally:
        store.close()


async def test_a_parked_pull_keeps_its_filter(rig: Rig) -> None:
    await rig.heartbeat(GOOD)
    assert await rig.pull_request(sys_flag=SUSPEND) is None  # parked at offset 0
    await rig.put(0, 10)  # does not match: stays parked
    await asyncio.sleep(0)
    assert rig.conn.sent == [] and rig.hold.held_count == 1
    await rig.put(1, 900)
    for _ in range(10):
        if rig.conn.sent:
            break
        await asyncio.sleep(0)
    [answer] = rig.conn.sent
    assert numbers(answer) == [1]


async def test_unregistering_the_last_consumer_retires_its_expressions(rig: Rig) -> None:
    await rig.heartbeat(GOOD)
    data = rig.ctx.consumer_filter_manager.get(GROUP, TOPIC)
    assert data is not None and not data.is_dead
    header = UnregisterClientRequestHeader(client_id="c1", consumer_group=GROUP)
    resp = await rig.client.process_request(
        rig.conn, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header.to_ext_fields())
    )
    assert resp is not None and resp.code == ResponseCode.SUCCESS
    assert data.is_dead
