import json
from typing import Any

from broker_fakes import FakeConnection, FakeStore, make_context

from rocketq.broker.processors.admin.runtime import RuntimeAdminProcessor, version_desc
from rocketq.broker.processors.admin.topic import TopicAdminProcessor
from rocketq.broker.processors.query import QueryMessageProcessor
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import CreateTopicRequestHeader, DeleteTopicRequestHeader
from rocketq.remoting.protocol.headers.query import QueryMessageRequestHeader, ViewMessageRequestHeader
from rocketq.store.message import BrokerMessage


async def test_query_by_key_and_unique_key_and_view_by_offset() -> None:
    ctx = make_context(FakeStore())
    await ctx.store.put_message(BrokerMessage("T", 0, b"a", properties={"KEYS": "k1 k2", "UNIQ_KEY": "U1"}))
    await ctx.store.put_message(BrokerMessage("T", 0, b"b", properties={"KEYS": "k2"}))
    proc = QueryMessageProcessor(ctx)
    conn = FakeConnection()

    def q(key: str, unique: bool | None = None, max_num: int = 1) -> RemotingCommand:
        h = QueryMessageRequestHeader(
            topic="T",
            key=key,
            max_num=max_num,
            begin_timestamp=0,
            end_timestamp=2**62,
            unique_key_query=unique,
        )
        return RemotingCommand.request(RequestCode.QUERY_MESSAGE, h.to_ext_fields())

    resp = await proc.process_request(conn, q("k2", max_num=10))
    assert resp is not None and resp.code == 0 and resp.body == b"<a><b>"
    assert (resp.ext_fields or {})["indexLastUpdateTimestamp"] == "7"
    resp = await proc.process_request(conn, q("k2", max_num=1))
    assert resp is not None and resp.body == b"<a>"
    resp = await proc.process_request(conn, q("k2", unique=True, max_num=1))  # maxNum replaced by 32
    assert resp is not None and resp.body == b"<a><b>"
    resp = await proc.process_request(conn, q("nope"))
    assert (
        resp is not None and resp.code == ResponseCode.QUERY_NOT_FOUND and "time range" in (resp.remark or "")
    )
    assert "indexLastUpdatePhyoffset" in (resp.ext_fields or {})
    view = RemotingCommand.request(33, ViewMessageRequestHeader(offset=100).to_ext_fields())
    resp = await proc.process_request(conn, view)
    assert resp is not None and resp.code == 0 and resp.body == b"<b>"
    view = RemotingCommand.request(33, ViewMessageRequestHeader(offset=55).to_ext_fields())
    resp = await proc.process_request(conn, view)
    assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR and "55" in (resp.remark or "")


def create(topic: str, perm: int = 6, queues: int = 4) -> RemotingCommand:
    h = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=perm,
        topic_filter_type="SINGLE_TAG",
    )
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields())


async def test_create_registers_incrementally_and_delete_cleans_up() -> None:
    ctx = make_context(FakeStore())
    registered: list[Any] = []

    async def register(config: Any, version: Any = None) -> None:
        assert version is not None and version.counter > before  # the change's own data version
        registered.append(config)

    ctx.register_increment = register
    proc = TopicAdminProcessor(ctx)
    conn = FakeConnection()
    before = ctx.topic_config_manager.data_version.counter
    resp = await proc.process_request(conn, create("Orders", queues=2))
    assert resp is not None and resp.code == 0
    tc = ctx.topic_config_manager.select_topic_config("Orders")
    assert tc.read_queue_nums == 2 and registered == [tc]
    assert ctx.topic_config_manager.data_version.counter == before + 1
    resp = await proc.process_request(conn, RemotingCommand.request(21))
    assert resp is not None and "Orders" in json.loads(resp.body)["topicConfigTable"]
    await ctx.store.put_message(BrokerMessage("Orders", 0, b"x"))
    ctx.consumer_offset_manager.commit_offset("c", "g", "Orders", 0, 1)
    resp = await proc.process_request(
        conn, RemotingCommand.request(215, DeleteTopicRequestHeader(topic="Orders").to_ext_fields())
    )
    assert resp is not None and resp.code == 0
    assert ctx.topic_config_manager.select_topic_config("Orders") is None
    assert ctx.store.queues == {} and ctx.consumer_offset_manager.offset_table == {}


