"""BrokerStatsService: stats topics, the records of a window, lag, alignment, runtime figures."""

from __future__ import annotations

from stats_helpers import T0, read_json, read_topic

from rocketq.broker.context import BrokerContext
from rocketq.broker.stats.publisher import BrokerStatsService, next_window_end
from rocketq.common import constants as C
from rocketq.common.clock import ManualClock
from rocketq.store.message import BrokerMessage
from rocketq.store.message_store import MessageStore
from rocketq.store.status import AppendResult, PutMessageStatus, PutResult

TOPICS = (
    C.RMQ_SYS_BROKER_STATS_TOPIC_TOPIC,
    C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC,
    C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC,
)


async def put(store: MessageStore, topic: str, count: int, queue_id: int = 0) -> None:
    for i in range(count):
        msg = BrokerMessage(
            topic, queue_id, b"x%d" % i, born_host=("10.0.0.1", 1), store_host=("10.0.0.2", 2)
        )
        assert (await store.put_message(msg)).is_ok


def ok(msgs: int, size: int) -> PutResult:
    return PutResult(PutMessageStatus.PUT_OK, AppendResult(wrote_bytes=size, msg_num=msgs))


def test_windows_end_on_multiples_of_the_interval_at_least_half_an_interval_away() -> None:
    assert next_window_end(60_000, 60_000) == 120_000
    assert next_window_end(61_000, 60_000) == 120_000
    assert next_window_end(89_999, 60_000) == 120_000
    assert next_window_end(90_000, 60_000) == 180_000  # woken a bit early: no sliver of a window
    assert next_window_end(119_990, 60_000) == 180_000
    assert next_window_end(T0 + 1, 1_000) == T0 + 1_000


def test_the_stats_topics_are_system_topics_with_one_queue(ctx: BrokerContext) -> None:
    service = BrokerStatsService(ctx)
    service.create_topics()
    manager = ctx.topic_config_manager
    for topic in TOPICS:
        config = manager.select_topic_config(topic)
        assert config is not None and config.read_queue_nums == config.write_queue_nums == 1
        assert manager.is_system_topic(topic)
    assert ctx.stats is service.manager


async def test_a_window_becomes_one_record_per_topic_per_group_and_one_for_the_broker(
    ctx: BrokerContext, store: MessageStore, clock: ManualClock
) -> None:
    service = BrokerStatsService(ctx)
    service.create_topics()
    await put(store, "Orders", 10, queue_id=0)
    await put(store, "Orders", 5, queue_id=1)
    stats = ctx.stats
    stats.on_put("Orders", ok(10, 1000), 200_000)
    stats.on_put("Orders", ok(5, 500), 3_000_000)
    stats.on_get("billing", "Orders", 7, 700)
    stats.on_send_back("billing", "Orders")
    ctx.consumer_offset_manager.commit_offset("c", "billing", "Orders", 0, 7)
    ctx.consumer_offset_manager.commit_offset("c", "billing", "Orders", 1, 5)
    clock.advance(10_000)
    assert await service.publish() == 3

    (topic_rec,) = read_json(store, C.RMQ_SYS_BROKER_STATS_TOPIC_TOPIC)
    assert topic_rec["schemaVersion"] == 1 and topic_rec["kind"] == "topic"
    assert (topic_rec["brokerName"], topic_rec["cluster"], topic_rec["brokerAddr"]) == (
        "broker-s", "StatsCluster", "127.0.0.1:10911",
    )  # fmt: skip
    assert (topic_rec["windowStartMs"], topic_rec["windowEndMs"]) == (T0, T0 + 10_000)
    assert topic_rec["topic"] == "Orders"
    assert (topic_rec["putMessages"], topic_rec["putBytes"], topic_rec["putTps"]) == (15, 1500, 1.5)
    assert (topic_rec["getMessages"], topic_rec["getBytes"]) == (7, 700)

    (group_rec,) = read_json(store, C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC)
    assert (group_rec["group"], group_rec["topic"]) == ("billing", "Orders")
    assert (group_rec["getMessages"], group_rec["sendBackMessages"]) == (7, 1)
    assert group_rec["lagMessages"] == 3
    q0, q1 = group_rec["queues"]
    assert (q0["queueId"], q0["brokerOffset"], q0["consumerOffset"], q0["lagMessages"]) == (0, 10, 7, 3)
    assert q0["lagLatencyMs"] == 10_000  # stored at T0, published at T0 + 10 s
    assert (q1["lagMessages"], q1["lagLatencyMs"]) == (0, 0)

    (broker_rec,) = read_json(store, C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC)
    assert (broker_rec["putMessages"], broker_rec["getMessages"], broker_rec["sendBackMessages"]) == (
        15,
        7,
        1,
    )
    latency = broker_rec["putLatency"]
    assert latency["count"] == 2 and sum(latency["counts"]) == 2 and latency["maxUs"] == 3_000
    assert set(broker_rec["store"]) >= {"dispatchBehindBytes", "flushBehindBytes", "diskUsedRatio"}
    assert 0 <= broker_rec["store"]["diskUsedRatio"] <= 1
    assert broker_rec["putMessagesTotal"] == 15

    messages = read_topic(store, C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC)
    assert messages[0].keys == ["billing@Orders"] and messages[0].tags == "group"


