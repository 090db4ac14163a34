"""MappedFile: one fixed-size file mapped with mmap, with its wrote, flushed and reserved positions.

Port of org.apache.rocketmq.store.MappedFile. Deviations: no reference counting (one event-loop thread
reads and writes; only flushes and reservations run on worker threads, and a lock keeps those and a
close apart); no transient store pool. No descriptor is kept: the file is opened, mapped and closed
again (Python's mmap keeps a duplicate of its own, and none from 3.13 on, with trackfd=False), so a
mapped file costs one descriptor at most. A flush is msync(MS_SYNC) of the range written since the last
one through ctypes: on Linux that is fdatasync of the file's range, and unlike mmap.flush it releases
the GIL.
A file may be unmapped while it is idle (`unmap()`, consume queues do) and mapped again on use
(`map()`); a flush of an unmapped file with unflushed writes opens a short-lived descriptor for
fdatasync. Files are created sparse; `reserve()` then allocates disk blocks (fallocate, through a
short-lived descriptor) and faults pages in (MADV_POPULATE_WRITE) a window ahead of the writer, on a
worker thread. This replaces Java's warmMappedFile: the first write to a page of a shared mapping costs
a page fault plus ext4's page_mkwrite, microseconds per 4 KiB that would otherwise land on the append
path; and a full disk fails the reservation (a status for the put) instead of a write into the mapping
(SIGBUS).
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import sys
import threading
from pathlib import Path
from typing import Any

from rocketq.common.persist import fsync_directory
from rocketq.store.errors import StoreCorruptError

OS_PAGE_SIZE = 4096
FILE_NAME_DIGITS = 20
# madvise advice values (Linux >= 5.14); Python 3.11 does not name them.
MADV_POPULATE_READ = 22
MADV_POPULATE_WRITE = 23
MS_SYNC = 4  # Linux
TMP_SUFFIX = ".tmp"
# From Python 3.13 a mapping need not keep a descriptor of its own (nothing here resizes a map).
_MMAP_OPTIONS: dict[str, Any] = {"trackfd": False} if sys.version_info >= (3, 13) else {}


def _unmapped() -> mmap.mmap:
    """A closed map: what `mm` holds while a file is not mapped (any use raises ValueError)."""
    closed = mmap.mmap(-1, OS_PAGE_SIZE)
    closed.close()
    return closed


_UNMAPPED = _unmapped()


def offset_to_file_name(offset: int) -> str:
    """20-digit zero-padded name of a file starting at `offset` (Java UtilAll.offset2FileName)."""
    return f"{offset:0{FILE_NAME_DIGITS}d}"


def is_mapped_file_name(name: str) -> bool:
    return len(name) == FILE_NAME_DIGITS and name.isdigit()


class MappedFile:
    """A file of `file_size` bytes starting at global offset `file_from_offset`, mapped read-write.

    Invariants: 0 <= flushed_position <= wrote_position <= file_size; bytes below wrote_position are
    whole records (or units); a flush makes everything below the wrote position it saw durable;
    bytes below `reserved` have their disk blocks allocated. With `lazy`, an existing file is mapped
    on the first `map()` only.
    """

    __slots__ = (
        "_addr",
        "_closed",
        "_lock",
        "_sync_all",
        "file_from_offset",
        "file_size",
        "flushed_position",
        "mm",
        "path",
        "reserved",
        "wrote_position",
    )

    def __init__(self, path: Path, file_from_offset: int, file_size: int, *, lazy: bool = False) -> None:
        self.path = path
        self.file_from_offset = file_from_offset
        self.file_size = file_size
        self.wrote_position = 0
        self.flushed_position = 0
        self.reserved = 0
        self._sync_all = False  # the next flush syncs the whole mapping (set_positions cut the file back)
        self._lock = threading.Lock()
        self._closed = False
        self.mm = _UNMAPPED
        self._addr = 0  # address of the mapping; 0 while unmapped
        if not path.exists():
            # Created under a temporary name and renamed once full-size: a crash mid-creation
            # leaves a .tmp file (load() deletes it), never a short file under a real name.
            tmp = path.with_name(path.name + TMP_SUFFIX)
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.ftruncate(fd, file_size)
                os.rename(tmp, path)
                # The new name must survive a power loss with the records later synced into the file
                # (fsync of the file alone does not promise its directory entry).
                fsync_directory(path.parent)
            except BaseException:
                os.close(fd)
                tmp.unlink(missing_ok=True)
                raise
            try:
                self._map_fd(fd)
            except BaseException:
                path.unlink(missing_ok=True)
                raise
            finally:
                os.close(fd)
        elif lazy:
            size = path.stat().st_size
            if size != file_size:
                raise StoreCorruptError(str(path), f"file is {size} bytes, expected {file_size}")
        else:
            self.map()

    def _map_fd(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        if size != self.file_size:
            raise StoreCorruptError(str(self.path), f"file is {size} bytes, expected {self.file_size}")
        mm = mmap.mmap(
            fd, self.file_size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE, **_MMAP_OPTIONS
        )
        self._addr = address_of(mm)
        self.mm = mm

    # -- mapping -------------------------------------------------------------------------------------
    @property
    def is_mapped(self) -> bool:
        return self._addr != 0

    def map(self) -> mmap.mmap:
        """The mapping, made now if the file is not mapped (raises OSError, StoreCorruptError)."""
        if self._addr:
            return self.mm
        with self._lock:
            if self._closed:
                raise ValueError(f"{self.path.name} is closed")
            if not self._addr:
                fd = os.open(self.path, os.O_RDWR)
                try:
                    self._map_fd(fd)
                finally:
                    os.close(fd)
        return self.mm

    def unmap(self) -> bool:
        """Unmap an idle file (its descriptor goes with it); False when it cannot be now."""
        with self._lock:
            if not self._addr:
                return False
            try:
                self.mm.close()
            except BufferError:
                return False  # a view over the map is alive: it stays mapped
            self.mm = _UNMAPPED
            self._addr = 0
        return True

    # -- positions ---------------------------------------------------------------------------------
    @property
    def file_end_offset(self) -> int:
        return self.file_from_offset + self.file_size

    @property
    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    @property
    def closed(self) -> bool:
        return self._closed

    def set_positions(self, position: int) -> None:
        """After recovery: everything below `position` is valid and was flushed (it was read from disk)."""
        if position < max(self.wrote_position, self.flushed_position):
            self._sync_all = True
        self.wrote_position = position
        self.flushed_position = position
        self.reserved = max(self.reserved, position)

    # -- reservation ---------------------------------------------------------------------------------
    def reserve(self, upto: int, *, preallocate: bool = True, advice: int = MADV_POPULATE_WRITE) -> None:
        """Allocate blocks and fault pages in for [reserved, upto) (thread-safe; raises OSError ENOSPC)."""
        upto = min(self.file_size, -(-upto // OS_PAGE_SIZE) * OS_PAGE_SIZE)
        start = self.reserved
        if upto <= start:
            return
        if preallocate:
            with self._lock:  # not across populate: a group-commit flush must not wait for it
                if self._closed:
                    return
                _preallocate(self.path, start, upto - start)
        if advice and not self._closed and self._addr:
            try:
                populate(self.mm, start, upto - start, advice)
            except (ValueError, BufferError):
                return  # closed meanwhile
        if upto > self.reserved:
            self.reserved = upto

    # -- io ----------------------------------------------------------------------------------------
    def read(self, position: int, size: int) -> bytes:
        return self.mm[position : position + size]

    def is_able_to_flush(self, least_pages: int) -> bool:
        wrote = self.wrote_position
        flushed = self.flushed_position
        if wrote <= flushed:
            return False
        if self.is_full or least_pages <= 0:
            return True
        return wrote // OS_PAGE_SIZE - flushed // OS_PAGE_SIZE >= least_pages

    def flush(self, least_pages: int = 0) -> int:
        """Write back the dirty pages (thread-safe, may run off the loop); returns the flushed position."""
        if not self.is_able_to_flush(least_pages):
            return self.flushed_position
        wrote = self.wrote_position
        flushed = self.flushed_position
        with self._lock:
            if self._closed:
                return self.flushed_position
            # Only the written range: the pages past `wrote` are the reservation's window, faulted in
            # writable (dirty zeros); syncing them wrote them back once before the records overwrote
            # them, and left them write-protected, so the writer faulted on each again.
            # A file cut back (set_positions below what was written: truncation in recovery or on a slave)
            # has rewritten bytes past the new positions; the next flush covers the whole mapping, as
            # every flush did before (Java's MappedFile.flush forces the whole buffer).
            if self._sync_all:
                self._sync_all = False
                self._sync()
            else:
                self._sync(flushed - flushed % OS_PAGE_SIZE, wrote)
        if wrote > self.flushed_position:
            self.flushed_position = wrote
        return self.flushed_position

    def force(self) -> None:
        """Write back whatever the positions say (recovery rewrites pages below the wrote position)."""
        with self._lock:
            if not self._closed:
                self._sync()

    def _sync(self, start: int = 0, end: int = -1) -> None:
        """Make the file's written pages in [start, end) durable, all of them by default; `start` is a
        page boundary (the lock is held)."""
        if self._addr:
            if end < 0:
                end = self.file_size
            if end > start:
                msync(self._addr + start, end - start)
            return
        # Unmapped since its last writes: the dirty pages are in the page cache, reach them by the file.
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)

    def data_end(self, *, last_extent: bool = False) -> int:
        """Where the file's first hole starts (its size when it has none), or with `last_extent` where
        its last stretch of data ends, so that a scan never reads a hole through the mapping: on tmpfs a
        read fault in a hole allocates a page, and on a full file system that is SIGBUS. A commit-log
        file is written from its start, so its data ends at the first hole; a consume-queue file may
        begin with a hole (a queue that starts in the middle of a file)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return self.file_size
        try:
            if not last_extent:
                return min(self.file_size, os.lseek(fd, 0, os.SEEK_HOLE))
            end = pos = 0
            while pos < self.file_size:
                try:
                    pos = os.lseek(fd, pos, os.SEEK_DATA)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:
                        break  # no data past pos
                    raise
                end = pos = os.lseek(fd, pos, os.SEEK_HOLE)
            return min(self.file_size, end)
        except OSError:
            return self.file_size  # SEEK_HOLE/SEEK_DATA unsupported: the file system reports no holes
        finally:
            os.close(fd)

    def zero_from(self, position: int, zero_run_ends: int | None = None, chunk: int = 1 << 20) -> None:
        """Overwrite [position, file end) with zeros, skipping chunks that are zero already.

        Used when recovery cuts a torn tail, so that a later scan never meets stale bytes past the new
        end (they could otherwise line up with new records). With `zero_run_ends`, stop once that many
        bytes in a row were zero already: writes are contiguous, so nothing lies past a gap longer than
        the largest record.
        """
        zeros = bytes(chunk)
        pos = position
        zero_run = 0
        limit = self.data_end()  # a hole reads as zeros already (and must not be faulted in)
        while pos < limit:
            end = min(pos + chunk, limit)
            if self.mm[pos:end] != zeros[: end - pos]:
                self.mm[pos:end] = zeros[: end - pos]
                zero_run = 0
            else:
                zero_run += end - pos
                if zero_run_ends is not None and zero_run > zero_run_ends:
                    return
            pos = end

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._addr:
                self._addr = 0
                try:
                    self.mm.close()
                except BufferError:
                    # A view over the map is still alive somewhere; the map goes with the last one.
                    pass

    def destroy(self) -> None:
        """Close and delete the file."""
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def __repr__(self) -> str:
        return f"MappedFile({self.path.name}, wrote={self.wrote_position}, flushed={self.flushed_position})"