async def test_system_and_bad_topics_are_refused() -> None:
    ctx = make_context(FakeStore())
    proc = TopicAdminProcessor(ctx)
    for topic, remark in [
        ("TBW102", "conflict with system topic"),
        ("DefaultCluster", "conflict"),
        ("rmq_sys_x", "conflict"),
        ("a b", "illegal characters"),
    ]:
        resp = await proc.process_request(FakeConnection(), create(topic))
        assert (
            resp is not None and resp.code == ResponseCode.SYSTEM_ERROR and remark in (resp.remark or "")
        ), topic


async def test_runtime_info_and_config() -> None:
    ctx = make_context(FakeStore())
    changes: list[set[str]] = []
    ctx.on_broker_config_changed = changes.append
    proc = RuntimeAdminProcessor(ctx)
    conn = FakeConnection()
    resp = await proc.process_request(conn, RemotingCommand.request(28))
    table = json.loads(resp.body)["table"]  # type: ignore[union-attr]
    assert table["brokerVersionDesc"] == "V4_9_8" and table["brokerVersion"] == "409"
    assert table["commitLogMaxOffset"] == "0" and all(isinstance(v, str) for v in table.values())
    resp = await proc.process_request(conn, RemotingCommand.request(26))
    assert (
        resp is not None
        and "brokerName=broker-a" in resp.body.decode()
        and "version" in (resp.ext_fields or {})
    )
    resp = await proc.process_request(
        conn, RemotingCommand.request(25, None, b"brokerPermission=4\nmaxMessageSize=2048\n")
    )
    assert resp is not None and resp.code == 0
    assert ctx.broker_config.broker_permission == 4 and ctx.max_message_size == 2048
    assert changes == [{"brokerPermission", "maxMessageSize"}]
    for body, code, remark in [
        (b"brokerName=x", ResponseCode.NO_PERMISSION, "black list"),
        (b"noSuchKey=1", ResponseCode.SYSTEM_ERROR, "noSuchKey"),
        (b"brokerPermission=abc", ResponseCode.SYSTEM_ERROR, "brokerPermission"),
    ]:
        resp = await proc.process_request(conn, RemotingCommand.request(25, None, body))
        assert resp is not None and resp.code == code and remark in (resp.remark or ""), body


def test_version_desc() -> None:
    assert (
        version_desc(409) == "V4_9_8"
        and version_desc(401) == "V4_9_4"
        and version_desc(408) == "V4_9_8_SNAPSHOT"
    )


async def test_every_spelling_of_a_frozen_key_is_refused() -> None:
    """UPDATE_BROKER_CONFIG resolves a key to its RocketMQ name before the black-list check, so
    broker_ip1 or broker-name meet the same NO_PERMISSION as brokerIP1 and brokerName."""
    from rocketq.broker.processors.admin.runtime import FROZEN_KEYS

    ctx = make_context(FakeStore())
    ctx.on_broker_config_changed = lambda changed: None
    proc = RuntimeAdminProcessor(ctx)
    conn = FakeConnection()
    before = (ctx.broker_config.model_dump(), ctx.store_config.model_dump())
    tried = 0
    for model in (ctx.broker_config, ctx.store_config):
        for spelling, field in type(model).known_keys().items():
            canonical = type(model).model_fields[field].alias or field
            if canonical not in FROZEN_KEYS:
                continue
            body = f"{spelling}=10.9.8.7\n".encode()
            resp = await proc.process_request(conn, RemotingCommand.request(25, None, body))
            assert resp is not None and resp.code == ResponseCode.NO_PERMISSION, (spelling, resp)
            assert canonical in (resp.remark or ""), (spelling, resp.remark)
            tried += 1
    assert tried >= 3 * len(FROZEN_KEYS) - 6  # every frozen key has its alias, python and kebab spellings
    assert (ctx.broker_config.model_dump(), ctx.store_config.model_dump()) == before
