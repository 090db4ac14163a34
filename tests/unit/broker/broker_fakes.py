"""Test doubles for broker unit tests: a connection without a socket."""

from __future__ import annotations

import itertools
from typing import Any

from rocketq.remoting.protocol.command import RemotingCommand

_ids = itertools.count(1)


class FakeConnection:
    def __init__(self, remote_addr: str = "127.0.0.1:50000") -> None:
        self.id = next(_ids)
        self.remote_addr = remote_addr
        self.local_addr = "127.0.0.1:10911"
        self.is_active = True
        self.attributes: dict[str, Any] = {}
        self.sent: list[RemotingCommand] = []

    def send_response(self, cmd: RemotingCommand) -> None:
        self.sent.append(cmd)

    def close(self) -> None:
        self.is_active = False


# -- an in-memory store with the MessageStoreAPI surface the processors use ---------------------------
from rocketq.common.msg_id import create_offset_msg_id  # noqa: E402
from rocketq.store.message import BrokerMessage, BrokerMessageBatch  # noqa: E402
from rocketq.store.status import (  # noqa: E402
    AppendResult,
    GetMessageStatus,
    GetResult,
    PutMessageStatus,
    PutResult,
    QueryResult,
)


class FakeStore:
    def __init__(self) -> None:
        self.queues: dict[tuple[str, int], list[BrokerMessage]] = {}
        self.by_phy: dict[int, BrokerMessage] = {}
        self.phy = 0
        self.min_offsets: dict[tuple[str, int], int] = {}
        self.next_status: PutMessageStatus | None = None
        self.listeners: list[Any] = []

    async def start(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None

    def _append(self, msg: BrokerMessage) -> tuple[int, str]:
        q = self.queues.setdefault((msg.topic, msg.queue_id), [])
        msg.queue_offset = len(q)
        msg.commit_log_offset = self.phy
        self.by_phy[self.phy] = msg
        q.append(msg)
        self.phy += 100
        for listener in self.listeners:
            listener(msg.topic, msg.queue_id, msg.queue_offset, msg.tags_code, 0, msg.properties)
        return msg.queue_offset, create_offset_msg_id(
            msg.store_host[0], msg.store_host[1], msg.commit_log_offset
        )

    async def put_message(self, msg: BrokerMessage) -> PutResult:
        status = self.next_status or PutMessageStatus.PUT_OK
        if not status.is_ok:
            return PutResult(status)
        off, mid = self._append(msg)
        return PutResult(status, AppendResult(msg.commit_log_offset, 100, mid, 1, off, 1))

    async def put_message_list(self, msgs: list[BrokerMessage]) -> list[PutResult]:
        return [await self.put_message(msg) for msg in msgs]

    async def put_messages(self, batch: BrokerMessageBatch) -> PutResult:
        ids, first = [], None
        for flag, body, props in batch.entries:
            msg = BrokerMessage(batch.topic, batch.queue_id, body, flag, props, store_host=batch.store_host)
            off, mid = self._append(msg)
            first = off if first is None else first
            ids.append(mid)
        return PutResult(PutMessageStatus.PUT_OK, AppendResult(0, 0, ",".join(ids), 1, first or 0, len(ids)))

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return len(self.queues.get((topic, queue_id), []))

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return self.min_offsets.get((topic, queue_id), 0)

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        message_filter: Any = None,
        max_total_bytes: Any = None,
        *,
        joined: bool = False,
    ) -> GetResult:
        q = self.queues.get((topic, queue_id))
        lo = self.get_min_offset_in_queue(topic, queue_id)
        if not q:
            return GetResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0)
        hi = len(q)
        if offset < lo:
            return GetResult(GetMessageStatus.OFFSET_TOO_SMALL, lo, lo, hi)
        if offset == hi:
            return GetResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, lo, hi)
        if offset > hi:
            return GetResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, hi, lo, hi)
        records: list[bytes] = []
        offsets: list[int] = []
        i = offset
        while i < hi and len(records) < max_count:
            m = q[i]
            if message_filter is None or message_filter.is_matched_by_consume_queue(m.tags_code):
                records.append(b"<%s:%d>" % (m.body, i))
                offsets.append(i)
            i += 1
        status = GetMessageStatus.FOUND if records else GetMessageStatus.NO_MATCHED_MESSAGE
        if joined:
            return GetResult(status, i, lo, hi, [], offsets, body=b"".join(records))
        return GetResult(status, i, lo, hi, records, offsets)

    def add_arrival_listener(self, listener: Any) -> None:
        self.listeners.append(listener)

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, offset: int) -> int:
        q = self.queues.get((topic, queue_id), [])
        return q[offset].commit_log_offset if offset < len(q) else 0

    def get_max_phy_offset(self) -> int:
        return self.phy

    def get_min_phy_offset(self) -> int:
        return 0

    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> bytes | None:
        m = self.by_phy.get(commit_log_offset)
        return None if m is None else b"<%s>" % m.body

    def query_message(self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int) -> QueryResult:
        found = [
            b"<%s>" % m.body
            for (t, _), q in self.queues.items()
            if t == topic
            for m in q
            if key in (m.properties.get("KEYS") or "").split(" ") or m.properties.get("UNIQ_KEY") == key
        ]
        return QueryResult(found[:max_num], 7, 8)

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        return 3

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        return 1234

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        return 1000 + offset

    def dispatch_behind_bytes(self) -> int:
        return 0

    def runtime_info(self) -> dict[str, Any]:
        return {"commitLogMaxOffset": str(self.phy)}

    def delete_topics(self, topics: set[str]) -> int:
        for key in [k for k in self.queues if k[0] in topics]:
            del self.queues[key]
        return len(topics)

    def clean_unused_topics(self, keep: set[str]) -> int:
        doomed = {k[0] for k in self.queues if k[0] not in keep}
        return self.delete_topics(doomed)


# -- a broker context over the fakes -------------------------------------------------------------------
class FakeGroupConfig:
    def __init__(self, group: str) -> None:
        self.group_name = group
        self.consume_enable = True
        self.consume_from_min_enable = True
        self.consume_broadcast_enable = True
        self.retry_queue_nums = 1
        self.retry_max_times = 16
        self.broker_id = 0
        self.which_broker_when_consume_slowly = 1
        self.notify_consumer_ids_changed_enable = True


class FakeGroups:
    def __init__(self, auto_create: bool = True) -> None:
        self.table: dict[str, FakeGroupConfig] = {}
        self.auto_create = auto_create

    def find_subscription_group_config(self, group: str) -> FakeGroupConfig | None:
        if group not in self.table and self.auto_create:
            self.table[group] = FakeGroupConfig(group)
        return self.table.get(group)


def make_context(store: FakeStore | None = None, groups: Any = None, **broker_cfg: Any) -> Any:
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

    clock = ManualClock()
    cfg = BrokerConfig(**broker_cfg)
    store_cfg = MessageStoreConfig.model_validate({"maxMessageSize": 1024})
    return BrokerContext(
        broker_config=cfg,
        store_config=store_cfg,
        store=store or FakeStore(),  # type: ignore[arg-type]
        topic_config_manager=TopicConfigManager(cfg, None, clock),
        subscription_group_manager=groups or SubscriptionGroupManager(cfg, None, clock),
        consumer_offset_manager=ConsumerOffsetManager(),
        consumer_manager=ConsumerManager(None, clock),
        producer_manager=ProducerManager(clock),
        rebalance_lock_manager=RebalanceLockManager(60_000, clock),
        delay_levels=DelayLevels(),
        clock=clock,
        port=10911,
    )
