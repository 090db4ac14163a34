"""POP / ACK / CHANGE_INVISIBLETIME through the processors, on a real small store and a ManualClock.

The client's part is imitated the way RocketMQ 5's remoting client does it: a receipt handle is built
from the response header's startOffsetInfo, popTime, invisibleTime and reviveQid.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lifecycle_helpers import FakeConnection, make_context, message, read_all

from rocketq.broker.pop.checkpoint import REVIVE_GROUP
from rocketq.broker.pop.service import PopService
from rocketq.broker.processors.ack import AckMessageProcessor
from rocketq.broker.processors.pop import INVALID_PARAMETER, POLLING_TIMEOUT, PopMessageProcessor
from rocketq.broker.topic_config import RW
from rocketq.common import constants as C
from rocketq.common.clock import ManualClock
from rocketq.common.message import MessageExt
from rocketq.common.record.codec import decode_records
from rocketq.remoting.protocol.bodies.register import TopicConfig
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    build_extra_info,
    offset_info_key,
    parse_start_offset_info,
)
from rocketq.store.message_store import MessageStore

GROUP, TOPIC = "sg", "T"
RETRY = f"%RETRY%{GROUP}_{TOPIC}"


class Broker:
    """The POP processors over one store, with helpers acting as a client."""

    def __init__(self, store: MessageStore, clock: Any, **cfg: Any) -> None:
        self.ctx = make_context(store, clock, **cfg)
        self.ctx.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 2, 2, RW))
        self.store = store
        self.restart()

    def restart(self) -> None:
        self.ctx.pop_service = self.service = PopService(self.ctx)
        self.service.replay()
        self.pop_proc = PopMessageProcessor(self.ctx)
        self.ack_proc = AckMessageProcessor(self.ctx)
        self.conn = FakeConnection()

    async def send(self, body: bytes, queue_id: int = 0, **props: str) -> None:
        assert (await self.store.put_message(message(TOPIC, queue_id, body, **props))).is_ok

    async def receive(
        self, n: int = 16, invisible_ms: int = 10_000, poll_ms: int = 0, **kw: Any
    ) -> list[MessageExt]:
        resp = await self.pop_raw(n, invisible_ms, poll_ms, **kw)
        if resp is None or resp.code != ResponseCode.SUCCESS:
            return []
        rh = PopMessageResponseHeader.from_ext_fields(resp.ext_fields)
        starts = parse_start_offset_info(rh.start_offset_info)
        msgs = decode_records(resp.body)
        for m in msgs:
            start = starts[offset_info_key(m.topic, m.queue_id)]
            extra = build_extra_info(
                start, rh.pop_time, rh.invisible_time, rh.revive_qid, m.topic, "broker-a", m.queue_id
            )
            m.properties[C.PROPERTY_POP_CK] = f"{extra} {m.queue_offset}"
        return msgs

    async def pop_raw(
        self, n: int = 16, invisible_ms: int = 10_000, poll_ms: int = 0, **kw: Any
    ) -> RemotingCommand | None:
        header = PopMessageRequestHeader(
            consumer_group=GROUP, topic=TOPIC, queue_id=kw.pop("queue_id", -1), max_msg_nums=n,
            invisible_time=invisible_ms, poll_time=poll_ms, born_time=0, init_mode=0, exp_type=kw.pop("exp_type", "TAG"),
            exp=kw.pop("exp", "*"), **kw,
        )  # fmt: skip
        return await self.pop_proc.process_request(
            self.conn, RemotingCommand.request(RequestCode.POP_MESSAGE, header.to_ext_fields())
        )

    def _handle(self, m: MessageExt) -> tuple[str, ExtraInfo]:
        ck = m.properties[C.PROPERTY_POP_CK]
        info = ExtraInfo.parse(ck)
        return info.real_topic(TOPIC, GROUP), info

    async def ack(self, m: MessageExt) -> RemotingCommand:
        topic, info = self._handle(m)
        h = AckMessageRequestHeader(
            GROUP, topic, info.queue_id, m.properties[C.PROPERTY_POP_CK], m.queue_offset
        )
        resp = await self.ack_proc.process_request(
            self.conn, RemotingCommand.request(RequestCode.ACK_MESSAGE, h.to_ext_fields())
        )
        assert resp is not None
        return resp

    async def change(self, m: MessageExt, invisible_ms: int) -> RemotingCommand:
        topic, info = self._handle(m)
        h = ChangeInvisibleTimeRequestHeader(
            GROUP, topic, info.queue_id, m.properties[C.PROPERTY_POP_CK], m.queue_offset, invisible_ms
        )
        code = RequestCode.CHANGE_MESSAGE_INVISIBLETIME
        resp = await self.ack_proc.process_request(
            self.conn, RemotingCommand.request(code, h.to_ext_fields())
        )
        assert resp is not None
        if resp.code == ResponseCode.SUCCESS:  # the new receipt handle, as RocketMQ 5's client builds it
            rh = ChangeInvisibleTimeResponseHeader.from_ext_fields(resp.ext_fields)
            extra = build_extra_info(
                m.queue_offset,
                rh.pop_time,
                rh.invisible_time,
                rh.revive_qid,
                topic,
                "broker-a",
                info.queue_id,
                m.queue_offset,
            )
            m.properties[C.PROPERTY_POP_CK] = extra
        return resp


@pytest.fixture
def broker(store: MessageStore, clock: ManualClock) -> Broker:
    return Broker(store, clock)


async def test_received_messages_stay_hidden_and_an_ack_commits_them(
    broker: Broker, clock: ManualClock
) -> None:
    for i in range(3):
        await broker.send(f"m{i}".encode(), queue_id=i % 2)
    got = await broker.receive(invisible_ms=5_000)
    assert sorted(m.body for m in got) == [b"m0", b"m1", b"m2"]
    assert await broker.receive() == []
    for m in got:
        assert (await broker.ack(m)).code == ResponseCode.SUCCESS
    assert len(broker.service.table) == 0
    clock.advance(60_000)
    await broker.service.revive_due()
    assert await broker.receive() == []


async def test_an_unacked_message_comes_back_after_its_invisible_time_counting_a_retry(
    broker: Broker, clock: ManualClock
) -> None:
    await broker.send(b"once", TAGS="TagA")
    [first] = await broker.receive(invisible_ms=3_000)
    clock.advance(2_999)
    await broker.service.revive_due()
    assert await broker.receive() == []
    clock.advance(1)
    assert await broker.service.revive_due() is None
    [again] = await broker.receive()
    assert again.body == b"once" and again.reconsume_times == 1 and again.topic == RETRY
    assert again.properties[C.PROPERTY_RETRY_TOPIC] == TOPIC and again.tags == "TagA"
    assert again.properties[C.PROPERTY_ORIGIN_MESSAGE_ID] == first.offset_msg_id
    assert (await broker.ack(again)).code == ResponseCode.SUCCESS
    assert (await broker.ack(first)).code == ResponseCode.NO_MESSAGE  # its time ran out long ago


async def test_change_invisible_duration_restarts_the_clock_from_the_call(
    broker: Broker, clock: ManualClock
) -> None:
    await broker.send(b"slow")
    [m] = await broker.receive(invisible_ms=2_000)
    old_handle = m.properties[C.PROPERTY_POP_CK]
    clock.advance(1_500)
    assert (await broker.change(m, 4_000)).code == ResponseCode.SUCCESS
    clock.advance(3_999)  # 5.5 s after the receive: the first time ran out, the new one did not
    await broker.service.revive_due()
    assert await broker.receive() == []
    stale = MessageExt(TOPIC, b"", queue_offset=m.queue_offset)
    stale.properties[C.PROPERTY_POP_CK] = old_handle
    assert (await broker.ack(stale)).code == ResponseCode.NO_MESSAGE
    assert (await broker.ack(m)).code == ResponseCode.SUCCESS
    clock.advance(60_000)
    await broker.service.revive_due()
    assert await broker.receive() == []


async def test_a_stale_handle_is_refused_and_changes_nothing(broker: Broker, clock: ManualClock) -> None:
    await broker.send(b"a")
    await broker.send(b"b")
    got = await broker.receive(invisible_ms=2_000)
    assert (await broker.ack(got[0])).code == ResponseCode.SUCCESS
    again = await broker.ack(got[0])
    assert again.code == ResponseCode.NO_MESSAGE and "acked already" in (again.remark or "")
    clock.advance(2_000)
    late = await broker.change(got[1], 5_000)
    assert late.code == ResponseCode.NO_MESSAGE and "ran out" in (late.remark or "")
    await broker.service.revive_due()
    assert [m.body for m in await broker.receive()] == [b"b"]  # only the unacked one comes back


async def test_past_the_groups_maximum_a_message_goes_to_the_dlq(broker: Broker, clock: ManualClock) -> None:
    broker.ctx.subscription_group_manager.find_subscription_group_config(GROUP).retry_max_times = 2  # type: ignore[union-attr]
    await broker.send(b"poison")
    deliveries = 0
    for _ in range(5):
        got = await broker.receive(invisible_ms=1_000)
        deliveries += len(got)
        clock.advance(1_000)
        await broker.service.revive_due()
    assert deliveries == 3  # 1 + retryMaxTimes
    [dead] = read_all(broker.store, f"%DLQ%{GROUP}")
    assert (
        dead.body == b"poison"
        and dead.reconsume_times == 3
        and dead.properties[C.PROPERTY_RETRY_TOPIC] == TOPIC
    )
    assert broker.service.dead_lettered == 1


async def test_in_flight_state_survives_a_restart(broker: Broker, clock: ManualClock) -> None:
    for body in (b"acked", b"kept", b"lost"):
        await broker.send(body)
    got = {m.body: m for m in await broker.receive(invisible_ms=5_000)}
    assert (await broker.ack(got[b"acked"])).code == ResponseCode.SUCCESS
    broker.service.commit_revive_offset()
    broker.restart()  # a new PopService rebuilt from the revive log (offsets stay: persisted in a real broker)
    assert broker.service.table.count_in_flight(GROUP) == 2
    assert await broker.receive() == []  # still hidden
    assert (await broker.ack(got[b"kept"])).code == ResponseCode.SUCCESS  # a handle from before still works
    clock.advance(5_000)
    await broker.service.revive_due()
    assert [m.body for m in await broker.receive()] == [b"lost"]


async def test_the_revive_offset_only_passes_settled_checkpoints(broker: Broker, clock: ManualClock) -> None:
    await broker.send(b"x")
    [m] = await broker.receive(invisible_ms=5_000)
    broker.service.commit_revive_offset()
    offsets = broker.ctx.consumer_offset_manager
    assert offsets.query_offset(REVIVE_GROUP, broker.service.revive_topic, 0) == 0
    await broker.ack(m)
    broker.service.commit_revive_offset()
    assert (
        offsets.query_offset(REVIVE_GROUP, broker.service.revive_topic, 0) == 2
    )  # the checkpoint and its ack


async def test_bad_requests_are_refused_with_a_remark(broker: Broker) -> None:
    too_short = await broker.pop_raw(invisible_ms=999)
    assert (
        too_short is not None
        and too_short.code == INVALID_PARAMETER
        and "invisibleTime" in (too_short.remark or "")
    )
    too_long = await broker.pop_raw(invisible_ms=12 * 3_600_000 + 1)
    assert too_long is not None and too_long.code == INVALID_PARAMETER
    too_many = await broker.pop_raw(n=33)
    assert too_many is not None and too_many.code == INVALID_PARAMETER
    await broker.send(b"x")
    [m] = await broker.receive()
    assert (await broker.change(m, 500)).code == INVALID_PARAMETER
    h = AckMessageRequestHeader(GROUP, TOPIC, m.queue_id, "garbage", m.queue_offset)
    resp = await broker.ack_proc.process_request(
        broker.conn, RemotingCommand.request(RequestCode.ACK_MESSAGE, h.to_ext_fields())
    )
    assert (
        resp is not None and resp.code == ResponseCode.MESSAGE_ILLEGAL and "extraInfo" in (resp.remark or "")
    )


async def test_nothing_to_pop_answers_polling_timeout_with_the_header(broker: Broker) -> None:
    resp = await broker.pop_raw(poll_ms=0)
    assert resp is not None and resp.code == POLLING_TIMEOUT
    assert PopMessageResponseHeader.from_ext_fields(resp.ext_fields).rest_num == 0


async def settle(conn: FakeConnection) -> None:
    """Let the spawned replay of a woken request run (no time passes)."""
    for _ in range(50):
        if conn.sent:
            return
        await asyncio.sleep(0)


async def test_a_held_pop_is_answered_when_a_message_arrives(store: MessageStore, clock: ManualClock) -> None:
    broker = Broker(store, clock)
    store.add_arrival_listener(broker.pop_proc.long_polling.on_message_arrival)
    assert await broker.pop_raw(poll_ms=10_000) is None
    assert broker.pop_proc.long_polling.waiting == 1
    await broker.send(b"late")
    await settle(broker.conn)
    [resp] = broker.conn.sent
    assert resp.code == ResponseCode.SUCCESS and decode_records(resp.body)[0].body == b"late"
    assert broker.pop_proc.long_polling.waiting == 0


async def test_held_pops_are_answered_polling_timeout_at_shutdown(
    store: MessageStore, clock: ManualClock
) -> None:
    broker = Broker(store, clock)
    assert await broker.pop_raw(poll_ms=30_000) is None
    broker.pop_proc.long_polling.drain()  # what the broker does on stop; a deadline passing takes the same path
    await settle(broker.conn)
    [resp] = broker.conn.sent
    assert resp.code == POLLING_TIMEOUT


async def test_a_pop_filters_by_tag_and_by_sql92(broker: Broker) -> None:
    await broker.send(b"a", queue_id=0, TAGS="TagA", n="1")
    await broker.send(b"b", queue_id=0, TAGS="TagB", n="9")
    assert [m.body for m in await broker.receive(exp="TagB || TagC")] == [b"b"]
    await broker.send(b"c", queue_id=1, TAGS="TagA", n="7")
    assert [m.body for m in await broker.receive(exp="n > 5", exp_type="SQL92")] == [b"c"]
    bad = await broker.pop_raw(exp="n >", exp_type="SQL92")
    assert bad is not None and bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
