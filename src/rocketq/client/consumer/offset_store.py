"""Consumer offsets: kept in memory, persisted on the brokers (CLUSTERING) or in a local file (BROADCASTING).

Port of org.apache.rocketmq.client.consumer.store.{OffsetStore, RemoteBrokerOffsetStore,
LocalFileOffsetStore} (4.9.8). Offsets are "next offset to consume". The remote store talks to brokers
through an injected OffsetBackend (the ClientInstance), so this module does no networking itself.
Deviation: the local file is our own JSON (a list of {topic, brokerName, queueId, offset}), written
atomically with a .bak (common/persist.py); its path does not include the random part of the client id
so that a restarted consumer finds it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
from collections.abc import Iterable
from typing import Protocol

from rocketq.client.config import ConsumeFromWhere, ConsumerConfig
from rocketq.common import constants as C
from rocketq.common.message import MessageQueue
from rocketq.common.persist import atomic_write_json, read_json

log = logging.getLogger("rocketq.client.offset")


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


NOT_FOUND = -1  # no offset stored: apply ConsumeFromWhere
UNKNOWN = -2  # the store could not be asked (broker down): try again later


class OffsetBackend(Protocol):
    """Broker side of the remote store (implemented by ClientInstance)."""

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int | None:
        """The broker's offset, None when it has none (QUERY_NOT_FOUND); raises when unreachable."""
        ...

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, *, oneway: bool = True
    ) -> None:
        """Commit: oneway for the periodic round, acknowledged when a queue is handed over."""
        ...


class OffsetStore:
    """The in-memory table both stores share."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._table: dict[MessageQueue, int] = {}

    async def load(self) -> None:
        return None

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool = False) -> None:
        if offset < 0:
            return
        old = self._table.get(mq)
        if old is None or not increase_only or offset > old:
            self._table[mq] = offset

    def read_memory(self, mq: MessageQueue) -> int:
        return self._table.get(mq, NOT_FOUND)

    async def read_from_store(self, mq: MessageQueue) -> int:
        return self.read_memory(mq)

    async def read_offset(self, mq: MessageQueue, how: ReadOffsetType) -> int:
        if how is ReadOffsetType.READ_FROM_MEMORY:
            return self.read_memory(mq)
        if how is ReadOffsetType.MEMORY_FIRST_THEN_STORE and mq in self._table:
            return self._table[mq]
        return await self.read_from_store(mq)

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        return None

    async def persist(self, mq: MessageQueue) -> None:
        """Persist one queue's offset and wait for it to be stored (a queue changing owner)."""
        await self.persist_all([mq])

    def remove_offset(self, mq: MessageQueue) -> None:
        self._table.pop(mq, None)

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]:
        return {mq: off for mq, off in self._table.items() if topic is None or mq.topic == topic}


class RemoteBrokerOffsetStore(OffsetStore):
    """CLUSTERING: the broker holding the queue keeps the group's offset."""

    def __init__(self, group: str, backend: OffsetBackend) -> None:
        super().__init__(group)
        self._backend = backend

    async def read_from_store(self, mq: MessageQueue) -> int:
        try:
            offset = await self._backend.query_consumer_offset(self.group, mq)
        except Exception as exc:
            log.warning("group %s: cannot read the offset of %s: %s", self.group, mq, exc)
            return UNKNOWN
        if offset is None:
            return NOT_FOUND
        self.update_offset(mq, offset)
        return offset

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        wanted = set(mqs)
        for mq, offset in list(self._table.items()):
            if mq in wanted:
                await self._commit(mq, offset, oneway=True)

    async def persist(self, mq: MessageQueue) -> None:
        offset = self._table.get(mq)
        if offset is not None:
            await self._commit(mq, offset, oneway=False)

    async def _commit(self, mq: MessageQueue, offset: int, *, oneway: bool) -> None:
        try:
            await self._backend.update_consumer_offset(self.group, mq, offset, oneway=oneway)
        except Exception as exc:
            log.warning("group %s: cannot commit offset %d of %s: %s", self.group, offset, mq, exc)


class LocalFileOffsetStore(OffsetStore):
    """BROADCASTING: every consumer keeps its own offsets in `<dir>/<client name>/<group>/offsets.json`."""

    def __init__(self, group: str, base_dir: str, client_name: str) -> None:
        super().__init__(group)
        self.path = os.path.join(base_dir, client_name.replace(os.sep, "_"), group, "offsets.json")

    async def load(self) -> None:
        data = read_json(self.path)
        if not isinstance(data, dict):
            return
        for entry in data.get("offsetTable", []):
            try:
                mq = MessageQueue(str(entry["topic"]), str(entry["brokerName"]), int(entry["queueId"]))
                self._table[mq] = int(entry["offset"])
            except (KeyError, TypeError, ValueError):
                log.warning("%s: skipping a bad offset entry %r", self.path, entry)

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        # The whole table is written each time (it is small); fsync off the event loop.
        entries = [
            {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": off}
            for mq, off in sorted(self._table.items())
        ]
        try:
            await asyncio.to_thread(atomic_write_json, self.path, {"offsetTable": entries})
        except OSError as exc:
            log.warning("group %s: cannot write offsets to %s: %s", self.group, self.path, exc)


class QueueBoundsSource(Protocol):
    """Broker queue bounds (implemented by ClientInstance)."""

    async def max_offset(self, mq: MessageQueue) -> int: ...

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int: ...


async def compute_pull_from_where(
    bounds: QueueBoundsSource, store: OffsetStore, config: ConsumerConfig, mq: MessageQueue
) -> int:
    """Where a consumer starts on `mq`: its committed offset, else what ConsumeFromWhere says.

    Java RebalancePushImpl.computePullFromWhereWithException: LAST -> the queue's max offset (0 for a
    retry topic), FIRST -> 0, TIMESTAMP -> the offset nearest consume_timestamp_ms (max for a retry
    topic). Returns -1 when the store or the broker cannot be asked now (the caller tries again later).
    """
    last = await store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
    if last >= 0:
        return last
    if last != NOT_FOUND:
        return -1
    where = config.consume_from_where
    is_retry = mq.topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX)
    try:
        if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
            if is_retry:
                return await bounds.max_offset(mq)
            return await bounds.search_offset(mq, config.consume_timestamp_ms or 0)
        return 0 if is_retry else await bounds.max_offset(mq)
    except Exception as exc:
        log.info("start offset of %s: %s", mq, exc)
        return -1
