"""GET_PRODUCER_CONNECTION_LIST (204), and GET_CONSUMER_RUNNING_INFO (307) / CONSUME_MESSAGE_DIRECTLY (309)
passed on to one consumer over its connection, as Java's AdminBrokerProcessor.callConsumer does."""

from typing import Any

from broker_fakes import FakeConnection, make_context

from rocketq.broker.clients import ClientChannelInfo
from rocketq.broker.processors.admin.consumer import ConsumerAdminProcessor
from rocketq.common.msg_id import create_offset_msg_id
from rocketq.remoting.errors import RemotingConnectError, RemotingTimeoutError
from rocketq.remoting.protocol.bodies.admin import ProducerConnection
from rocketq.remoting.protocol.bodies.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from rocketq.remoting.protocol.codes import LanguageCode, RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetProducerConnectionListRequestHeader,
)


class FakeStoreWithRecord:
    def __init__(self, offset: int, record: bytes) -> None:
        self.records = {offset: record}

    def select_one_message_by_offset(self, offset: int) -> bytes | None:
        return self.records.get(offset)


def _with_consumer(
    version: int = 409,
) -> tuple[Any, ConsumerAdminProcessor, FakeConnection, list[tuple[Any, RemotingCommand]]]:
    ctx = make_context()
    conn = FakeConnection("10.0.0.9:1234")
    ctx.consumer_manager.register_consumer(
        "cg",
        ClientChannelInfo(conn, "c1", LanguageCode.JAVA, version, 0),
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        [SubscriptionData(topic="T")],
    )
    calls: list[tuple[Any, RemotingCommand]] = []

    async def call_client(target: Any, request: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        calls.append((target, request))
        assert timeout_ms == 10_000
        return request.make_response(ResponseCode.SUCCESS, "from the client", body=b"{}")

    ctx.call_client = call_client
    return ctx, ConsumerAdminProcessor(ctx), conn, calls


def _running_info_request(client_id: str = "c1") -> RemotingCommand:
    header = GetConsumerRunningInfoRequestHeader(
        consumer_group="cg", client_id=client_id, jstack_enable=False
    )
    return RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, header.to_ext_fields())


async def test_producer_connections_of_a_group_and_an_unknown_group() -> None:
    ctx = make_context()
    proc = ConsumerAdminProcessor(ctx)
    req = RemotingCommand.request(
        RequestCode.GET_PRODUCER_CONNECTION_LIST,
        GetProducerConnectionListRequestHeader(producer_group="pg").to_ext_fields(),
    )
    resp = await proc.process_request(FakeConnection(), req)
    assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "the producer group[pg] not exist"
    ctx.producer_manager.register_producer(
        "pg", ClientChannelInfo(FakeConnection("10.0.0.7:99"), "p1", LanguageCode.GO, 317, 0)
    )
    resp = await proc.process_request(FakeConnection(), req)
    assert resp is not None and resp.code == ResponseCode.SUCCESS
    body = ProducerConnection.decode(resp.body)
    assert [(c.client_id, c.client_addr, c.language, c.version) for c in body.connection_set] == [
        ("p1", "10.0.0.7:99", LanguageCode.GO, 317)
    ]


async def test_running_info_is_the_consumers_own_answer_over_its_connection() -> None:
    _, proc, conn, calls = _with_consumer()
    resp = await proc.process_request(FakeConnection(), _running_info_request())
    assert resp is not None and (resp.code, resp.remark) == (ResponseCode.SUCCESS, "from the client")
    [(target, forwarded)] = calls
    assert target is conn
    assert forwarded.code == RequestCode.GET_CONSUMER_RUNNING_INFO and forwarded.ext_fields is not None
    assert forwarded.ext_fields["clientId"] == "c1" and forwarded.ext_fields["consumerGroup"] == "cg"


async def test_calling_an_absent_old_slow_or_gone_consumer() -> None:
    _, proc, _, calls = _with_consumer()
    resp = await proc.process_request(FakeConnection(), _running_info_request("c9"))
    assert resp is not None and (resp.code, resp.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "The Consumer <cg> <c9> not online",
    )
    assert calls == []
    _, proc, _, calls = _with_consumer(version=61)  # older than V3_1_8_SNAPSHOT
    resp = await proc.process_request(FakeConnection(), _running_info_request())
    assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR and "too low" in (resp.remark or "")
    assert calls == []
    for error, code in (
        (RemotingTimeoutError("3000 ms"), ResponseCode.CONSUME_MSG_TIMEOUT),
        (RemotingConnectError("closed"), ResponseCode.SYSTEM_ERROR),
    ):
        ctx, proc, _, _ = _with_consumer()

        async def failing(*_args: Any, error: Exception = error) -> RemotingCommand:
            raise error

        ctx.call_client = failing
        resp = await proc.process_request(FakeConnection(), _running_info_request())
        assert resp is not None and resp.code == code and "consumer <cg> <c1>" in (resp.remark or ""), (
            resp.remark
        )


async def test_consume_directly_sends_the_stored_record_and_the_broker_name() -> None:
    ctx, proc, _, calls = _with_consumer()
    ctx.store = FakeStoreWithRecord(4096, b"the stored record")
    msg_id = create_offset_msg_id("10.0.0.1", 10911, 4096)
    header = ConsumeMessageDirectlyResultRequestHeader(
        consumer_group="cg", client_id="c1", msg_id=msg_id, broker_name=None
    )
    resp = await proc.process_request(
        FakeConnection(),
        RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, header.to_ext_fields()),
    )
    assert resp is not None and resp.code == ResponseCode.SUCCESS
    [(_, forwarded)] = calls
    assert forwarded.code == RequestCode.CONSUME_MESSAGE_DIRECTLY and forwarded.body == b"the stored record"
    assert (
        forwarded.ext_fields is not None
        and forwarded.ext_fields["brokerName"] == ctx.broker_config.broker_name
    )
    missing = ConsumeMessageDirectlyResultRequestHeader(
        "cg", "c1", create_offset_msg_id("10.0.0.1", 10911, 8), None
    )
    resp = await proc.process_request(
        FakeConnection(),
        RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, missing.to_ext_fields()),
    )
    assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR and "offset, 8" in (resp.remark or "")
