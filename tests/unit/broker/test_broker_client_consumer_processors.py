from typing import Any

from broker_fakes import FakeConnection, FakeStore, make_context

from rocketq.broker.processors.admin.locks import LockAdminProcessor
from rocketq.broker.processors.admin.offset import OffsetAdminProcessor
from rocketq.broker.processors.client_manage import ClientManageProcessor
from rocketq.broker.processors.consumer_manage import ConsumerManageProcessor
from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies.consumer import (
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
)
from rocketq.remoting.protocol.bodies.heartbeat import (
    CheckClientRequestBody,
    ConsumerData,
    HeartbeatData,
    ProducerData,
    SubscriptionData,
)
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.client import (
    GetConsumerListByGroupRequestHeader,
    UnregisterClientRequestHeader,
)
from rocketq.remoting.protocol.headers.offset import (
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.store.message import BrokerMessage


def heartbeat(client_id: str, group: str = "cg", topics: tuple[str, ...] = ("T",)) -> RemotingCommand:
    data = HeartbeatData(
        client_id=client_id,
        producer_data_set=[ProducerData("pg")],
        consumer_data_set=[
            ConsumerData(group_name=group, subscription_data_set=[SubscriptionData(topic=t) for t in topics])
        ],
    )
    return RemotingCommand.request(RequestCode.HEART_BEAT, None, data.encode())


def setup() -> tuple[Any, list[tuple[str, list[Any]]]]:
    ctx = make_context(FakeStore())
    events: list[tuple[str, list[Any]]] = []
    ctx.consumer_manager.on_consumer_ids_changed = lambda g, conns: events.append((g, conns))
    return ctx, events


async def test_heartbeat_registers_and_creates_the_retry_topic() -> None:
    ctx, events = setup()
    proc = ClientManageProcessor(ctx)
    c1, c2 = FakeConnection(), FakeConnection()
    resp = await proc.process_request(c1, heartbeat("client-1"))
    assert resp is not None and resp.code == 0 and resp.version == 409
    assert ctx.topic_config_manager.select_topic_config("%RETRY%cg").read_queue_nums == 1
    assert ctx.producer_manager.find_channel("client-1") is c1
    await proc.process_request(c2, heartbeat("client-2"))
    assert events[-1] == ("cg", [c1, c2])
    listing = ConsumerManageProcessor(ctx)
    req = RemotingCommand.request(
        38, GetConsumerListByGroupRequestHeader(consumer_group="cg").to_ext_fields()
    )
    resp = await listing.process_request(c1, req)
    assert resp is not None and resp.code == 0
    assert sorted(GetConsumerListByGroupResponseBody.decode(resp.body).consumer_id_list) == [
        "client-1",
        "client-2",
    ]
    unreg = UnregisterClientRequestHeader(client_id="client-2", consumer_group="cg", producer_group="pg")
    resp = await proc.process_request(c2, RemotingCommand.request(35, unreg.to_ext_fields()))
    assert resp is not None and resp.code == 0 and events[-1] == ("cg", [c1])


async def test_lenient_heartbeat_and_bad_bodies() -> None:
    ctx, _ = setup()
    proc = ClientManageProcessor(ctx)
    body = b'{"clientID":"c","consumerDataSet":[{"groupName":"g","consumeType":1,"messageModel":1,"consumeFromWhere":0}]}'
    resp = await proc.process_request(FakeConnection(), RemotingCommand.request(34, None, body))
    assert resp is not None and resp.code == 0
    assert ctx.consumer_manager.get_consumer_group_info("g") is not None
    resp = await proc.process_request(FakeConnection(), RemotingCommand.request(34, None, b"not json"))
    assert (
        resp is not None and resp.code == ResponseCode.SYSTEM_ERROR and "HeartbeatData" in (resp.remark or "")
    )


async def test_check_client_config() -> None:
    ctx, _ = setup()
    proc = ClientManageProcessor(ctx)
    tag = CheckClientRequestBody("c", "g", SubscriptionData(topic="T", sub_string="a"))
    resp = await proc.process_request(FakeConnection(), RemotingCommand.request(46, None, tag.encode()))
    assert resp is not None and resp.code == 0
    sql = CheckClientRequestBody(
        "c", "g", SubscriptionData(topic="T", sub_string="a > 1", expression_type="SQL92")
    )
    resp = await proc.process_request(FakeConnection(), RemotingCommand.request(46, None, sql.encode()))
    assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR


async def test_no_consumer_is_system_error() -> None:
    ctx, _ = setup()
    req = RemotingCommand.request(
        38, GetConsumerListByGroupRequestHeader(consumer_group="nobody").to_ext_fields()
    )
    resp = await ConsumerManageProcessor(ctx).process_request(FakeConnection(), req)
    assert (
        resp is not None
        and resp.code == ResponseCode.SYSTEM_ERROR
        and "no consumer for this group" in (resp.remark or "")
    )


def query(topic: str = "T", queue_id: int = 0) -> RemotingCommand:
    h = QueryConsumerOffsetRequestHeader(consumer_group="cg", topic=topic, queue_id=queue_id)
    return RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, h.to_ext_fields())


