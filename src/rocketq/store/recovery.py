"""Recovery at open: find the end of the commit log, cut a torn tail, and bring queues and index level with it.

Port of CommitLog.recoverNormally/recoverAbnormally and DefaultMessageStore.recover (4.9.8), with the
offsets of our checkpoint instead of timestamps. Rules:
1. The scan starts at the beginning of the file that holds the lower of the commit log's durable offset
   and the queues'/index's durable offset (after a clean shutdown these are the end of the log), and
   checks every record: magic, sizes, fields that walk to TOTALSIZE, PHYSICALOFFSET, and the body CRC.
2. Records at or past the queues' durable offset are dispatched again (idempotent: units go to the
   position their queue offset names; index entries below the index's next offset are skipped).
3. The first record that is not valid ends the log. If valid records follow it (later in the file or
   in a later file) and it lies below the durable offset, this is damage, not a torn tail: recovery
   stops with StoreCorruptError naming the file, rather than drop acknowledged messages. Otherwise the
   tail is cut: the file ends there, the bytes after it are zeroed, later files are deleted.
4. Consume-queue units of records past the end are dropped; the index re-indexes from the end.
5. Before the scan, the last units of every consume queue are checked against the records they name
   (magic code, TOTALSIZE, PHYSICALOFFSET, QUEUEID, QUEUEOFFSET): a torn or overwritten unit moves the
   re-dispatch start back to the end of the last sound unit before it, and re-dispatch rewrites every
   unit that disagrees with its record (rule 2 only adds missing ones for a unit that agrees).
A half-written record therefore never becomes readable: it fails rule 1 and is cut by rule 3.
6. On a full disk a re-dispatch that needs a consume-queue unit no reservation covers fails its
   reservation (ENOSPC) before anything is written: re-dispatch stops there (logged once), the scan
   goes on to find the end, and the report's `redispatch_stopped_at` tells the store to start with
   the disk marked full, reads served, and to dispatch the rest once there is room.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rocketq.common.record.check import RecordCheck, check_record
from rocketq.common.record.layout import (
    FIXED_SIZE_V4,
    LONG,
    MESSAGE_MAGIC_BYTES,
    MESSAGE_MAGIC_CODE,
    PHYSICALOFFSET_POS,
)
from rocketq.store.checkpoint import StoreCheckpoint
from rocketq.store.commit_log import CommitLog
from rocketq.store.consume_queue import ConsumeQueue
from rocketq.store.consume_queues import ConsumeQueueTable
from rocketq.store.dispatch import Dispatcher
from rocketq.store.errors import StoreCorruptError
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file import MappedFile, is_disk_full

log = logging.getLogger("rocketq.store")

_RESYNC_CANDIDATES = 10_000
TAIL_UNITS_CHECKED = 16  # the last units of each queue checked against the commit log at open
_NOWHERE = 1 << 62


@dataclass(slots=True)
class RecoveryReport:
    abnormal: bool
    scanned_from: int = 0
    end_offset: int = 0
    records_scanned: int = 0
    records_redispatched: int = 0
    truncated_tail: bool = False
    problem: str = ""
    damaged_queues: int = 0  # queues whose last units did not match the commit log
    units_repaired: int = 0  # consume-queue units rewritten from the commit log
    redispatch_stopped_at: int | None = None  # a full disk stopped re-dispatch at this record (rule 6)
    space_error: OSError | None = None  # why


def recover(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    dispatcher: Dispatcher,
    checkpoint: StoreCheckpoint,
    *,
    abnormal: bool,
    check_crc: bool = True,
) -> RecoveryReport:
    report = RecoveryReport(abnormal)
    files = commit_log.queue.files
    redispatch_from = min(
        checkpoint.logics_offset, checkpoint.index_offset if index is not None else checkpoint.logics_offset
    )
    if not files:
        _level_with(0, commit_log, queues, index, checkpoint)
        return report
    if len(queues) == 0:
        redispatch_from = 0  # the consume queues are gone (deleted by hand): rebuild them all
    else:
        repair_from, report.damaged_queues = _check_queue_tails(commit_log, queues)
        redispatch_from = min(redispatch_from, repair_from)
    first_index = _scan_start_index(
        files, min(checkpoint.physic_offset, redispatch_from), commit_log.file_size
    )
    report.scanned_from = files[first_index].file_from_offset
    # Every record scanned has its CRC checked (Java checkCRCOnRecover), durable or not: a flipped
    # bit below the durable offset is found here instead of being served.
    crc_from = 0 if check_crc else 1 << 62
    end, problem, at_file = _scan(files, first_index, redispatch_from, dispatcher, crc_from, report)
    report.end_offset = end
    if problem:
        report.problem = problem
        if end < checkpoint.physic_offset and _valid_data_after(files, at_file, end):
            raise StoreCorruptError(
                str(files[at_file].path),
                f"the record at commit-log offset {end} is damaged ({problem}) and valid records follow it; "
                "refusing to cut acknowledged messages: restore the file or move it and the later ones aside",
            )
        log.warning(
            "commit log: cutting the torn tail at offset %d in %s: %s", end, files[at_file].path.name, problem
        )
        report.truncated_tail = True
    cut = files[at_file]
    tail_dirty = abnormal or bool(problem)
    commit_log.queue.truncate_dirty(end)
    if tail_dirty and not cut.closed and cut.file_from_offset <= end < cut.file_end_offset:
        cut.zero_from(end - cut.file_from_offset, zero_run_ends=commit_log.max_record_size)
    _level_with(end, commit_log, queues, index, checkpoint)
    if tail_dirty:
        for mapped in commit_log.queue.files[first_index:]:
            mapped.force()
    report.units_repaired = dispatcher.units_repaired
    if dispatcher.repaired_files:
        log.warning("consume queues: %d unit(s) rewritten from the commit log", dispatcher.units_repaired)
        for mapped in dispatcher.repaired_files:
            mapped.force()
        dispatcher.repaired_files.clear()
    return report


def _check_queue_tails(commit_log: CommitLog, queues: ConsumeQueueTable) -> tuple[int, int]:
    """(commit-log offset to re-dispatch from so that every damaged tail unit is rewritten, or a huge
    number when none is damaged; how many queues had one)."""
    repair_from = _NOWHERE
    damaged = 0
    min_phy = commit_log.min_offset
    for queue in queues:
        first = max(queue.min_offset, queue.max_offset - TAIL_UNITS_CHECKED)
        damaged_at = (
            o for o in range(first, queue.max_offset) if _unit_damaged(commit_log, queue, o, min_phy)
        )
        bad = next(damaged_at, None)
        if bad is None:
            continue
        damaged += 1
        start = _end_of_sound_unit_before(commit_log, queue, bad, min_phy)
        log.warning(
            "consume queue %s/%d: the unit at offset %d does not match the commit log; re-dispatching from "
            "commit-log offset %d to rewrite it", queue.topic, queue.queue_id, bad, start,
        )  # fmt: skip
        repair_from = min(repair_from, start)
    return repair_from, damaged


def _unit_damaged(commit_log: CommitLog, queue: ConsumeQueue, offset: int, min_phy: int) -> bool:
    """Whether the unit at `offset` is torn or names something that is not its record. A hole (all
    zeros) is not damage, nor is a unit of a record already cleaned up."""
    unit = queue.unit(offset)
    if unit is None:
        return False
    phys, size, _tags_code = unit
    if size < FIXED_SIZE_V4:
        return unit != (0, 0, 0)
    if phys < min_phy:
        return False
    head = commit_log.record_head(phys, size)
    return head is None or head != (size, MESSAGE_MAGIC_CODE, queue.queue_id, offset, phys)


def _end_of_sound_unit_before(commit_log: CommitLog, queue: ConsumeQueue, bad: int, min_phy: int) -> int:
    """Where the record after the last sound unit before `bad` can start (the log's start if none)."""
    for offset in range(bad - 1, queue.min_offset - 1, -1):
        unit = queue.unit(offset)
        if unit is None or unit[1] < FIXED_SIZE_V4:
            continue
        if unit[0] < min_phy:
            break
        if not _unit_damaged(commit_log, queue, offset, min_phy):
            return unit[0] + unit[1]
    return min_phy


def _scan_start_index(files: list[MappedFile], offset: int, file_size: int) -> int:
    if offset < files[0].file_from_offset:
        return 0
    index = (offset - files[0].file_from_offset) // file_size
    if index < len(files):
        return index
    return max(0, len(files) - 3)  # the checkpoint is past the files: scan the last three as Java does


def _scan(
    files: list[MappedFile],
    first_index: int,
    redispatch_from: int,
    dispatcher: Dispatcher,
    crc_from: int,
    report: RecoveryReport,
) -> tuple[int, str, int]:
    """Walk the records; returns (end offset, problem or "", index of the file the end is in)."""
    index = first_index
    mapped = files[index]
    data_end = mapped.data_end()
    pos = 0
    while True:
        offset = mapped.file_from_offset + pos
        parse = offset >= redispatch_from and report.redispatch_stopped_at is None
        hole = _runs_into_hole(mapped, pos, data_end)
        if hole is not None:
            mapped.set_positions(pos)
            return offset, hole, index
        result = check_record(mapped.mm, pos, mapped.file_size, check_crc=offset >= crc_from, parse=parse)
        if result.kind is RecordCheck.VALID:
            record = result.record
            if record is not None and record.phys_offset != offset:
                return offset, f"PHYSICALOFFSET says {record.phys_offset}", index
            if record is None and _phys_offset_at(mapped, pos) != offset:
                return offset, f"PHYSICALOFFSET says {_phys_offset_at(mapped, pos)}", index
            report.records_scanned += 1
            if record is not None and report.redispatch_stopped_at is None:
                try:
                    dispatcher.redispatch(record)
                except OSError as exc:
                    if not is_disk_full(exc):
                        raise
                    _stop_redispatch(report, offset, exc)
                else:
                    report.records_redispatched += 1
            pos += result.size
            mapped.set_positions(pos)
        elif result.kind is RecordCheck.BLANK:
            mapped.set_positions(mapped.file_size)
            if index + 1 >= len(files):
                return mapped.file_end_offset, "", index
            index += 1
            mapped = files[index]
            data_end = mapped.data_end()
            pos = 0
        elif result.kind is RecordCheck.END:
            mapped.set_positions(pos)
            return offset, "", index
        else:
            mapped.set_positions(pos)
            return offset, result.problem, index


def _stop_redispatch(report: RecoveryReport, offset: int, exc: OSError) -> None:
    report.redispatch_stopped_at = offset
    report.space_error = exc
    log.error(
        "recovery: no room to re-dispatch the record at commit-log offset %d (%s); the store starts with "
        "its queues behind the commit log, serves reads, and dispatches the rest once the disk has room",
        offset,
        exc,
    )


def _runs_into_hole(mapped: MappedFile, pos: int, data_end: int) -> str | None:
    """None when the record at `pos` lies in the file's data; "" when the data ends there (the end of
    the log); a problem when a record's bytes run into a hole. Nothing past `data_end` is read through
    the mapping: a read fault in a hole of a tmpfs file allocates a page, SIGBUS on a full disk."""
    if data_end >= mapped.file_size:
        return None
    if pos + 8 > data_end:
        return ""
    total = int.from_bytes(mapped.mm[pos : pos + 4], "big", signed=True)
    magic = int.from_bytes(mapped.mm[pos + 4 : pos + 8], "big", signed=True)
    if magic == MESSAGE_MAGIC_CODE and pos + total > data_end:
        return f"record of {total} bytes runs past the file's data"
    return None


def _phys_offset_at(mapped: MappedFile, pos: int) -> int:
    (phys,) = LONG.unpack_from(mapped.mm, pos + PHYSICALOFFSET_POS)
    return int(phys)


def _valid_data_after(files: list[MappedFile], at_file: int, end: int) -> bool:
    """Whether a valid record lies after the damaged one at `end` (so it is not a tail)."""
    for mapped in files[at_file + 1 :]:
        if _runs_into_hole(mapped, 0, mapped.data_end()) is not None:
            continue
        if check_record(mapped.mm, 0, mapped.file_size, parse=False).kind is RecordCheck.VALID:
            return True
    mapped = files[at_file]
    start = end - mapped.file_from_offset
    data_end = mapped.data_end()
    hit = mapped.mm.find(MESSAGE_MAGIC_BYTES, start + 5, data_end)
    tries = 0
    while hit >= 0 and tries < _RESYNC_CANDIDATES:
        tries += 1
        candidate = hit - 4
        if _runs_into_hole(mapped, candidate, data_end) is not None:
            break
        checked = check_record(mapped.mm, candidate, mapped.file_size, parse=False)
        if (
            checked.kind is RecordCheck.VALID
            and _phys_offset_at(mapped, candidate) == mapped.file_from_offset + candidate
        ):
            return True
        hit = mapped.mm.find(MESSAGE_MAGIC_BYTES, hit + 1, data_end)
    return False


def _level_with(
    end: int,
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    checkpoint: StoreCheckpoint,
) -> None:
    """Make queues, index and checkpoint agree with a commit log that ends at `end`."""
    for queue in queues:
        queue.truncate_to_phys(end)
    if index is not None:
        index.truncate(end)
    checkpoint.physic_offset = min(checkpoint.physic_offset, end)
    checkpoint.logics_offset = min(checkpoint.logics_offset, end)
    checkpoint.index_offset = min(checkpoint.index_offset, end)
    commit_log.set_current()
    min_phy = commit_log.min_offset
    for queue in queues:
        queue.correct_min_offset(min_phy)
