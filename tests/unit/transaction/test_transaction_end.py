"""Half messages and END_TRANSACTION over a real store: what is stored where, validation, once-only."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from transaction_fakes import COMMIT, GROUP, ROLLBACK, UNKNOWN, Broker, open_store

from rocketq.broker.transaction.service import TransactionalMessageService
from rocketq.common import constants as C
from rocketq.common.clock import ManualClock
from rocketq.common.constants import MessageSysFlag
from rocketq.common.message import Message, encode_properties
from rocketq.common.msg_id import parse_offset_msg_id
from rocketq.common.record.codec import encode_batch
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.send import SendMessageRequestHeader

HALF, OP, REAL = C.RMQ_SYS_TRANS_HALF_TOPIC, C.RMQ_SYS_TRANS_OP_HALF_TOPIC, "TopicTx"


async def test_half_message_is_parked_in_the_half_topic(broker: Broker) -> None:
    resp = await broker.send_half(queue_id=2, body=b"pay")
    assert resp.code == ResponseCode.SUCCESS, resp
    ext = resp.ext_fields or {}
    assert ext["queueId"] == "2" and ext["queueOffset"] == "0"
    [half] = broker.read(HALF)
    assert half.properties[C.PROPERTY_REAL_TOPIC] == REAL and half.properties[C.PROPERTY_REAL_QUEUE_ID] == "2"
    assert half.queue_id == 0 and half.body == b"pay" and half.properties["TRAN_MSG"] == "true"
    assert MessageSysFlag.transaction_value(half.sys_flag) == MessageSysFlag.TRANSACTION_NOT_TYPE
    assert half.commit_log_offset == parse_offset_msg_id(ext["msgId"])[2]
    assert broker.read(REAL, 2) == []
    assert broker.ctx.topic_config_manager.select_topic_config(HALF) is not None


async def test_commit_re_puts_the_message_and_writes_an_op(broker: Broker) -> None:
    sent = await broker.send_half(queue_id=1, body=b"pay", KEYS="order-1")
    half_phy = parse_offset_msg_id((sent.ext_fields or {})["msgId"])[2]
    resp = await broker.end(sent, COMMIT)
    assert resp is not None and resp.code == ResponseCode.SUCCESS, resp
    [real] = broker.read(REAL, 1)
    assert real.body == b"pay" and real.flag == 3 and real.properties["KEYS"] == "order-1"
    assert MessageSysFlag.transaction_value(real.sys_flag) == COMMIT
    assert real.prepared_transaction_offset == half_phy
    assert not {C.PROPERTY_REAL_TOPIC, C.PROPERTY_REAL_QUEUE_ID, "TRAN_MSG"} & real.properties.keys()
    assert real.properties["PGROUP"] == GROUP and real.tags == "TagA"
    [op] = broker.read(OP)
    assert op.tags == "d" and op.body == b"0" and op.queue_id == 0


async def test_a_commit_arriving_twice_re_puts_once(broker: Broker) -> None:
    sent = await broker.send_half()
    for _ in range(3):
        resp = await broker.end(sent, COMMIT)
        assert resp is not None and resp.code == ResponseCode.SUCCESS
    resp = await broker.end(sent, ROLLBACK)
    assert resp is not None and resp.code == ResponseCode.SUCCESS and "already" in (resp.remark or "")
    assert len(broker.read(REAL, 2)) == 1 and len(broker.read(OP)) == 1


async def test_rollback_writes_only_the_op_and_unknown_nothing(broker: Broker) -> None:
    first, second = await broker.send_half(), await broker.send_half()
    assert await broker.end(first, UNKNOWN) is None
    assert await broker.end(first, UNKNOWN, from_check=True) is None
    assert broker.read(OP) == []
    resp = await broker.end(second, ROLLBACK)
    assert resp is not None and resp.code == ResponseCode.SUCCESS
    assert await broker.end(second, COMMIT) is not None
    assert broker.read(REAL, 2) == []
    [op] = broker.read(OP)
    assert op.body == b"1"


async def test_oneway_end_transaction_gets_no_answer(broker: Broker) -> None:
    sent = await broker.send_half()
    assert await broker.end(sent, COMMIT, oneway=True) is None
    assert len(broker.read(REAL, 2)) == 1


@pytest.mark.parametrize(
    ("kwargs", "remark"),
    [
        ({"group": "other"}, "The producer group wrong"),
        ({"offset": 5}, "The transaction state table offset wrong"),
        ({"phy": 123_456}, "Find prepared transaction message failed"),
    ],
)
async def test_a_request_naming_the_wrong_half_message_is_refused(
    broker: Broker, kwargs: dict, remark: str
) -> None:
    sent = await broker.send_half()
    resp = await broker.end(sent, COMMIT, **kwargs)
    assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR and resp.remark == remark
    assert broker.read(REAL, 2) == [] and broker.read(OP) == []


async def test_a_normal_message_cannot_be_committed(broker: Broker) -> None:
    h = SendMessageRequestHeader(
        producer_group=GROUP, topic=REAL, default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
        sys_flag=0, born_timestamp=1, flag=0, properties=encode_properties({"PGROUP": GROUP}),
    )  # fmt: skip
    sent = await broker.send_proc.process_request(
        broker.producer_conn, RemotingCommand.request(RequestCode.SEND_MESSAGE, h.to_ext_fields(), b"x")
    )
    assert sent is not None and sent.code == ResponseCode.SUCCESS
    resp = await broker.end(sent, COMMIT)
    assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "Find prepared transaction message failed"
    assert len(broker.read(REAL, 0)) == 1


async def test_a_slave_refuses(tmp_path: Path, clock: ManualClock) -> None:
    store = open_store(tmp_path / "s", clock)
    try:
        b = Broker(store, clock)
        b.ctx.store_config = store.config.model_copy(
            update={"broker_role": type(store.config.broker_role).SLAVE}
        )
        resp = await b.end(None, COMMIT, offset=0, phy=0)
        assert resp is not None and resp.code == ResponseCode.SLAVE_NOT_AVAILABLE
    finally:
        store.close()


async def test_bad_half_messages_are_refused(broker: Broker) -> None:
    resp = await broker.send_half(DELAY="3")
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL and "delay level" in (resp.remark or "")
    broker.ctx.broker_config.reject_transaction_message = True
    resp = await broker.send_half()
    assert resp.code == ResponseCode.NO_PERMISSION and "transaction message is forbidden" in (
        resp.remark or ""
    )
    assert broker.read(HALF) == []


async def test_a_batch_cannot_hold_a_transactional_message(broker: Broker) -> None:
    body = encode_batch([Message(REAL, b"a"), Message(REAL, b"b", properties={"TRAN_MSG": "true"})])
    h = SendMessageRequestHeader(
        producer_group=GROUP, topic=REAL, default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
        sys_flag=0, born_timestamp=1, flag=0, properties="", batch=True,
    )  # fmt: skip
    request = RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, h.to_v2().to_ext_fields(), body)
    resp = await broker.send_proc.process_request(broker.producer_conn, request)
    assert (
        resp is not None
        and resp.code == ResponseCode.MESSAGE_ILLEGAL
        and "transactional" in (resp.remark or "")
    )
    assert broker.read(REAL, 0) == []


async def test_settled_half_messages_are_known_after_a_restart(broker: Broker) -> None:
    committed, rolled_back, pending = (
        await broker.send_half(),
        await broker.send_half(),
        await broker.send_half(),
    )
    await broker.end(committed, COMMIT)
    await broker.end(rolled_back, ROLLBACK)
    fresh = TransactionalMessageService(broker.ctx)
    assert await fresh.load() == 2
    broker.ctx.transaction_service = fresh
    await broker.end(committed, COMMIT)
    await broker.end(rolled_back, COMMIT)
    assert len(broker.read(REAL, 2)) == 1
    await broker.end(pending, COMMIT)
    assert len(broker.read(REAL, 2)) == 2 and fresh.settled_count() == 3


async def test_concurrent_commits_re_put_once(broker: Broker) -> None:
    sent = await broker.send_half()
    answers = await asyncio.gather(*(broker.end(sent, COMMIT) for _ in range(5)), broker.end(sent, ROLLBACK))
    assert all(a is not None and a.code == ResponseCode.SUCCESS for a in answers)
    assert len(broker.read(REAL, 2)) == 1 and len(broker.read(OP)) == 1