_libc: ctypes.CDLL | None = None


def _c_library() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _libc = libc
    return _libc


def address_of(mm: mmap.mmap) -> int:
    """The address of a mapping (the buffer export taken to read it is released at once)."""
    anchor = ctypes.c_char.from_buffer(mm)
    try:
        return ctypes.addressof(anchor)
    finally:
        del anchor


def msync(address: int, length: int) -> None:
    """msync(MS_SYNC) through ctypes, which releases the GIL (mmap.flush does not) while the kernel
    writes the range back: on Linux the same as fdatasync of the file's range."""
    if _c_library().msync(address, length, MS_SYNC) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"msync: {os.strerror(err)}")


def populate(mm: mmap.mmap, start: int, length: int, advice: int) -> bool:
    """Fault the pages of [start, start+length) in ahead of use (MADV_POPULATE_READ/WRITE).

    Called through ctypes so the GIL is released while the kernel works. False when the kernel does
    not know the advice (before Linux 5.14): the pages are then simply faulted in on use.
    """
    libc = _c_library()
    anchor = ctypes.c_char.from_buffer(mm)  # an export of the map, released below before any close
    try:
        start -= start % OS_PAGE_SIZE
        return bool(libc.madvise(ctypes.addressof(anchor) + start, length, advice) == 0)
    finally:
        del anchor


def is_disk_full(exc: BaseException) -> bool:
    """Whether an error says the file system has no room (for this user or at all)."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def read_range(path: Path, start: int, end: int) -> bytes:
    """Bytes [start, end) of a file read with pread, never through a mapping: a hole reads as zeros
    without a page being allocated for it (a read fault in a tmpfs hole allocates one, and on a full
    tmpfs that is SIGBUS), so loading a store on a full disk is safe."""
    fd = os.open(path, os.O_RDONLY)
    try:
        parts: list[bytes] = []
        pos = start
        while pos < end:
            chunk = os.pread(fd, end - pos, pos)
            if not chunk:
                break
            parts.append(chunk)
            pos += len(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def _preallocate(path: Path, start: int, length: int) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, start, length)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            return  # the file system cannot; sparse it stays
        raise
    finally:
        os.close(fd)
