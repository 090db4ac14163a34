"""Stats unit-test fixtures: a ManualClock, and a small real store in tmp_path under a broker context."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from stats_helpers import T0

from rocketq.broker.clients import ConsumerManager, ProducerManager
from rocketq.broker.config import BrokerConfig
from rocketq.broker.context import BrokerContext
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.rebalance_lock import RebalanceLockManager
from rocketq.broker.subscription_group import SubscriptionGroupManager
from rocketq.broker.topic_config import TopicConfigManager
from rocketq.common.clock import ManualClock
from rocketq.store.config import MessageStoreConfig
from rocketq.store.delay import DelayLevels
from rocketq.store.message_store import MessageStore


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(now_ms=T0)


@pytest.fixture
def store(tmp_path: Path, clock: ManualClock) -> Iterator[MessageStore]:
    config = MessageStoreConfig.build(
        {
            "storePathRootDir": str(tmp_path / "store"),
            "mappedFileSizeCommitLog": 64 * 1024,
            "mappedFileSizeConsumeQueue": 20 * 64,
            "maxHashSlotNum": 64,
            "maxIndexNum": 256,
            "mappedFileReserveAhead": 4096,
        }
    )
    opened = MessageStore(config, clock)
    opened.open()
    yield opened
    if opened.is_open:
        opened.close()


@pytest.fixture
def ctx(store: MessageStore, clock: ManualClock) -> BrokerContext:
    cfg = BrokerConfig.model_validate(
        {"brokerName": "broker-s", "brokerClusterName": "StatsCluster", "statsInterval": 10_000}
    )
    return BrokerContext(
        broker_config=cfg,
        store_config=store.config,
        store=store,
        topic_config_manager=TopicConfigManager(cfg, None, clock),
        subscription_group_manager=SubscriptionGroupManager(cfg, None, clock),
        consumer_offset_manager=ConsumerOffsetManager(),
        consumer_manager=ConsumerManager(None, clock),
        producer_manager=ProducerManager(clock),
        rebalance_lock_manager=RebalanceLockManager(60_000, clock),
        delay_levels=DelayLevels(store.config.message_delay_level),
        clock=clock,
        port=10911,
    )
