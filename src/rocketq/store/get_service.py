"""The read path: get_message (a pull), lookups by queue offset, by commit-log offset, by time, by key.

Port of DefaultMessageStore.getMessage and its neighbours (4.9.8), status for status: NO_MATCHED_LOGIC_QUEUE,
NO_MESSAGE_IN_QUEUE, OFFSET_TOO_SMALL, OFFSET_OVERFLOW_ONE, OFFSET_OVERFLOW_BADLY, OFFSET_FOUND_NULL,
MESSAGE_WAS_REMOVING, NO_MATCHED_MESSAGE and FOUND with the same next-begin-offset rules, the same
batch limits (maxTransfer{Bytes,Count}OnMessageIn{Memory,Disk}, at least one message per pull) and the
same filter order (tags code from the consume queue, then the record). Records come back as the bytes
stored, ready to be concatenated into a pull body. Deviations: a hole in a consume queue (a unit lost
with the last crash) is skipped like a filtered unit; so is a unit whose record does not check out
(magic code, TOTALSIZE = the unit's size, PHYSICALOFFSET, QUEUEID and QUEUEOFFSET: a unit torn or
overwritten), logged once per queue, so bytes that are not the unit's record are never served (Java
serves whatever the unit points at); query_message checks each candidate's topic and keys, so an index
hash collision never returns a wrong message.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from mmap import mmap

from rocketq.common import constants as C
from rocketq.common.record.accel import load_extension
from rocketq.common.record.check import RecordCheck, check_record, unit_record_problem
from rocketq.common.record.layout import FIXED_SIZE_V4, MESSAGE_MAGIC_CODE, UNIT_RECORD_HEAD
from rocketq.store.commit_log import CommitLog
from rocketq.store.config import BrokerRole, MessageStoreConfig
from rocketq.store.consume_queue import CQ_UNIT
from rocketq.store.consume_queues import ConsumeQueueTable
from rocketq.store.index_service import IndexService
from rocketq.store.protocols import MessageFilter
from rocketq.store.status import GetMessageStatus, GetResult, QueryResult

log = logging.getLogger("rocketq.store")

_HEAD_UNPACK = UNIT_RECORD_HEAD.unpack_from
_NO_MATCHED = GetMessageStatus.NO_MATCHED_MESSAGE
_MAX_BAD_QUEUES_LOGGED = 10_000

# The compiled twin of the per-unit loop (_cpull.pyx) unless ROCKETQ_NO_EXTENSIONS is set or it was not built.
CPULL_API_VERSION = 2
_cpull = load_extension("rocketq.store._cpull", CPULL_API_VERSION)

# Java maxFilterMessageCount: a pull looks at no more than max(16000 bytes of units, maxMsgNums units).
MIN_UNITS_SCANNED = 16000 // 20


def total_physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 * 1024**3


class GetService:
    def __init__(
        self,
        config: MessageStoreConfig,
        commit_log: CommitLog,
        queues: ConsumeQueueTable,
        index: Callable[[], IndexService | None],
    ) -> None:
        self.config = config
        self.commit_log = commit_log
        self.queues = queues
        self._index = index
        self._bad_unit_logged: set[tuple[str, int]] = set()  # queues whose bad unit was logged
        self.bad_units_skipped = 0
        self.memory_bytes = int(total_physical_memory() * config.access_message_in_memory_max_ratio_pct / 100)

    def _correct(self, old: int, new: int) -> int:
        """Java nextOffsetCorrection: a slave keeps the client's offset unless offsetCheckInSlave."""
        cfg = self.config
        if cfg.broker_role is not BrokerRole.SLAVE or cfg.offset_check_in_slave:
            return new
        return old

    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        message_filter: MessageFilter | None = None,
        max_total_bytes: int | None = None,
        *,
        joined: bool = False,
    ) -> GetResult:
        queue = self.queues.get(topic, queue_id)
        if queue is None:
            # Java's findConsumeQueue creates an empty consume queue for any (topic, queue) it is asked about,
            # so a queue never written answers NO_MESSAGE_IN_QUEUE (the pull's remark), not NO_MATCHED_LOGIC_QUEUE.
            return GetResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, self._correct(offset, 0))
        min_offset, max_offset = queue.min_offset, queue.max_offset
        if max_offset == 0:
            status, nxt = GetMessageStatus.NO_MESSAGE_IN_QUEUE, self._correct(offset, 0)
        elif offset < min_offset:
            status, nxt = GetMessageStatus.OFFSET_TOO_SMALL, self._correct(offset, min_offset)
        elif offset == max_offset:
            status, nxt = GetMessageStatus.OFFSET_OVERFLOW_ONE, self._correct(offset, offset)
        elif offset > max_offset:
            status, nxt = GetMessageStatus.OFFSET_OVERFLOW_BADLY, self._correct(offset, max_offset)
        else:
            units = queue.units_from(offset, max(MIN_UNITS_SCANNED, max_count))
            if units is None:
                status = GetMessageStatus.OFFSET_FOUND_NULL
                nxt = self._correct(offset, queue.roll_next_file(offset))
            else:
                result = self._collect(
                    units, topic, queue_id, offset, max_count, message_filter, max_total_bytes, joined
                )
                result.min_offset, result.max_offset = min_offset, max_offset
                return result
        return GetResult(status, nxt, min_offset, max_offset)

    def _limits(self, in_disk: bool, max_bytes: int | None) -> tuple[int, int]:
        """(bytes, count) a pull may carry from records in memory or on disk (Java isTheBatchFull)."""
        cfg = self.config
        if in_disk:
            limit_bytes, limit_count = (
                cfg.max_transfer_bytes_on_message_in_disk,
                cfg.max_transfer_count_on_message_in_disk,
            )
        else:
            limit_bytes, limit_count = (
                cfg.max_transfer_bytes_on_message_in_memory,
                cfg.max_transfer_count_on_message_in_memory,
            )
        return (limit_bytes if max_bytes is None else max_bytes), limit_count

    def _collect(
        self,
        units: bytes,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        message_filter: MessageFilter | None,
        max_bytes: int | None,
        joined: bool,
    ) -> GetResult:
        """The records of `units` a pull returns (joined: in GetResult.body, one after the other). The
        per-unit loop is the pull's hottest code, compiled when _cpull was built (collect_units: a joined
        body is then written record by record from the mapping, one copy of each), else _collect_py: the
        same statuses, records, bytes and counts."""
        max_phy = self.commit_log.max_offset
        memory = self.memory_bytes
        in_memory_limits = self._limits(False, max_bytes)
        in_disk_limits = self._limits(True, max_bytes)
        body = b""
        if _cpull is None:
            status, scanned, records, offsets, max_phy_pulling = self._collect_py(
                units, topic, queue_id, offset, max_count, message_filter, max_phy, in_memory_limits, in_disk_limits
            )  # fmt: skip
            if joined:
                body, records = b"".join(records), []
        else:
            kind, scanned, got, offsets, max_phy_pulling = _cpull.collect_units(
                units, self.commit_log, message_filter, self._skip_bad_unit, topic, queue_id, offset, max_count,
                max_phy, memory, *in_memory_limits, *in_disk_limits, FIXED_SIZE_V4, joined,
            )  # fmt: skip
            body, records = (got, []) if joined else (b"", got)
            status = GetMessageStatus.MESSAGE_WAS_REMOVING if kind == _cpull.WAS_REMOVING else _NO_MATCHED
        if offsets:
            status = GetMessageStatus.FOUND
        return GetResult(
            status,
            offset + scanned,
            records=records,
            queue_offsets=offsets,
            suggest_pulling_from_slave=max_phy - max_phy_pulling > memory,
            body=body,
        )

    def _collect_py(
        self,
        units: bytes,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        message_filter: MessageFilter | None,
        max_phy: int,
        in_memory_limits: tuple[int, int],
        in_disk_limits: tuple[int, int],
    ) -> tuple[GetMessageStatus, int, list[bytes], list[int], int]:
        """(status, units scanned, records, their queue offsets, the last unit's commit-log offset) of a pull,
        in Python (_cpull.collect_units is its compiled twin): Java's isTheBatchFull with its two limit
        pairs taken once per pull, and the commit-log file of the previous record reused while the next one
        lies in its written part (CommitLog.written_part, looked up again only when a record lies outside)."""
        commit_log = self.commit_log
        memory = self.memory_bytes
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        records: list[bytes] = []
        offsets: list[int] = []
        total = 0
        next_file_start = -1
        max_phy_pulling = 0
        scanned = 0
        file_start = file_end = 0  # the written part of the commit-log file last read (none yet)
        mm: mmap | bytes = b""
        for phys, size, tags_code in CQ_UNIT.iter_unpack(units):
            max_phy_pulling = phys
            if next_file_start >= 0 and phys < next_file_start:
                scanned += 1
                continue
            if total:  # Java isTheBatchFull (nothing found yet: never full)
                count = len(records)
                if count >= max_count:
                    break
                limit_bytes, limit_count = in_disk_limits if max_phy - phys > memory else in_memory_limits
                if total + size > limit_bytes or count > limit_count - 1:
                    break
            scanned += 1
            if size < FIXED_SIZE_V4:
                continue  # a hole left by a crash (or a torn unit: no record is this small)
            if message_filter is not None and not message_filter.is_matched_by_consume_queue(tags_code):
                continue
            if not file_start <= phys or phys + size > file_end:
                part = commit_log.written_part(phys)
                if part is None or phys + size > part[1]:
                    file_start = file_end = 0
                    if total == 0:
                        status = GetMessageStatus.MESSAGE_WAS_REMOVING
                    next_file_start = commit_log.roll_next_file(phys)
                    continue
                file_start, file_end, mm = part
            pos = phys - file_start
            record = mm[pos : pos + size]
            total_size, magic, rec_queue_id, rec_queue_offset, rec_phys = _HEAD_UNPACK(record)
            if (
                magic != MESSAGE_MAGIC_CODE
                or total_size != size
                or rec_phys != phys
                or rec_queue_id != queue_id
                or rec_queue_offset != offset + scanned - 1
            ):
                self._skip_bad_unit(topic, queue_id, offset + scanned - 1, record, phys, size)
                continue
            if message_filter is not None and not message_filter.is_matched_by_commit_log(record, None):
                continue
            records.append(record)
            offsets.append(offset + scanned - 1)
            total += size
            status = GetMessageStatus.FOUND
            next_file_start = -1
        return status, scanned, records, offsets, max_phy_pulling

    def _skip_bad_unit(
        self, topic: str, queue_id: int, queue_offset: int, record: bytes, phys: int, size: int
    ) -> None:
        """A unit whose record does not check out is skipped like a hole; logged once per queue."""
        self.bad_units_skipped += 1
        key = (topic, queue_id)
        if key in self._bad_unit_logged or len(self._bad_unit_logged) >= _MAX_BAD_QUEUES_LOGGED:
            return
        self._bad_unit_logged.add(key)
        log.error(
            "consume queue %s/%d: the unit at offset %d is damaged (%s); skipped, as are any more in this queue",
            topic, queue_id, queue_offset, unit_record_problem(record, phys, size, queue_id, queue_offset),
        )  # fmt: skip

    # -- lookups ---------------------------------------------------------------------------------------
    def store_time_of_unit(self, topic: str, queue_id: int, offset: int) -> int:
        queue = self.queues.get(topic, queue_id)
        unit = queue.unit(offset) if queue is not None else None
        if unit is None or unit[1] <= 0:
            return -1
        return self.commit_log.store_timestamp(unit[0], unit[1])

    def earliest_message_time(self, topic: str, queue_id: int) -> int:
        queue = self.queues.get(topic, queue_id)
        if queue is None:
            return -1
        return self.store_time_of_unit(topic, queue_id, queue.min_offset)

    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        queue = self.queues.get(topic, queue_id)
        if queue is None:
            return 0
        return queue.offset_by_time(timestamp_ms, self.commit_log.min_offset, self.commit_log.store_timestamp)

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryResult:
        """Records of `topic` whose UNIQ_KEY or one of whose KEYS is `key`, stored in [begin, end]."""
        index = self._index()
        if index is None:
            return QueryResult()
        offsets, last_ts, last_phy = index.query(topic, key, max_num, begin, end)
        result = QueryResult(index_last_update_timestamp=last_ts, index_last_update_phy_offset=last_phy)
        for phys in sorted(set(offsets)):
            record = self.commit_log.read_record(phys)
            if record is not None and _has_key(record, topic, key):
                result.records.append(record)
        return result


def _has_key(record: bytes, topic: str, key: str) -> bool:
    checked = check_record(record, 0, len(record), check_crc=False)
    parsed = checked.record
    if checked.kind is not RecordCheck.VALID or parsed is None or parsed.topic != topic:
        return False
    props = parsed.properties
    if props.get(C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) == key:
        return True
    keys = props.get(C.PROPERTY_KEYS)
    return bool(keys) and key in keys.split(C.KEY_SEPARATOR)  # type: ignore[union-attr]
