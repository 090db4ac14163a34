"""CONSUMER_SEND_MSG_BACK and the delay/timer redirects of SEND, through SendMessageProcessor on a real store."""

from __future__ import annotations

from typing import Any

import pytest
from lifecycle_helpers import FakeConnection, make_context, message, read_all

from rocketq.broker.processors.send import SendMessageProcessor
from rocketq.common import constants as C
from rocketq.common.clock import ManualClock
from rocketq.common.constants import PermName
from rocketq.common.message import encode_properties
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.retry import ConsumerSendMsgBackRequestHeader
from rocketq.remoting.protocol.headers.send import SendMessageRequestHeader
from rocketq.store.message_store import MessageStore
from rocketq.store.timer import TIMER_TOPIC

GROUP = "cg"


@pytest.fixture
def proc(store: MessageStore, clock: ManualClock) -> SendMessageProcessor:
    return SendMessageProcessor(make_context(store, clock))


async def stored(store: MessageStore, reconsume_times: int = 0, **props: str) -> int:
    msg = message("T", 0, b"payload", TAGS="TagA", UNIQ_KEY="U1", **props)
    msg.reconsume_times = reconsume_times
    result = await store.put_message(msg)
    assert result.append is not None
    return result.append.wrote_offset


async def send_back(
    proc: SendMessageProcessor, offset: int, delay_level: int = 0, version: int = 409, **kw: Any
) -> RemotingCommand:
    header = ConsumerSendMsgBackRequestHeader(offset=offset, group=GROUP, delay_level=delay_level, **kw)
    request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields())
    request.version = version
    resp = await proc.process_request(FakeConnection(), request)
    assert resp is not None
    return resp


async def test_a_failed_message_goes_to_the_retry_topic_through_level_3_plus_reconsume_times(
    proc: SendMessageProcessor, store: MessageStore
) -> None:
    offset = await stored(store)
    resp = await send_back(proc, offset)
    assert resp.code == ResponseCode.SUCCESS and resp.remark is None
    [parked] = read_all(store, C.RMQ_SYS_SCHEDULE_TOPIC, 2)  # level 3 = queue 2
    props = parked.properties
    assert props[C.PROPERTY_REAL_TOPIC] == f"%RETRY%{GROUP}" and props[C.PROPERTY_DELAY_TIME_LEVEL] == "3"
    assert props[C.PROPERTY_RETRY_TOPIC] == "T" and props[C.PROPERTY_WAIT_STORE_MSG_OK] == "false"
    assert props[C.PROPERTY_ORIGIN_MESSAGE_ID] != "" and parked.uniq_key == "U1"
    assert parked.reconsume_times == 1 and parked.body == b"payload"
    assert proc.ctx.topic_config_manager.select_topic_config(f"%RETRY%{GROUP}") is not None


async def test_the_headers_delay_level_wins_and_the_origin_id_is_kept(
    proc: SendMessageProcessor, store: MessageStore
) -> None:
    offset = await stored(store, reconsume_times=1, ORIGIN_MESSAGE_ID="FIRST", RETRY_TOPIC="Orig")
    assert (await send_back(proc, offset, delay_level=2)).code == ResponseCode.SUCCESS
    [parked] = read_all(store, C.RMQ_SYS_SCHEDULE_TOPIC, 1)
    assert parked.properties[C.PROPERTY_ORIGIN_MESSAGE_ID] == "FIRST"
    assert parked.properties[C.PROPERTY_RETRY_TOPIC] == "Orig" and parked.reconsume_times == 2


async def test_at_the_groups_maximum_it_goes_to_the_dlq(
    proc: SendMessageProcessor, store: MessageStore
) -> None:
    proc.ctx.subscription_group_manager.find_subscription_group_config(GROUP).retry_max_times = 2  # type: ignore[union-attr]
    offset = await stored(store, reconsume_times=2)
    assert (await send_back(proc, offset)).code == ResponseCode.SUCCESS
    [dead] = read_all(store, f"%DLQ%{GROUP}")
    assert dead.reconsume_times == 3 and dead.properties[C.PROPERTY_DELAY_TIME_LEVEL] == "0"
    dlq = proc.ctx.topic_config_manager.select_topic_config(f"%DLQ%{GROUP}")
    assert (
        dlq is not None and dlq.perm == PermName.PERM_READ | PermName.PERM_WRITE and dlq.write_queue_nums == 1
    )