async def test_offsets_update_query_and_java_first_boot_rule() -> None:
    ctx, _ = setup()
    proc = ConsumerManageProcessor(ctx)
    conn = FakeConnection()
    # no offset, young queue whose message 0 is in memory: 0
    await ctx.store.put_message(BrokerMessage("T", 0, b"x"))
    resp = await proc.process_request(conn, query())
    assert resp is not None and resp.code == 0 and (resp.ext_fields or {})["offset"] == "0"
    # no offset and the queue's head was cleaned: QUERY_NOT_FOUND
    ctx.store.min_offsets[("T", 0)] = 5
    resp = await proc.process_request(conn, query())
    assert resp is not None and resp.code == ResponseCode.QUERY_NOT_FOUND
    upd = UpdateConsumerOffsetRequestHeader(consumer_group="cg", topic="T", queue_id=0, commit_offset=42)
    oneway = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, upd.to_ext_fields(), oneway=True)
    assert await proc.process_request(conn, oneway) is None
    resp = await proc.process_request(conn, query())
    assert resp is not None and resp.code == 0 and (resp.ext_fields or {})["offset"] == "42"
    upd = UpdateConsumerOffsetRequestHeader(consumer_group="cg", topic="T", queue_id=0, commit_offset=-1)
    resp = await proc.process_request(conn, RemotingCommand.request(15, upd.to_ext_fields()))
    assert resp is not None and resp.code == 0
    resp = await proc.process_request(conn, query())
    assert resp is not None and resp.code == ResponseCode.QUERY_NOT_FOUND


async def test_a_new_group_on_an_empty_queue_starts_at_0_whatever_the_commit_log_size() -> None:
    # Java checkInDiskByConsumeOffset(topic, queueId, 0) is false when the queue has no unit at offset 0, so
    # a group without offset gets 0 for an empty queue even when the commit log holds more than the
    # "in memory" budget (here 0 % of RAM: every stored byte counts as on disk).
    ctx, _ = setup()
    ctx.store_config.access_message_in_memory_max_ratio_pct = 0
    proc = ConsumerManageProcessor(ctx)
    await ctx.store.put_message(BrokerMessage("T", 0, b"x"))
    await ctx.store.put_message(BrokerMessage("T", 0, b"y"))
    resp = await proc.process_request(FakeConnection(), query(queue_id=1))
    assert resp is not None and resp.code == 0 and (resp.ext_fields or {})["offset"] == "0"
    resp = await proc.process_request(FakeConnection(), query(topic="Unknown"))
    assert resp is not None and resp.code == 0 and (resp.ext_fields or {})["offset"] == "0"
    # queue 0's first message is behind the budget: QUERY_NOT_FOUND, the client's ConsumeFromWhere decides
    resp = await proc.process_request(FakeConnection(), query(queue_id=0))
    assert resp is not None and resp.code == ResponseCode.QUERY_NOT_FOUND


async def test_offset_admin_reads_the_store() -> None:
    ctx, _ = setup()
    await ctx.store.put_message(BrokerMessage("T", 1, b"x"))
    proc = OffsetAdminProcessor(ctx)
    resp = await proc.process_request(
        FakeConnection(),
        RemotingCommand.request(30, GetMaxOffsetRequestHeader(topic="T", queue_id=1).to_ext_fields()),
    )
    assert resp is not None and (resp.ext_fields or {})["offset"] == "1"
    h = SearchOffsetRequestHeader(topic="T", queue_id=1, timestamp=5)
    resp = await proc.process_request(FakeConnection(), RemotingCommand.request(29, h.to_ext_fields()))
    assert resp is not None and (resp.ext_fields or {})["offset"] == "3"
    resp = await proc.process_request(FakeConnection(), RemotingCommand.request(30, {"topic": "T"}))
    assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR and "queueId" in (resp.remark or "")


async def test_min_offset_of_a_queue_never_written_is_0_as_java() -> None:
    # The store says -1 for a queue it has no consume queue for; Java creates an empty one and answers 0.
    ctx, _ = setup()
    ctx.store.min_offsets[("Fresh", 2)] = -1
    proc = OffsetAdminProcessor(ctx)
    request = RemotingCommand.request(
        RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic="Fresh", queue_id=2).to_ext_fields()
    )
    resp = await proc.process_request(FakeConnection(), request)
    assert resp is not None and resp.code == 0 and (resp.ext_fields or {})["offset"] == "0"


async def test_lock_and_unlock() -> None:
    ctx, _ = setup()
    proc = LockAdminProcessor(ctx)
    mq = MessageQueue("T", "broker-a", 0)
    lock1 = LockBatchRequestBody(consumer_group="cg", client_id="c1", mq_set=[mq])
    resp = await proc.process_request(FakeConnection(), RemotingCommand.request(41, None, lock1.encode()))
    assert resp is not None and LockBatchResponseBody.decode(resp.body).lock_ok_mq_set == [mq]
    lock2 = LockBatchRequestBody(consumer_group="cg", client_id="c2", mq_set=[mq])
    resp = await proc.process_request(FakeConnection(), RemotingCommand.request(41, None, lock2.encode()))
    assert resp is not None and LockBatchResponseBody.decode(resp.body).lock_ok_mq_set == []
    resp = await proc.process_request(FakeConnection(), RemotingCommand.request(42, None, lock1.encode()))
    assert resp is not None and resp.code == 0
    resp = await proc.process_request(FakeConnection(), RemotingCommand.request(41, None, lock2.encode()))
    assert resp is not None and LockBatchResponseBody.decode(resp.body).lock_ok_mq_set == [mq]
