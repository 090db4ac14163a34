import json
from collections import Counter
from pathlib import Path

from broker_fakes import FakeConnection, FakeStore, make_context

from rocketq.broker.clients import ClientChannelInfo
from rocketq.broker.config import BrokerConfig
from rocketq.broker.processors.admin.consumer import ConsumerAdminProcessor
from rocketq.broker.processors.admin.stats import StatsAdminProcessor
from rocketq.broker.processors.admin.subscription import SubscriptionAdminProcessor
from rocketq.broker.processors.registry import (
    FAMILIES,
    SUPPORTED_CODES,
    apply_fast_failure,
    build_registrations,
)
from rocketq.broker.subscription_group import SubscriptionGroupManager
from rocketq.common.clock import ManualClock
from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies.admin import (
    ConsumerConnection,
    ConsumeStats,
    ConsumeStatsList,
    GroupList,
    SubscriptionGroupConfig,
    TopicStatsTable,
)
from rocketq.remoting.protocol.bodies.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from rocketq.remoting.protocol.bodies.register import TopicConfig
from rocketq.remoting.protocol.codes import LanguageCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import (
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from rocketq.store.message import BrokerMessage


def test_every_supported_code_has_exactly_one_owner() -> None:
    owners: Counter[int] = Counter()
    ctx = make_context()
    for family in FAMILIES:
        owners.update(family.make(ctx).codes)
    assert {code for code, n in owners.items() if n > 1} == set()
    assert set(owners) == SUPPORTED_CODES
    registrations, processors = build_registrations(ctx)
    assert sorted(r.code for r in registrations) == sorted(SUPPORTED_CODES)
    assert {"send", "pull"} <= set(processors)


def test_subscription_group_manager_auto_creates_and_persists(tmp_path: Path) -> None:
    cfg = BrokerConfig(maxReconsumeTimes=5)  # type: ignore[call-arg]
    m = SubscriptionGroupManager(cfg, tmp_path, ManualClock())
    assert m.find_subscription_group_config("TOOLS_CONSUMER") is not None  # built in
    g = m.find_subscription_group_config("cg")
    assert g is not None and g.retry_max_times == 5 and m.dirty
    m.update_subscription_group_config(SubscriptionGroupConfig(group_name="slow", retry_queue_nums=3))
    m.persist()
    again = SubscriptionGroupManager(cfg, tmp_path, ManualClock())
    assert again.load()
    assert again.subscription_group_table["slow"].retry_queue_nums == 3
    assert again.data_version == m.data_version
    strict = SubscriptionGroupManager(BrokerConfig(autoCreateSubscriptionGroup=False), None, ManualClock())  # type: ignore[call-arg]
    assert strict.find_subscription_group_config("cg") is None
    assert strict.find_subscription_group_config("CID_RMQ_SYS_TRANS") is not None
    assert strict.delete_subscription_group_config("CID_RMQ_SYS_TRANS")


async def test_subscription_admin() -> None:
    ctx = make_context()
    proc = SubscriptionAdminProcessor(ctx)
    conn = FakeConnection()
    body = SubscriptionGroupConfig(group_name="g1", retry_max_times=3).encode()
    resp = await proc.process_request(conn, RemotingCommand.request(200, None, body))
    assert resp is not None and resp.code == 0
    assert ctx.subscription_group_manager.subscription_group_table["g1"].retry_max_times == 3
    resp = await proc.process_request(conn, RemotingCommand.request(201))
    assert resp is not None and "g1" in json.loads(resp.body)["subscriptionGroupTable"]
    ctx.consumer_offset_manager.commit_offset("c", "g1", "T", 0, 5)
    h = DeleteSubscriptionGroupRequestHeader(group_name="g1", remove_offset=True)
    resp = await proc.process_request(conn, RemotingCommand.request(207, h.to_ext_fields()))
    assert resp is not None and resp.code == 0
    assert "g1" not in ctx.subscription_group_manager.subscription_group_table
    assert ctx.consumer_offset_manager.offset_table == {}
    for bad in (b"{}", b"nope"):
        resp = await proc.process_request(conn, RemotingCommand.request(200, None, bad))
        assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR


async def test_topic_and_consume_stats() -> None:
    store = FakeStore()
    ctx = make_context(store)
    ctx.topic_config_manager.update_topic_config(TopicConfig("T", 2, 2, 6))
    for _ in range(3):
        await store.put_message(BrokerMessage("T", 1, b"x"))
    ctx.consumer_offset_manager.commit_offset("c", "cg", "T", 1, 2)
    proc = StatsAdminProcessor(ctx)
    resp = await proc.process_request(
        FakeConnection(),
        RemotingCommand.request(202, GetTopicStatsInfoRequestHeader(topic="T").to_ext_fields()),
    )
    assert resp is not None and resp.code == 0
    table = TopicStatsTable.decode(resp.body).offset_table
    assert table[MessageQueue("T", "broker-a", 1)].max_offset == 3
    assert table[MessageQueue("T", "broker-a", 1)].last_update_timestamp == 1002
    resp = await proc.process_request(
        FakeConnection(),
        RemotingCommand.request(202, GetTopicStatsInfoRequestHeader(topic="X").to_ext_fields()),
    )
    assert resp is not None and resp.code == ResponseCode.TOPIC_NOT_EXIST
    resp = await proc.process_request(
        FakeConnection(),
        RemotingCommand.request(208, GetConsumeStatsRequestHeader(consumer_group="cg").to_ext_fields()),
    )
    assert resp is not None and resp.code == 0
    stats = ConsumeStats.decode(resp.body).offset_table
    w = stats[MessageQueue("T", "broker-a", 1)]
    assert (w.broker_offset, w.consumer_offset, w.last_timestamp) == (3, 2, 1001)


async def test_broker_consume_stats_lists_every_group_with_its_lag() -> None:
    # GET_BROKER_CONSUME_STATS (mqadmin brokerConsumeStats): every subscription group, per topic it has offsets in.
    store = FakeStore()
    ctx = make_context(store)
    ctx.topic_config_manager.update_topic_config(TopicConfig("T", 2, 2, 6))
    for _ in range(3):
        await store.put_message(BrokerMessage("T", 1, b"x"))
    ctx.subscription_group_manager.update_subscription_group_config(SubscriptionGroupConfig(group_name="cg"))
    ctx.consumer_offset_manager.commit_offset("c", "cg", "T", 1, 2)
    proc = StatsAdminProcessor(ctx)
    request = RemotingCommand.request(317, GetConsumeStatsInBrokerHeader(is_order=False).to_ext_fields())
    resp = await proc.process_request(FakeConnection(), request)
    assert resp is not None and resp.code == 0
    answer = ConsumeStatsList.decode(resp.body)
    assert answer.broker_addr == ctx.broker_addr and answer.total_diff == 1
    [per_topic] = [entry["cg"] for entry in answer.consume_stats_list if "cg" in entry]
    [stats] = per_topic
    w = stats.offset_table[MessageQueue("T", "broker-a", 1)]
    assert (w.broker_offset, w.consumer_offset) == (3, 2)
    ordered_only = RemotingCommand.request(317, GetConsumeStatsInBrokerHeader(is_order=True).to_ext_fields())
    resp = await proc.process_request(FakeConnection(), ordered_only)
    assert (
        resp is not None and ConsumeStatsList.decode(resp.body).total_diff == 0
    )  # T is not an ordered topic


async def test_consumer_connections_and_who_consumes() -> None:
    ctx = make_context()
    proc = ConsumerAdminProcessor(ctx)
    req = RemotingCommand.request(
        203, GetConsumerConnectionListRequestHeader(consumer_group="cg").to_ext_fields()
    )
    resp = await proc.process_request(FakeConnection(), req)
    assert resp is not None and resp.code == ResponseCode.CONSUMER_NOT_ONLINE
    conn = FakeConnection("10.0.0.9:1234")
    ctx.consumer_manager.register_consumer(
        "cg",
        ClientChannelInfo(conn, "c1", LanguageCode.GO, 317, 0),
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        [SubscriptionData(topic="T")],
    )
    resp = await proc.process_request(FakeConnection(), req)
    assert resp is not None and resp.code == 0
    body = ConsumerConnection.decode(resp.body)
    assert [(c.client_id, c.client_addr, c.language, c.version) for c in body.connection_set] == [
        ("c1", "10.0.0.9:1234", LanguageCode.GO, 317)
    ]
    assert (
        body.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        and "T" in body.subscription_table
    )
    ctx.consumer_offset_manager.commit_offset("c", "old", "T", 0, 1)
    resp = await proc.process_request(
        FakeConnection(),
        RemotingCommand.request(300, QueryTopicConsumeByWhoRequestHeader(topic="T").to_ext_fields()),
    )
    assert resp is not None and GroupList.decode(resp.body).group_list == ["cg", "old"]


def test_fast_failure_bounds_the_queues_java_bounds() -> None:
    """BrokerFastFailure's queues and waits: send 200 ms, pull 5 s, heartbeat 31 s, end-transaction 3 s."""

    def waits(**cfg: object) -> dict[str, float]:
        registrations, _ = build_registrations(make_context(FakeStore(), **cfg))
        return {r.executor.name: r.executor.max_wait_ms for r in registrations}

    bounded = {k: v for k, v in waits().items() if v}
    assert bounded == {"send": 200, "pull": 5000, "heartbeat": 31000, "end-transaction": 3000}
    assert waits(waitTimeMillsInSendQueue=50)["send"] == 50
    assert not any(waits(brokerFastFailureEnable=False).values())

    registrations, _ = build_registrations(make_context(FakeStore()))
    send = next(r.executor for r in registrations if r.executor.name == "send")
    cfg = BrokerConfig.model_validate({"waitTimeMillsInSendQueue": 75})
    apply_fast_failure(send, cfg)  # what UPDATE_BROKER_CONFIG of a wait key does on a running broker
    assert send.max_wait_ms == 75
    apply_fast_failure(send, BrokerConfig.model_validate({"brokerFastFailureEnable": False}))
    assert send.max_wait_ms == 0