async def test_the_headers_maximum_counts_only_from_v3_4_9(
    proc: SendMessageProcessor, store: MessageStore
) -> None:
    offset = await stored(store, reconsume_times=1)
    await send_back(proc, offset, version=120, max_reconsume_times=1)
    assert read_all(store, f"%DLQ%{GROUP}") == []
    await send_back(proc, offset, version=121, max_reconsume_times=1)
    assert len(read_all(store, f"%DLQ%{GROUP}")) == 1


async def test_a_negative_delay_level_goes_straight_to_the_dlq(
    proc: SendMessageProcessor, store: MessageStore
) -> None:
    assert (await send_back(proc, await stored(store), delay_level=-1)).code == ResponseCode.SUCCESS
    assert len(read_all(store, f"%DLQ%{GROUP}")) == 1


async def test_refusals(store: MessageStore, clock: ManualClock) -> None:
    offset = await stored(store)
    no_groups = SendMessageProcessor(make_context(store, clock, autoCreateSubscriptionGroup=False))
    assert (await send_back(no_groups, offset)).code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    proc = SendMessageProcessor(make_context(store, clock))
    missing = await send_back(proc, offset + 999_999)
    assert (
        missing.code == ResponseCode.SYSTEM_ERROR
        and missing.remark == f"look message by offset failed, {offset + 999_999}"
    )
    proc.ctx.subscription_group_manager.find_subscription_group_config(GROUP).retry_queue_nums = 0  # type: ignore[union-attr]
    assert (await send_back(proc, offset)).code == ResponseCode.SUCCESS
    assert read_all(store, C.RMQ_SYS_SCHEDULE_TOPIC, 2) == []
    read_only = SendMessageProcessor(make_context(store, clock, brokerPermission=PermName.PERM_READ))
    assert (await send_back(read_only, offset)).code == ResponseCode.NO_PERMISSION


# -- the SEND redirects -------------------------------------------------------------------------------
async def send(proc: SendMessageProcessor, batch: bool = False, **props: str) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="pg", topic="Real", default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
        sys_flag=0, born_timestamp=0, flag=0, properties=encode_properties(props), batch=batch,
    )  # fmt: skip
    resp = await proc.process_request(
        FakeConnection(), RemotingCommand.request(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"x")
    )
    assert resp is not None
    return resp


async def test_a_timer_message_is_parked_and_one_too_far_away_is_refused(
    proc: SendMessageProcessor, store: MessageStore, clock: ManualClock
) -> None:
    assert (await send(proc, TIMER_DELIVER_MS=str(clock.now_ms() + 60_000))).code == ResponseCode.SUCCESS
    assert len(read_all(store, TIMER_TOPIC)) == 1
    far = await send(proc, TIMER_DELIVER_MS=str(clock.now_ms() + 3 * 86_400_000 + 1_000))
    assert far.code == ResponseCode.MESSAGE_ILLEGAL and "maximum delay" in (far.remark or "")
    assert (await send(proc, TIMER_DELIVER_MS=str(clock.now_ms() - 5))).code == ResponseCode.SUCCESS
    assert len(read_all(store, "Real")) == 1  # a time already past: stored as is


async def test_a_delay_level_wins_over_a_timer(
    proc: SendMessageProcessor, store: MessageStore, clock: ManualClock
) -> None:
    assert (
        await send(proc, DELAY="1", TIMER_DELIVER_MS=str(clock.now_ms() + 60_000))
    ).code == ResponseCode.SUCCESS
    [parked] = read_all(store, C.RMQ_SYS_SCHEDULE_TOPIC, 0)
    assert C.PROPERTY_TIMER_DELIVER_MS not in parked.properties and read_all(store, TIMER_TOPIC) == []
