"""DiskSpace: whether the store's disk has room for more messages, checked often enough that it never
runs out under a writer.

Port of the disk-full half of org.apache.rocketmq.store.DefaultMessageStore.CleanCommitLogService
(isSpaceToDelete, isSpaceFull: used ratio over diskSpaceWarningLevelRatio marks the disk full in
RunningFlags, under it marks it OK again) and of the remark SendMessageProcessor answers a refused put
with. Deviations, so that a burst of puts cannot fill the disk between two checks (Java checks every
10 s and a fast writer then meets ENOSPC inside a mapping, which is SIGBUS):
- the disk is also full while it has less than `headroom` bytes free (room for a largest record plus
  the reservation windows of the consume queues and the index), whatever the ratio;
- once the disk is near either limit (within `near_bytes` of the headroom, or 5 points under the
  ratio), puts check the disk again (a few statvfs calls) every NEAR_CHECK_INTERVAL_S instead of
  waiting for the periodic check: in 10 ms a writer cannot use up the headroom;
- a reservation that failed with ENOSPC (commit log, consume queue, index; see mapped_file.reserve)
  marks the disk full at once (`mark_full`); a later check clears it once `probe` (the store's: reserve
  what the next append needs, write the index entries kept back) succeeds, tried at most every
  PROBE_INTERVAL_S.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from rocketq.store.config import MessageStoreConfig

log = logging.getLogger("rocketq.store")

DiskUsage = Callable[[Path], float]
FreeBytes = Callable[[Path], int]

# SendMessageProcessor's remark for SERVICE_NOT_AVAILABLE (RocketMQ 4.9.8), with the used ratios of the
# commit-log, consume-queue and index file systems as its diskUtil() prints them.
SERVICE_NOT_AVAILABLE_REMARK = (
    "service not available now. It may be caused by one of the following reasons: the broker's disk is "
    "full [{util}], messages are put to the slave, message store has been shut down, etc."
)
# DefaultMessageStore.checkStoreStatus logs one refused put in 50,000 (its printTimes counter), the first
# of each run of refusals: a producer retrying against a full disk must not fill the log (on that disk).
REFUSAL_LOG_EVERY = 50_000
NEAR_RATIO_POINTS = 0.05
PROBE_INTERVAL_S = 0.1
NEAR_CHECK_INTERVAL_S = 0.01


def disk_used_ratio(path: Path) -> float:
    """How full the file system holding `path` is (0.0 - 1.0), as Java counts it; -1 when unknown.

    Java's UtilAll.getDiskPartitionSpaceUsedPercent: used / (used + usable), with used = total - free
    (File.getFreeSpace, statvfs f_bfree) and usable = File.getUsableSpace (f_bavail): the Use% of `df`.
    Blocks reserved for root count neither as used nor as usable. (total - usable) / total instead counts
    them as used: 5 points fuller on a default ext4, and far more on a file system whose reserve is large,
    where the cleanup's forcible ratio (85 %) then deletes commit-log files that Java would keep. Java
    also rounds up to whole percents; the ratio here is not rounded.
    """
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    return used / entire if st.f_blocks > 0 and entire > 0 else -1.0


def disk_free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system holding `path` (-1: unknown)."""
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return -1


class DiskSpace:
    """The disk-full flag of the store (Java RunningFlags' DISK_FULL bit) and the checks that set it."""

    def __init__(
        self,
        config: MessageStoreConfig,
        headroom: int,
        usage: DiskUsage = disk_used_ratio,
        free_bytes: FreeBytes = disk_free_bytes,
    ) -> None:
        self.config = config
        self.headroom = headroom
        self.usage = usage
        self.free_bytes = free_bytes
        self.full = False
        self.reason = ""
        self.near = False  # close to a limit: puts check the disk themselves
        self.near_bytes = 4 * headroom
        self._checked_at = 0.0
        self.probe: Callable[[], None] | None = None  # raises OSError while the writer has no room
        self._failed = False  # a reservation failed and no probe has succeeded since
        self._probed_at = 0.0
        self.refusals = 0  # puts refused since the store was last writable (Java's printTimes)

    def _paths(self) -> list[Path]:
        cfg = self.config
        return [cfg.commit_log_dir, cfg.consume_queue_dir, cfg.index_dir]

    def _existing(self, path: Path) -> Path:
        while not path.exists() and path.parent != path:
            path = path.parent
        return path

    def check(self) -> bool:
        """Read the disk now; returns whether it is full (and logs each change once)."""
        self._checked_at = time.monotonic()
        warning = self.config.disk_space_warning_level_ratio_pct / 100
        reason = ""
        near = False
        for path in self._paths():
            path = self._existing(path)
            ratio = self.usage(path)
            free = self.free_bytes(path)
            if ratio > warning:
                reason = (
                    f"{path} is {ratio * 100:.1f}% full (diskSpaceWarningLevelRatio {warning * 100:.0f}%)"
                )
                break
            if 0 <= free < self.headroom:
                reason = f"{path} has {free} bytes free, under the {self.headroom} the store keeps in reserve"
                break

            near = near or ratio > warning - NEAR_RATIO_POINTS or 0 <= free < self.near_bytes
        if not reason and self._failed:
            reason = self._probe()
        self._set(reason)
        self.near = near or bool(reason)
        return self.full

    def check_if_near(self) -> bool:
        """The put path's check: read the disk again when it is near a limit and was not read within
        NEAR_CHECK_INTERVAL_S; returns whether it is full."""
        if self.near and time.monotonic() - self._checked_at >= NEAR_CHECK_INTERVAL_S:
            return self.check()
        return self.full

    def mark_full(self, exc: BaseException, what: str) -> None:
        """A reservation failed for lack of space: refuse puts until a check finds room again."""
        self.near = True
        self._failed = True
        self._probed_at = time.monotonic()
        self._set(f"{what}: {exc}")

    def _probe(self) -> str:
        """After a failed reservation: "" once the writer has room again, else why not."""
        now = time.monotonic()
        if now - self._probed_at < PROBE_INTERVAL_S:
            return self.reason or "a reservation failed"
        self._probed_at = now
        if self.probe is not None:
            try:
                self.probe()
            except OSError as exc:
                return f"still no room: {exc}"
        self._failed = False
        return ""

    def refused(self, why: str) -> None:
        """Count a refused put; the first of a run of refusals and every REFUSAL_LOG_EVERY-th is logged."""
        count = self.refusals
        self.refusals = count + 1
        if count % REFUSAL_LOG_EVERY == 0:
            log.warning(
                "the message store is not writable (%s); %d puts refused so far, one in %d is logged",
                why,
                count + 1,
                REFUSAL_LOG_EVERY,
            )

    def _set(self, reason: str) -> None:
        if reason and not self.full:
            log.error("the disk is full, the store refuses messages until it has room: %s", reason)
        elif not reason and self.full:
            log.info(
                "the disk has room again, the store accepts messages (was: %s; %d puts refused)",
                self.reason,
                self.refusals,
            )
            self.refusals = 0
        self.full = bool(reason)
        self.reason = reason

    def util_text(self) -> str:
        """Java's diskUtil(): used ratios (0-1) of the commit-log, consume-queue and index file systems."""
        cl, cq, index = (self.usage(self._existing(path)) for path in self._paths())
        return f"CL: {cl:5.2f} CQ: {cq:5.2f} INDEX: {index:5.2f}"

    def remark(self) -> str:
        return SERVICE_NOT_AVAILABLE_REMARK.format(util=self.util_text())
