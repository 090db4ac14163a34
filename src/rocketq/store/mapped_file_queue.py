"""MappedFileQueue: a directory of equal-size mapped files named by their 20-digit start offsets.

Port of org.apache.rocketmq.store.MappedFileQueue and AllocateMappedFileService. The allocator creates
the next file of a queue on a worker thread right after a roll, so the append that needs it later finds
it ready (the hot path never waits for file creation unless it outruns the allocator).
Deviation: load() refuses a gap between files (StoreCorruptError naming the missing offset) instead of
serving wrong offsets from a misaligned list.
"""

from __future__ import annotations

import errno
import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rocketq.store.disk_space import disk_free_bytes
from rocketq.store.errors import StoreCorruptError
from rocketq.store.mapped_file import TMP_SUFFIX, MappedFile, is_mapped_file_name, offset_to_file_name

log = logging.getLogger("rocketq.store")


class FileAllocator:
    """Creates the next file of a queue and reserves file space ahead of the writer, on one worker
    thread (Java AllocateMappedFileService, plus the warming that Java does when warmMapedFileEnable)."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._pending: dict[Path, Future[MappedFile]] = {}
        self._reserving: dict[int, Future[None]] = {}

    def _submit(self, fn: Any, *args: Any, **kwargs: Any) -> Future[Any]:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="AllocateMappedFile")
        return self._executor.submit(fn, *args, **kwargs)

    def prepare(self, path: Path, offset: int, size: int, reserve: Reservation) -> None:
        """Create the file at `path` in the background, its first window reserved (not when the disk has
        no room for the whole file: the writer then finds out itself, and refuses puts)."""
        if path in self._pending or path.exists():
            return
        if reserve.keep_free and disk_free_bytes(path.parent) < size + reserve.keep_free:
            return
        self._pending[path] = self._submit(_create_reserved, path, offset, size, reserve)

    def has_pending(self, path: Path) -> bool:
        return path in self._pending

    def take(self, path: Path, offset: int, size: int) -> MappedFile:
        """The prepared file, or a file created now (unreserved) when none was prepared."""
        future = self._pending.pop(path, None)
        if future is not None:
            try:
                return future.result()
            except Exception as exc:  # the synchronous attempt below reports it if it persists
                log.warning("pre-creating %s failed (%r); creating it now", path, exc)
        return MappedFile(path, offset, size)

    def discard(self, path: Path) -> None:
        """Delete the file prepared at `path`, if one was (its queue will not use it)."""
        future = self._pending.pop(path, None)
        if future is None:
            return
        try:
            future.result().destroy()
        except Exception as exc:
            log.warning("discarding the prepared %s failed: %r", path, exc)

    def reserve_async(self, mapped: MappedFile, upto: int, reserve: Reservation) -> None:
        """Reserve [mapped.reserved, upto) in the background unless a reservation is under way."""
        key = id(mapped)
        running = self._reserving.get(key)
        if running is not None and not running.done():
            return
        self._reserving[key] = self._submit(_reserve_quietly, mapped, upto, reserve)
        if len(self._reserving) > 64:
            self._reserving = {k: f for k, f in self._reserving.items() if not f.done()}

    def shutdown(self) -> None:
        """Wait for pending work and close prepared files; the empty files stay (load() accepts them)."""
        pending, self._pending = self._pending, {}
        for future in pending.values():
            try:
                future.result().close()
            except Exception:
                pass
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self._reserving = {}


def check_free_space(directory: Path, needed: int, path: Path) -> None:
    """Raise OSError(ENOSPC) unless the file system of `directory` has `needed` bytes free for `path`."""
    free = disk_free_bytes(directory)
    if 0 <= free < needed:
        raise OSError(errno.ENOSPC, f"{free} bytes free, a new file needs {needed}", str(path))


class Reservation:
    """How far ahead of the writer, and how, file space is reserved (see MappedFile.reserve)."""

    __slots__ = ("advice", "ahead", "keep_free", "preallocate")

    def __init__(self, ahead: int = 0, preallocate: bool = False, advice: int = 0) -> None:
        self.ahead = ahead if (preallocate or advice) else 0
        self.preallocate = preallocate
        self.advice = advice
        # Free bytes a reservation ahead leaves on the disk (the store's headroom): ahead of need, a
        # window shrinks to what the disk can spare instead of failing (a failed fallocate on tmpfs
        # takes the space for a moment, and its ENOSPC each window would only be noise).
        self.keep_free = 0


def _create_reserved(path: Path, offset: int, size: int, reserve: Reservation) -> MappedFile:
    mapped = MappedFile(path, offset, size)
    _reserve_quietly(mapped, reserve.ahead, reserve)
    return mapped


def _reserve_quietly(mapped: MappedFile, upto: int, reserve: Reservation) -> None:
    if reserve.keep_free and reserve.preallocate:
        spare = disk_free_bytes(mapped.path.parent) - reserve.keep_free
        upto = min(upto, mapped.reserved + max(0, spare))
        if upto <= mapped.reserved:
            return  # no room to spare: the writer reserves what it needs as it goes
    try:
        mapped.reserve(upto, preallocate=reserve.preallocate, advice=reserve.advice)
    except OSError as exc:  # the append path reserves inline and reports it as a put status
        log.warning("reserving space in %s failed: %r", mapped.path, exc)


class MappedFileQueue:
    """Files of `file_size` bytes; file i covers [i.file_from_offset, i.file_from_offset + file_size)."""

    def __init__(
        self,
        directory: Path,
        file_size: int,
        *,
        allocator: FileAllocator | None = None,
        reservation: Reservation | None = None,
        lazy: bool = False,
    ) -> None:
        self.directory = directory
        self.file_size = file_size
        self.lazy = lazy  # load() leaves the files unmapped until used (the owner maps them)
        self.allocator = allocator
        self.reservation = reservation or Reservation()
        self.files: list[MappedFile] = []
        self.flushed_where = 0
        self.create_needs = 0  # free bytes the file system must have to create a file (0: no check)

    # -- open / close --------------------------------------------------------------------------------
    def load(self) -> None:
        """Map the existing files, or with `lazy` only list them (all marked full; recovery then finds the
        real end of the last ones)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for name in os.listdir(self.directory):
            if name.endswith(TMP_SUFFIX):  # a creation interrupted by a crash
                log.warning("removing %s, left by an interrupted file creation", self.directory / name)
                (self.directory / name).unlink(missing_ok=True)
        names = sorted(name for name in os.listdir(self.directory) if is_mapped_file_name(name))
        expected: int | None = None
        for name in names:
            path = self.directory / name
            offset = int(name)
            if offset % self.file_size:
                raise StoreCorruptError(
                    str(path), f"start offset is not a multiple of the file size {self.file_size}"
                )
            if expected is not None and offset != expected:
                raise StoreCorruptError(str(self.directory / offset_to_file_name(expected)), "file missing")
            size = path.stat().st_size
            if size != self.file_size:
                raise StoreCorruptError(str(path), f"file is {size} bytes, expected {self.file_size}")
            mapped = MappedFile(path, offset, self.file_size, lazy=self.lazy)
            mapped.wrote_position = mapped.flushed_position = self.file_size  # reserved stays 0: unknown
            self.files.append(mapped)
            expected = offset + self.file_size

    def close(self) -> None:
        for mapped in self.files:
            mapped.close()

    def destroy(self) -> None:
        """Delete every file and the directory (a deleted topic's queue)."""
        for mapped in self.files:
            mapped.destroy()
        self.files = []
        self.flushed_where = 0
        try:
            self.directory.rmdir()
        except OSError:
            pass

    # -- lookup --------------------------------------------------------------------------------------
    def first(self) -> MappedFile | None:
        return self.files[0] if self.files else None

    def last(self) -> MappedFile | None:
        return self.files[-1] if self.files else None

    @property
    def min_offset(self) -> int:
        return self.files[0].file_from_offset if self.files else 0

    @property
    def max_offset(self) -> int:
        if not self.files:
            return 0
        last = self.files[-1]
        return last.file_from_offset + last.wrote_position

    def find(self, offset: int) -> MappedFile | None:
        """The file holding byte `offset`, or None when no file does."""
        files = self.files
        if not files:
            return None
        index = (offset - files[0].file_from_offset) // self.file_size
        if 0 <= index < len(files):
            mapped = files[index]
            if mapped.file_from_offset <= offset < mapped.file_from_offset + self.file_size:
                return mapped
        return None

    def get_last_or_create(self, start_offset: int = 0) -> MappedFile:
        """The last file if it has room, else a new one after it (or at `start_offset` when empty)."""
        last = self.files[-1] if self.files else None
        if last is not None and not last.is_full:
            return last
        offset = last.file_end_offset if last is not None else start_offset - start_offset % self.file_size
        path = self.directory / offset_to_file_name(offset)
        self.directory.mkdir(parents=True, exist_ok=True)
        prepared = path.exists() or (self.allocator is not None and self.allocator.has_pending(path))
        if self.create_needs and not prepared:
            check_free_space(self.directory, self.create_needs, path)
        if self.allocator is not None:
            mapped = self.allocator.take(path, offset, self.file_size)
            nxt = offset + self.file_size
            self.allocator.prepare(
                self.directory / offset_to_file_name(nxt), nxt, self.file_size, self.reservation
            )
        else:
            mapped = MappedFile(path, offset, self.file_size)
        self.files.append(mapped)
        return mapped

    def ensure_reserved(self, mapped: MappedFile, upto: int) -> None:
        """Make [.., upto) of `mapped` reserved now (raises OSError when the disk is full) and ask the
        allocator for the next window. Without reservation the whole file counts as reserved."""
        if mapped.reserved >= mapped.file_size:
            return
        reservation = self.reservation
        if not reservation.ahead:
            mapped.reserved = mapped.file_size
            return
        if upto > mapped.reserved:
            mapped.reserve(upto, preallocate=reservation.preallocate, advice=0)
        if self.allocator is not None:
            # A whole window past what is reserved, so the writer stays on its fast path for a window.
            self.allocator.reserve_async(mapped, max(mapped.reserved, upto) + reservation.ahead, reservation)

    # -- flush ---------------------------------------------------------------------------------------
    def flush(self, least_pages: int = 0) -> int:
        """Flush the files from `flushed_where` on (thread-safe); returns the new flushed_where."""
        files = list(self.files)  # the loop thread may roll or delete meanwhile
        where = self.flushed_where
        for mapped in files:
            if mapped.file_from_offset + mapped.file_size <= where or mapped.closed:
                continue
            mapped.flush(least_pages)
            where = mapped.file_from_offset + mapped.flushed_position
            if mapped.flushed_position < mapped.file_size:
                break
        if where > self.flushed_where:
            self.flushed_where = where
        return self.flushed_where

    @property
    def has_unflushed(self) -> bool:
        return self.max_offset > self.flushed_where

    # -- truncate / delete ---------------------------------------------------------------------------
    def truncate_dirty(self, offset: int) -> None:
        """Drop everything at or after `offset`: the file holding it ends there, later files go."""
        keep: list[MappedFile] = []
        for mapped in self.files:
            if mapped.file_from_offset + self.file_size <= offset:
                keep.append(mapped)
            elif mapped.file_from_offset <= offset:
                mapped.set_positions(offset - mapped.file_from_offset)
                keep.append(mapped)
            else:
                mapped.destroy()
        self.files = keep
        self.flushed_where = offset

    def delete_first_files(self, count: int) -> list[MappedFile]:
        """Delete the `count` oldest files (never the last one); returns those deleted."""
        count = min(count, len(self.files) - 1)
        if count <= 0:
            return []
        gone, self.files = self.files[:count], self.files[count:]
        for mapped in gone:
            mapped.destroy()
        return gone
