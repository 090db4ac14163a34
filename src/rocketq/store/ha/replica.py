"""A slave's store side of replication: append the master's bytes, then dispatch the whole records.

Port of what a 4.9.8 slave does with HA data: CommitLog.appendData at the offset the master names,
then ReputMessageService builds the consume queues and the index from the records read back and tells
the long-polling listeners (a slave has no put path). Records are checked and parsed by
rocketq.common.record.check (no CRC, as Java's reput) and dispatched by Dispatcher.redispatch; a record split
between two frames waits for the rest. `dispatch_end` on the commit log tells the flush how far the
queues are complete, so a checkpoint never vouches for a record not dispatched yet.
"""

from __future__ import annotations

import logging

from rocketq.common.record.check import RecordCheck, check_record, is_consumable
from rocketq.store.commit_log import CommitLog
from rocketq.store.dispatch import Dispatcher

log = logging.getLogger("rocketq.store.ha")


class ReplicaWriter:
    def __init__(self, commit_log: CommitLog, dispatcher: Dispatcher) -> None:
        self.commit_log = commit_log
        self.dispatcher = dispatcher
        if (
            commit_log.dispatch_end is None
        ):  # recovery left queues and log level (unless a full disk stopped it)
            commit_log.dispatch_end = commit_log.max_offset
        self._stalled_at = -1  # where a damaged record stopped the dispatch (logged once)

    @property
    def dispatched(self) -> int:
        end = self.commit_log.dispatch_end
        return self.commit_log.max_offset if end is None else end

    def append(self, offset: int, data: bytes) -> int:
        """Append `data` at `offset` (ValueError on a gap or an overlap) and dispatch every record it
        completes; returns the commit log's new end."""
        if not data:
            return self.commit_log.max_offset
        was_empty = self.commit_log.max_offset == 0
        self.commit_log.append_raw(offset, data)
        if was_empty and offset:
            self.commit_log.dispatch_end = offset  # the log starts at the master's last file
        self.dispatch()
        return self.commit_log.max_offset

    def dispatch(self) -> int:
        """Dispatch the whole records from the dispatch end on; returns how many."""
        return dispatch_whole_records(self.commit_log, self.dispatcher, self)


def dispatch_whole_records(
    commit_log: CommitLog, dispatcher: Dispatcher, stall: ReplicaWriter | None = None
) -> int:
    """Dispatch the whole records from `commit_log.dispatch_end` on, moving it along; returns how many.

    A slave's ReplicaWriter, and a master whose recovery a full disk stopped (raises OSError while the
    disk has no room for the queues: what was dispatched stays dispatched, the end says how far).
    """
    at = commit_log.dispatch_end
    if at is None:
        return 0
    count = 0
    try:
        while True:
            mapped = commit_log.queue.find(at)
            if mapped is None or mapped.closed:
                break
            pos = at - mapped.file_from_offset
            written = mapped.wrote_position
            if written - pos < 4:
                break
            total = int.from_bytes(mapped.mm[pos : pos + 4], "big", signed=True)
            if written < pos + total <= commit_log.file_size:
                break  # the rest of the record (or of the end-of-file blank) is still on its way
            result = check_record(mapped.mm, pos, written, check_crc=False)
            if result.kind is RecordCheck.BLANK:
                at = mapped.file_end_offset
                continue
            record = result.record
            if result.kind is not RecordCheck.VALID or record is None:
                if result.kind is RecordCheck.CORRUPT and stall is not None and at != stall._stalled_at:
                    stall._stalled_at = at
                    log.error(
                        "replicated commit log: the record at %d does not check out: %s", at, result.problem
                    )
                break
            dispatcher.redispatch(record)
            commit_log.last_store_timestamp = record.store_timestamp
            if is_consumable(record.sys_flag):
                props = record.properties
                code = dispatcher.tags_code(record.topic, props, record.store_timestamp)
                dispatcher.notify(
                    record.topic, record.queue_id, record.queue_offset, code, record.store_timestamp, props
                )
            at += result.size
            count += 1
    finally:
        commit_log.dispatch_end = at
    return count
