"""Lifecycle unit-test helpers: the small store configuration and message builders."""

from __future__ import annotations

from typing import Any

from rocketq.broker.clients import ConsumerManager, ProducerManager
from rocketq.broker.config import BrokerConfig
from rocketq.broker.context import BrokerContext
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.rebalance_lock import RebalanceLockManager
from rocketq.broker.subscription_group import SubscriptionGroupManager
from rocketq.broker.topic_config import TopicConfigManager
from rocketq.common.message import MessageExt
from rocketq.common.record.codec import decode_records
from rocketq.store.delay import DelayLevels
from rocketq.store.message import BrokerMessage
from rocketq.store.message_store import MessageStore

SMALL: dict[str, Any] = {
    "mappedFileSizeCommitLog": 64 * 1024,
    "mappedFileSizeConsumeQueue": 20 * 64,
    "maxMessageSize": 4096,
    "maxHashSlotNum": 64,
    "maxIndexNum": 256,
    "mappedFileReserveAhead": 4096,
    "messageDelayLevel": "1s 2s 3s",
}


def message(topic: str = "T", queue_id: int = 0, body: bytes = b"hello", **props: str) -> BrokerMessage:
    return BrokerMessage(
        topic,
        queue_id,
        body,
        properties=dict(props),
        born_host=("10.0.0.1", 5000),
        store_host=("10.0.0.2", 10911),
        born_timestamp=1,
    )


def read_all(store: MessageStore, topic: str, queue_id: int = 0) -> list[MessageExt]:
    records: list[bytes] = []
    offset = 0
    for _ in range(1000):
        got = store.get_message("g", topic, queue_id, offset, 32)
        records.extend(got.records)
        if got.next_begin_offset == offset:
            break
        offset = got.next_begin_offset
    return decode_records(b"".join(records))


def make_context(store: MessageStore, clock: Any, **broker_cfg: Any) -> BrokerContext:
    """A broker context over a real store and real managers (no files: config_dir None)."""
    cfg = BrokerConfig(**broker_cfg)
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


class FakeConnection:
    """A connection without a socket: what a processor sends later lands in `sent`."""

    def __init__(self, remote_addr: str = "127.0.0.1:50000") -> None:
        self.id = 1
        self.remote_addr = remote_addr
        self.is_active = True
        self.attributes: dict[str, Any] = {}
        self.sent: list[Any] = []

    def send_response(self, cmd: Any) -> None:
        self.sent.append(cmd)
