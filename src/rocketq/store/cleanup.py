"""Cleanup: delete expired commit-log files, then the queue and index files that point only below them.

Port of DefaultMessageStore.{CleanCommitLogService, CleanConsumeQueueService} (4.9.8). A commit-log file
is expired fileReservedTime hours after it was finished; expired files are deleted at the deleteWhen
hours, or at any hour when the disk is fuller than diskMaxUsedSpaceRatio; above
diskSpaceCleanForciblyRatio the oldest files go even unexpired (cleanFileForciblyEnable); above
diskSpaceWarningLevelRatio the store refuses puts (disk full) until space is back (the flag and its
finer checks live in disk_space.DiskSpace, which this round also updates). At most 10 files per
round, oldest first, never the file being written. Deviation: a file's finish time is the STORETIMESTAMP
of the first record of the next file (Java reads the file's modification time), so cleanup follows
the injected clock exactly.
"""

from __future__ import annotations

import datetime as _dt
import logging

from rocketq.common.clock import Clock
from rocketq.common.record.check import RecordCheck, check_record
from rocketq.common.record.layout import store_timestamp_of
from rocketq.store.commit_log import CommitLog
from rocketq.store.config import MessageStoreConfig
from rocketq.store.consume_queues import ConsumeQueueTable
from rocketq.store.disk_space import DiskSpace, DiskUsage, disk_used_ratio
from rocketq.store.index_service import IndexService

log = logging.getLogger("rocketq.store")

DELETE_FILES_BATCH_MAX = 10
__all__ = ["CleanupService", "DiskUsage", "disk_used_ratio"]


class CleanupService:
    def __init__(
        self,
        config: MessageStoreConfig,
        clock: Clock,
        commit_log: CommitLog,
        queues: ConsumeQueueTable,
        index: IndexService | None,
        space: DiskSpace,
    ) -> None:
        self.config = config
        self.clock = clock
        self.commit_log = commit_log
        self.queues = queues
        self.index = index
        self.space = space
        self.disk_usage = space.usage
        self._manual_deletes = 0
        self._cleaned_below = -1

    @property
    def disk_full(self) -> bool:
        return self.space.full

    def execute_delete_files_manually(self) -> None:
        """Admin's DELETE_EXPIRED_COMMITLOG: the next rounds delete expired files whatever the hour."""
        self._manual_deletes = 20

    def run_once(self) -> int:
        """One round (commit log, then queues and index); returns how many commit-log files went."""
        deleted = self.clean_commit_log()
        self.clean_consume_queues()
        return deleted

    def _is_time_to_delete(self) -> bool:
        hour = _dt.datetime.fromtimestamp(self.clock.now_ms() / 1000).hour
        return hour in self.config.delete_hours

    def _space(self) -> tuple[bool, bool]:
        """(over diskMaxUsedSpaceRatio, over the forcible-clean ratio); updates the disk-full flag."""
        cfg = self.config
        ratio = self.disk_usage(cfg.commit_log_dir)
        self.space.check()
        forcibly = cfg.clean_file_forcibly_enable and ratio > cfg.disk_space_clean_forcibly_ratio_pct / 100
        return ratio < 0 or ratio > cfg.disk_max_used_space_ratio_pct / 100, forcibly

    def clean_commit_log(self) -> int:
        space_full, forcibly = self._space()
        manual = self._manual_deletes > 0
        if manual:
            self._manual_deletes -= 1
        if not (self._is_time_to_delete() or space_full or manual):
            return 0
        reserved_ms = int(self.config.file_reserved_time_h * 3_600_000)
        now = self.clock.now_ms()
        files = self.commit_log.queue.files
        count = 0
        while count < min(len(files) - 1, DELETE_FILES_BATCH_MAX):
            finished_at = self._finish_time(count + 1)
            if finished_at < 0:
                break
            if not (forcibly or now >= finished_at + reserved_ms):
                break
            count += 1
        if count:
            gone = self.commit_log.queue.delete_first_files(count)
            log.info(
                "deleted %d commit-log file(s) %s..%s (space full: %s, forcibly: %s)",
                len(gone), gone[0].path.name, gone[-1].path.name, space_full, forcibly,
            )  # fmt: skip
        return count

    def _finish_time(self, next_index: int) -> int:
        """STORETIMESTAMP of the first record of file `next_index`: when the file before it was done."""
        mapped = self.commit_log.queue.files[next_index]
        if (
            check_record(mapped.mm, 0, mapped.file_size, check_crc=False, parse=False).kind
            is not RecordCheck.VALID
        ):
            return -1
        return store_timestamp_of(mapped.mm, 0)

    def clean_consume_queues(self) -> None:
        min_phy = self.commit_log.min_offset
        if min_phy == self._cleaned_below:
            return
        self._cleaned_below = min_phy
        for queue in self.queues:
            queue.delete_expired_files(min_phy)
        if self.index is not None:
            self.index.delete_expired(min_phy)