async def test_quiet_windows_publish_only_the_broker_record_and_group_lag(
    ctx: BrokerContext, store: MessageStore, clock: ManualClock
) -> None:
    service = BrokerStatsService(ctx)
    service.create_topics()
    await put(store, "Orders", 4)
    ctx.consumer_offset_manager.commit_offset("c", "billing", "Orders", 0, 1)
    clock.advance(10_000)
    await service.publish()
    clock.advance(10_000)
    await service.publish()
    assert read_json(store, C.RMQ_SYS_BROKER_STATS_TOPIC_TOPIC) == []
    groups = read_json(store, C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC)
    assert [g["lagMessages"] for g in groups] == [3, 3]  # lag is a gauge: reported every window
    brokers = read_json(store, C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC)
    assert [b["windowEndMs"] for b in brokers] == [T0 + 10_000, T0 + 20_000]
    assert [b["putMessages"] for b in brokers] == [0, 0]


async def test_reading_the_stats_topics_and_committing_on_them_is_not_counted(
    ctx: BrokerContext, store: MessageStore, clock: ManualClock
) -> None:
    service = BrokerStatsService(ctx)
    service.create_topics()
    clock.advance(10_000)
    await service.publish()
    ctx.stats.on_get("spark", C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC, 1, 500)
    ctx.consumer_offset_manager.commit_offset("c", "spark", C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC, 0, 0)
    clock.advance(10_000)
    await service.publish()
    assert read_json(store, C.RMQ_SYS_BROKER_STATS_TOPIC_TOPIC) == []
    assert read_json(store, C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC) == []
    assert [b["getMessages"] for b in read_json(store, C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC)] == [0, 0]


async def test_a_slave_closes_its_windows_but_publishes_nothing(
    ctx: BrokerContext, store: MessageStore, clock: ManualClock
) -> None:
    ctx.broker_config.broker_id = 1
    service = BrokerStatsService(ctx)
    service.create_topics()
    ctx.stats.on_put("Orders", ok(1, 100), 1_000)
    clock.advance(10_000)
    assert await service.publish() == 0
    assert ctx.stats.window.topics == {} and ctx.stats.totals.put_msgs == 1
    assert read_json(store, C.RMQ_SYS_BROKER_STATS_BROKER_TOPIC) == []


async def test_runtime_info_carries_the_store_gauges_and_consumer_lag(
    ctx: BrokerContext, store: MessageStore, clock: ManualClock
) -> None:
    service = BrokerStatsService(ctx)
    await put(store, "Orders", 6)
    ctx.consumer_offset_manager.commit_offset("c", "billing", "Orders", 0, 2)
    clock.advance(5_000)
    info = ctx.stats.runtime_info()
    assert info["rocketmq_consumer_lag_messages"] == "4"
    assert info["rocketmq_consumer_lag_latency"] == "5000"
    assert info["rocketmq_storage_dispatch_behind_bytes"] == "0"
    assert int(info["rocketmq_storage_flush_behind_bytes"]) >= 0
    assert info["statsInterval"] == "10000"
    assert service.store_figures().commit_log_max_offset == store.get_max_phy_offset()


async def test_a_refused_put_drops_the_rest_of_the_round(
    ctx: BrokerContext, store: MessageStore, clock: ManualClock
) -> None:
    service = BrokerStatsService(ctx)
    service.create_topics()
    ctx.stats.on_put("Orders", ok(1, 100), 1_000)
    store.close()  # puts now answer SERVICE_NOT_AVAILABLE
    clock.advance(10_000)
    assert await service.publish() == 0
    assert service._failing


async def test_the_brokers_internal_groups_are_not_reported(
    ctx: BrokerContext, store: MessageStore, clock: ManualClock
) -> None:
    service = BrokerStatsService(ctx)
    service.create_topics()
    await put(store, "rmq_sys_REVIVE_LOG_X", 2)
    ctx.consumer_offset_manager.commit_offset("c", "CID_RMQ_SYS_REVIVE_GROUP", "rmq_sys_REVIVE_LOG_X", 0, 0)
    ctx.stats.on_get("CID_RMQ_SYS_TRANS", "RMQ_SYS_TRANS_HALF_TOPIC", 1, 100)
    clock.advance(10_000)
    await service.publish()
    assert read_json(store, C.RMQ_SYS_BROKER_STATS_GROUP_TOPIC) == []
    assert ctx.stats.runtime_info()["rocketmq_consumer_lag_messages"] == "0"
