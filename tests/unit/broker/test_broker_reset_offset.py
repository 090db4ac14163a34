"""INVOKE_BROKER_TO_RESET_OFFSET (222) and INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) as Broker2Client."""

from __future__ import annotations

from typing import Any

from broker_fakes import FakeConnection, make_context

from rocketq.broker.clients import ClientChannelInfo
from rocketq.broker.processors.admin.reset_offset import ResetOffsetProcessor
from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies.consumer import (
    GetConsumerStatusBody,
    ResetOffsetBody,
    ResetOffsetBodyForC,
)
from rocketq.remoting.protocol.bodies.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from rocketq.remoting.protocol.bodies.register import TopicConfig
from rocketq.remoting.protocol.codes import LanguageCode, RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import GetConsumerStatusRequestHeader, ResetOffsetRequestHeader


def _setup(
    version: int = 409, online: bool = True
) -> tuple[Any, ResetOffsetProcessor, list[RemotingCommand]]:
    ctx = make_context()
    ctx.topic_config_manager.update_topic_config(
        TopicConfig(topic_name="T", read_queue_nums=2, write_queue_nums=2)
    )
    for qid, offset in ((0, 5), (1, 1)):
        ctx.consumer_offset_manager.commit_offset("10.0.0.9", "cg", "T", qid, offset)
    told: list[RemotingCommand] = []

    async def tell_client(conn: Any, request: RemotingCommand) -> None:
        told.append(request)

    async def call_client(conn: Any, request: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        table = {MessageQueue("T", "broker-a", 0): 7}
        return request.make_response(body=GetConsumerStatusBody(message_queue_table=table).encode())

    ctx.tell_client, ctx.call_client = tell_client, call_client
    if online:
        ctx.consumer_manager.register_consumer(
            "cg",
            ClientChannelInfo(FakeConnection("10.0.0.9:1"), "c1", LanguageCode.JAVA, version, 0),
            ConsumeType.CONSUME_PASSIVELY,
            MessageModel.CLUSTERING,
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            [SubscriptionData(topic="T")],
        )
    return ctx, ResetOffsetProcessor(ctx), told


def _reset(
    timestamp: int, force: bool, language: LanguageCode = LanguageCode.JAVA, group: str = "cg"
) -> RemotingCommand:
    header = ResetOffsetRequestHeader(topic="T", group=group, timestamp=timestamp, is_force=force)
    request = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header.to_ext_fields())
    request.language = language
    return request


async def test_offsets_by_time_sent_to_every_online_client() -> None:
    _ctx, proc, told = _setup()
    resp = await proc.process_request(
        FakeConnection(), _reset(1000, force=True)
    )  # the fake store: offset 3 at any time
    assert resp is not None and resp.code == ResponseCode.SUCCESS
    expected = {MessageQueue("T", "broker-a", 0): 3, MessageQueue("T", "broker-a", 1): 3}
    assert ResetOffsetBody.decode(resp.body).offset_table == expected
    [sent] = told
    assert sent.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET and sent.is_oneway
    assert ResetOffsetBody.decode(sent.body).offset_table == expected
    assert ResetOffsetRequestHeader.from_ext_fields(sent.ext_fields).group == "cg"


async def test_not_forced_keeps_an_offset_already_before_the_target() -> None:
    _ctx, proc, _told = _setup()
    resp = await proc.process_request(FakeConnection(), _reset(1000, force=False))
    assert resp is not None
    table = ResetOffsetBody.decode(resp.body).offset_table
    assert table == {MessageQueue("T", "broker-a", 0): 3, MessageQueue("T", "broker-a", 1): 1}


async def test_a_cpp_requester_gets_the_list_form_for_its_clients() -> None:
    _ctx, proc, told = _setup()
    await proc.process_request(FakeConnection(), _reset(1000, force=True, language=LanguageCode.CPP))
    assert ResetOffsetBodyForC.decode(told[0].body).offset_table == [
        (MessageQueue("T", "broker-a", 0), 3),
        (MessageQueue("T", "broker-a", 1), 3),
    ]


async def test_refusals_name_what_was_wrong() -> None:
    _ctx, proc, told = _setup(online=False)
    resp = await proc.process_request(FakeConnection(), _reset(1000, force=True))
    assert (
        resp is not None
        and resp.code == ResponseCode.CONSUMER_NOT_ONLINE
        and "Consumer not online" in (resp.remark or "")
    )
    resp = await proc.process_request(FakeConnection(), _reset(1000, force=True, group="nobody"))
    assert (
        resp is not None
        and resp.code == ResponseCode.SYSTEM_ERROR
        and "<nobody> not exist" in (resp.remark or "")
    )
    _ctx, proc, told = _setup(version=20)  # older than V3_0_7_SNAPSHOT
    resp = await proc.process_request(FakeConnection(), _reset(1000, force=True))
    assert (
        resp is not None
        and resp.code == ResponseCode.SYSTEM_ERROR
        and "does not support" in (resp.remark or "")
    )
    assert told == []


async def test_consumer_status_is_what_each_client_reports() -> None:
    _ctx, proc, _told = _setup()
    header = GetConsumerStatusRequestHeader(topic="T", group="cg")
    resp = await proc.process_request(
        FakeConnection(),
        RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header.to_ext_fields()),
    )
    assert resp is not None and resp.code == ResponseCode.SUCCESS
    assert GetConsumerStatusBody.decode(resp.body).consumer_table == {
        "c1": {MessageQueue("T", "broker-a", 0): 7}
    }
