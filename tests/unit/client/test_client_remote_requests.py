"""Broker-initiated requests reach the right consumer or producer and get Java's answers."""

from __future__ import annotations

from typing import cast

from rocketq.client.remote_requests import ClientRemotingProcessor
from rocketq.common.message import MessageExt, MessageQueue
from rocketq.common.record.codec import encode_record
from rocketq.remoting.protocol.bodies.consumer import ConsumerRunningInfo, ResetOffsetBody
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport.connection import Connection

MQ = MessageQueue("T", "broker-a", 1)


class Consumer:
    group = "cg"

    def __init__(self) -> None:
        self.resets: list[tuple[str, dict]] = []
        self.direct: list[MessageExt] = []

    async def reset_offset(self, topic, offsets):
        self.resets.append((topic, offsets))

    def running_info(self):
        return ConsumerRunningInfo(properties={"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY"})

    def offset_table(self, topic):
        return {MQ: 9}

    async def consume_message_directly(self, msg, broker_name):
        self.direct.append(msg)
        return b'{"consumeResult":"CR_SUCCESS"}'


class Producer:
    group = "pg"

    def __init__(self) -> None:
        self.checks: list[tuple[str, MessageExt, dict]] = []

    def check_transaction_state(self, addr, msg, header):
        self.checks.append((addr, msg, header))


class Instance:
    def __init__(self) -> None:
        self.consumers = {"cg": Consumer()}
        self.producers = {"pg": Producer()}
        self.rebalanced = 0

    def rebalance_immediately(self) -> None:
        self.rebalanced += 1


class FakeConn:
    remote_addr = "127.0.0.1:10911"


def Conn() -> Connection:
    """The processor reads only remote_addr of the connection a request came on."""
    return cast(Connection, FakeConn())


def record(**props: str) -> bytes:
    msg = MessageExt(
        "T", b"body", queue_id=1, queue_offset=3, properties=props, store_host=("127.0.0.1", 10911)
    )
    return encode_record(msg)


async def test_notify_rebalances_without_answer() -> None:
    inst = Instance()
    proc = ClientRemotingProcessor(inst)  # type: ignore[arg-type]
    req = RemotingCommand.request(
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "cg"}, oneway=True
    )
    assert await proc.process_request(Conn(), req) is None
    assert inst.rebalanced == 1
    assert proc.reject_request() is False


async def test_reset_offset_reaches_the_consumer() -> None:
    inst = Instance()
    proc = ClientRemotingProcessor(inst)  # type: ignore[arg-type]
    body = ResetOffsetBody({MQ: 42}).encode()
    req = RemotingCommand.request(
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
        {"topic": "T", "group": "cg", "timestamp": "0", "isForce": "true"},
        body,
        oneway=True,
    )
    assert await proc.process_request(Conn(), req) is None
    assert inst.consumers["cg"].resets == [("T", {MQ: 42})]


async def test_running_info_status_and_unknown_group() -> None:
    proc = ClientRemotingProcessor(Instance())  # type: ignore[arg-type]
    ok = await proc.process_request(
        Conn(),
        RemotingCommand.request(
            RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "cg", "clientId": "x"}
        ),
    )
    assert ok is not None and ok.code == ResponseCode.SUCCESS
    assert ConsumerRunningInfo.decode(ok.body).properties["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    missing = await proc.process_request(
        Conn(),
        RemotingCommand.request(
            RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "nope", "clientId": "x"}
        ),
    )
    assert (
        missing is not None and missing.code == ResponseCode.SYSTEM_ERROR and "nope" in (missing.remark or "")
    )
    status = await proc.process_request(
        Conn(),
        RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"topic": "T", "group": "cg"}),
    )
    assert status is not None and status.code == 0 and b"9" in status.body


async def test_consume_directly_and_bad_requests() -> None:
    inst = Instance()
    proc = ClientRemotingProcessor(inst)  # type: ignore[arg-type]
    req = RemotingCommand.request(
        RequestCode.CONSUME_MESSAGE_DIRECTLY, {"consumerGroup": "cg", "brokerName": "broker-a"}, record()
    )
    resp = await proc.process_request(Conn(), req)
    assert resp is not None and resp.code == 0 and b"CR_SUCCESS" in resp.body
    assert inst.consumers["cg"].direct[0].body == b"body"
    bad = await proc.process_request(
        Conn(), RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {})
    )
    assert bad is not None and bad.code == ResponseCode.SYSTEM_ERROR and "consumerGroup" in (bad.remark or "")
    other = await proc.process_request(Conn(), RemotingCommand.request(RequestCode.PULL_MESSAGE, {}))
    assert other is not None and other.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_transaction_check_goes_to_the_producer_of_pgroup() -> None:
    inst = Instance()
    proc = ClientRemotingProcessor(inst)  # type: ignore[arg-type]
    header = {"tranStateTableOffset": "5", "commitLogOffset": "100", "transactionId": "TX"}
    body = record(PGROUP="pg", UNIQ_KEY="ABC", TRAN_MSG="true")
    req = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, header, body, oneway=True)
    assert await proc.process_request(Conn(), req) is None
    addr, msg, got = inst.producers["pg"].checks[0]
    assert (addr, msg.transaction_id, got["tranStateTableOffset"]) == ("127.0.0.1:10911", "ABC", "5")
    unknown = RemotingCommand.request(
        RequestCode.CHECK_TRANSACTION_STATE, header, record(PGROUP="other"), oneway=True
    )
    assert await proc.process_request(Conn(), unknown) is None
