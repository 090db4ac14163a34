"""TimerBucketLog: pending timer entries on disk, one append-only file per window of delivery time.

Our own structure (RocketMQ 5 keeps a TimerWheel of slots plus a TimerLog of linked entries; ours is
a design that holds many pending timers without keeping them in memory). An entry is 20
bytes, `>qqi` = (deliver ms, commit-log offset, size) of the message parked in the timer topic; the
file of an entry is named by its window, `deliver_ms // window_ms`, in 20 digits, under timerlog/.
Only the window being delivered is read into memory. A torn last entry (a crash mid-write) is
ignored; an entry written twice (re-ingested after a restart) is read once (de-duplicated by
commit-log offset). Writes go to the page cache (safe against a killed process); `flush()` fsyncs
the files written since the last flush, before the owner persists a checkpoint that relies on them.
"""

from __future__ import annotations

import logging
import os
import struct
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger("rocketq.store.timer")

ENTRY = struct.Struct(">qqi")


class TimerEntry(NamedTuple):
    """A pending timer message: when it is due and where its parked copy is in the commit log."""

    deliver_ms: int
    phys_offset: int
    size: int


class TimerBucketLog:
    def __init__(self, directory: Path, window_ms: int = 60_000) -> None:
        if window_ms <= 0:
            raise ValueError("the timer window must be positive")
        self.directory = directory
        self.window_ms = window_ms
        self._unflushed: set[int] = set()

    def window_of(self, deliver_ms: int) -> int:
        return deliver_ms // self.window_ms

    def window_end_ms(self, window: int) -> int:
        return (window + 1) * self.window_ms

    def _path(self, window: int) -> Path:
        return self.directory / f"{window:020d}"

    def append(self, entries: list[TimerEntry]) -> None:
        """Add entries to their windows' files (one write per window)."""
        if not entries:
            return
        by_window: dict[int, list[TimerEntry]] = defaultdict(list)
        for entry in entries:
            by_window[self.window_of(entry.deliver_ms)].append(entry)
        self.directory.mkdir(parents=True, exist_ok=True)
        for window, group in by_window.items():
            data = b"".join(ENTRY.pack(*e) for e in group)
            fd = os.open(self._path(window), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            self._unflushed.add(window)

    def load(self, window: int) -> list[TimerEntry]:
        """The window's entries, each commit-log offset once, in file order; [] when there is none."""
        try:
            data = self._path(window).read_bytes()
        except FileNotFoundError:
            return []
        usable = len(data) - len(data) % ENTRY.size
        if usable != len(data):
            log.warning("timer window %d: ignoring a torn entry at its end", window)
        seen: set[int] = set()
        out: list[TimerEntry] = []
        for deliver_ms, phys, size in ENTRY.iter_unpack(data[:usable]):
            if phys not in seen:
                seen.add(phys)
                out.append(TimerEntry(deliver_ms, phys, size))
        return out

    def windows(self) -> list[int]:
        """Every window that has a file, in time order."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        return sorted(int(n) for n in names if n.isdigit())

    def next_window_after(self, window: int) -> int | None:
        later = [w for w in self.windows() if w > window]
        return later[0] if later else None

    def pending_count(self) -> int:
        """Entries on disk (duplicates included): a cheap size of the backlog."""
        total = 0
        for window in self.windows():
            try:
                total += self._path(window).stat().st_size // ENTRY.size
            except FileNotFoundError:
                continue
        return total

    def drop(self, window: int) -> None:
        self._unflushed.discard(window)
        try:
            self._path(window).unlink()
        except FileNotFoundError:
            pass

    def take_unflushed(self) -> set[int]:
        """The windows written since the last call (take them on the writer's thread, fsync anywhere)."""
        windows, self._unflushed = self._unflushed, set()
        return windows

    def flush(self, windows: set[int] | None = None) -> None:
        """fsync `windows` (default: all written since the last flush) before a checkpoint relies on them."""
        if windows is None:
            windows = self.take_unflushed()
        for window in windows:
            try:
                fd = os.open(self._path(window), os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if windows:
            try:
                fd = os.open(self.directory, os.O_RDONLY)
            except OSError:
                return
            try:
                os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)
