"""The store's own protocols: what the broker hands to the store and what it codes against.

A small module of its own so that both sides import it without importing the facade
(rocketq.store.message_store) or the put path: the dispatcher, the put service and the facade take
`ArrivalListener`s and `MessageFilter`s; the broker's long polling, POP and filters implement them, and
its processors see the store as a `MessageStoreAPI` (Java's MessageStore interface, which
DefaultMessageStore implements).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from rocketq.common.message import MessageExt
from rocketq.store.consume_queues import ConsumeQueueTable
from rocketq.store.message import BrokerMessage, BrokerMessageBatch
from rocketq.store.status import GetResult, PutResult, QueryResult

# Java MessageArrivingListener#arriving, called after a record reached its consume queue:
# listener(topic, queue_id, logical_offset, tags_code, store_timestamp, properties).
ArrivalListener = Callable[[str, int, int, int, int, dict[str, str] | None], None]


class MessageFilter(Protocol):
    """Decides which consume-queue units (by tag code) and records (by properties) a pull returns."""

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool: ...

    def is_matched_by_commit_log(self, record: bytes | None, properties: dict[str, str] | None) -> bool: ...


class MessageStoreAPI(Protocol):
    """The facade's public surface (implemented by rocketq.store.message_store.MessageStore)."""

    async def start(self) -> None: ...
    async def shutdown(self) -> None: ...

    async def put_message(self, msg: BrokerMessage) -> PutResult: ...
    async def put_message_list(self, msgs: list[BrokerMessage]) -> list[PutResult]: ...
    async def put_messages(self, batch: BrokerMessageBatch) -> PutResult: ...

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        message_filter: MessageFilter | None = None,
        max_total_bytes: int | None = None,
        *,
        joined: bool = False,
    ) -> GetResult: ...

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...
    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int: ...
    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int: ...
    def get_earliest_message_time(self, topic: str, queue_id: int) -> int: ...
    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, offset: int) -> int: ...
    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int: ...

    def select_one_message_by_offset(
        self, commit_log_offset: int, size: int | None = None
    ) -> bytes | None: ...
    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None: ...
    def query_message(
        self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int
    ) -> QueryResult: ...

    def delete_topics(self, topics: set[str]) -> int: ...
    def clean_unused_topics(self, keep: set[str]) -> int: ...
    def queue_ids_of(self, topic: str) -> set[int]: ...
    def add_arrival_listener(self, listener: ArrivalListener, topic: str | None = None) -> None: ...

    def get_max_phy_offset(self) -> int: ...
    def get_min_phy_offset(self) -> int: ...
    def get_flushed_phy_offset(self) -> int: ...
    def dispatch_behind_bytes(self) -> int: ...
    def runtime_info(self) -> dict[str, Any]: ...


class InternalStoreAPI(MessageStoreAPI, Protocol):
    """The facade as the store's own delivery services see it: MessageStoreAPI plus the consume-queue
    table, which the schedule and timer services scan for their system topics (Java's
    ScheduleMessageService and TimerMessageStore hold the DefaultMessageStore itself).
    """

    @property
    def queues(self) -> ConsumeQueueTable: ...
