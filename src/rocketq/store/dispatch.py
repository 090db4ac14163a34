"""Dispatch: from an appended record to its consume-queue unit, its index entries and the arrival listeners.

Port of the CommitLogDispatcher chain (CommitLogDispatcherBuildConsumeQueue, ...BuildIndex) and the
message-arrival notification of ReputMessageService (4.9.8). Deviation, by measurement (bench/store.py
prints both): dispatch runs inline, right after the append on the same thread, with the fields the put
already holds. A reput task would have to parse every record back out of the commit log (topic, and
the properties for keys and tags), which costs more than the whole inline dispatch; and inline keeps
the queues exactly as far as the log, so `dispatch_behind_bytes` is 0 except while recovery re-dispatches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rocketq.common import constants as C
from rocketq.common.record.check import ParsedRecord, is_consumable
from rocketq.common.tags import tags_code as tags_code_of_tag
from rocketq.store.consume_queues import ConsumeQueueTable
from rocketq.store.delay import DelayLevels
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file import MappedFile
from rocketq.store.protocols import ArrivalListener

log = logging.getLogger("rocketq.store")


def notify_arrival(
    listeners: list[ArrivalListener],
    topic: str,
    queue_id: int,
    offset: int,
    tags_code: int,
    store_ts: int,
    props: dict[str, str] | None,
) -> None:
    """Tell `listeners` of one record now in its consume queue; a failing listener is logged and skipped."""
    for listener in listeners:
        try:
            listener(topic, queue_id, offset, tags_code, store_ts, props)
        except Exception:
            log.exception("message arrival listener failed for %s/%d", topic, queue_id)


class Dispatcher:
    """Builds what a record needs besides its bytes; the put path inlines `put` of the unit itself."""

    def __init__(
        self, queues: ConsumeQueueTable, index: IndexService | None, delay_levels: DelayLevels
    ) -> None:
        self.queues = queues
        self.index = index
        self.delay_levels = delay_levels
        self.listeners: list[ArrivalListener] = []  # told of every record
        self.topic_listeners: dict[str, list[ArrivalListener]] = {}  # told of one topic's records
        self.on_listeners_change: list[Callable[[], None]] = []  # the put path drops its lists by topic
        self.units_repaired = 0  # units that recovery found wrong and rewrote from the commit log
        self.repaired_files: set[MappedFile] = set()  # consume-queue files to force after recovery

    def tags_code(self, topic: str, properties: dict[str, str], store_timestamp: int) -> int:
        """The tags code of a stored record as a rebuild computes it (the put path takes the broker's)."""
        if topic == C.RMQ_SYS_SCHEDULE_TOPIC:
            return self.delay_levels.tags_code_from_properties(properties, store_timestamp)
        return tags_code_of_tag(properties.get(C.PROPERTY_TAGS))

    def add_listener(self, listener: ArrivalListener, topic: str | None = None) -> None:
        if topic is None:
            self.listeners.append(listener)
        else:
            self.topic_listeners.setdefault(topic, []).append(listener)
        for changed in self.on_listeners_change:
            changed()

    def listeners_of(self, topic: str) -> list[ArrivalListener]:
        """Every listener to tell of a record of `topic` (a new list: keep it until on_listeners_change)."""
        return self.listeners + self.topic_listeners.get(topic, [])

    def notify(
        self, topic: str, queue_id: int, offset: int, tags_code: int, store_ts: int, props: dict[str, str]
    ) -> None:
        notify_arrival(self.listeners_of(topic), topic, queue_id, offset, tags_code, store_ts, props)

    def redispatch(self, record: ParsedRecord) -> None:
        """Dispatch a record read back from the commit log (recovery); idempotent.

        A unit already there that names another place or size (torn, overwritten, or a hole) is
        rewritten from the record: the commit log is the truth.
        """
        props = record.properties
        if is_consumable(record.sys_flag):
            queue = self.queues.find_or_create(record.topic, record.queue_id)
            offset = record.queue_offset
            if offset >= queue.max_offset:
                code = self.tags_code(record.topic, props, record.store_timestamp)
                queue.put(offset, record.phys_offset, record.size, code)
            elif offset >= queue.min_offset:
                unit = queue.unit(offset)
                if unit is not None and (unit[0] != record.phys_offset or unit[1] != record.size):
                    code = self.tags_code(record.topic, props, record.store_timestamp)
                    written = queue.repair(offset, record.phys_offset, record.size, code)
                    if written is not None:
                        self.units_repaired += 1
                        self.repaired_files.add(written)
        if self.index is not None:
            self.index.build(
                record.topic,
                record.phys_offset,
                record.store_timestamp,
                record.sys_flag,
                props.get(C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                props.get(C.PROPERTY_KEYS),
            )
