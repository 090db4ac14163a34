"""A FUSE file system that passes everything through to a backing directory and, on command, loses
power: every write not yet made durable by fsync/fdatasync (msync reaches it as one) is undone.

Usage: python power_loss_fs.py BACKING MOUNTPOINT
Runs in the foreground until unmounted. Commands, one a line on standard input (answered on stdout):
  lose-power   from now on writes and syncs are ignored (the page cache the kernel still writes back
               after the process using the files died is lost with the power); once unmounted, the
               unsynced writes are undone in BACKING
  stats        one line of counters
  unsynced P   how many written pages under path P (of the mount, "/config") are not synced yet
It prints "MOUNTED" once the mount is up and "UNDONE <files> <pages>" when it undid writes at exit.

The model, as LazyFS's (the FUSE layer Jepsen uses) for data: a write goes to the backing file at once,
and before the first write to a 4 KiB page since the file's last sync the page's old bytes (and the
file's size) are kept in memory; fsync or fdatasync of the file forgets them (they are durable); losing
power writes them back and restores the size. Limits, documented in docs/fault-tests.md: metadata
(create, rename, unlink, mkdir, truncate, fallocate) is durable at once, so a missing fsync of a
directory is not caught; a sync makes the whole file durable (not a range: msync of part of a file
counts for all of it); shared writable mappings work because the mount keeps the kernel page cache (no
direct_io): the kernel sends their dirty pages as writes when it writes them back, always before the
fsync that msync(MS_SYNC) turns into, so durability is still decided by the process's own sync calls.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import mfusepy as fuse

PAGE = 4096


class FileUndo:
    """What a file held at its last sync: its size and the old bytes of each page written since."""

    __slots__ = ("pages", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.pages: dict[int, bytes] = {}


class PowerLossFS(fuse.Operations):  # type: ignore[misc]
    use_ns = True  # utimens gets nanoseconds

    def __init__(self, backing: str) -> None:
        self.backing = backing
        self._mutex = threading.RLock()
        self.undo: dict[str, FileUndo] = {}
        self.lost = False
        self.writes = 0
        self.syncs = 0
        self.ignored = 0

    def _full(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    # -- data --------------------------------------------------------------------------------------
    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        with self._mutex:
            if self.lost:
                self.ignored += 1
                return len(data)
            self.writes += 1
            undo = self.undo.get(path)
            if undo is None:
                undo = self.undo[path] = FileUndo(os.fstat(fh).st_size)
            first = offset // PAGE
            last = (offset + len(data) - 1) // PAGE if data else first - 1
            for page in range(first, last + 1):
                if page not in undo.pages:
                    undo.pages[page] = os.pread(fh, PAGE, page * PAGE)
            return os.pwrite(fh, data, offset)

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        with self._mutex:
            if self.lost:
                return 0
            self.syncs += 1
            self.undo.pop(path, None)  # durable: the backing file is the state after a power loss
        return 0

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        with self._mutex:
            if self.lost:
                return 0
            if fh is not None:
                os.ftruncate(fh, length)
            else:
                os.truncate(self._full(path), length)
            undo = self.undo.get(path)
            if undo is not None:  # metadata is durable at once: the size, and no page past it
                undo.size = length
                undo.pages = {p: old for p, old in undo.pages.items() if p * PAGE < length}
        return 0

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: int) -> int:
        if mode:
            raise fuse.FuseOSError(errno.EOPNOTSUPP)
        with self._mutex:
            if self.lost:
                return 0
            os.posix_fallocate(fh, offset, size)
            undo = self.undo.get(path)
            if undo is not None:
                undo.size = max(undo.size, offset + size)
        return 0

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    # -- files and directories --------------------------------------------------------------------
    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        st = os.fstat(fh) if fh is not None else os.lstat(self._full(path))
        keys = ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size", "st_uid")
        attrs = {key: getattr(st, key) for key in keys}
        attrs["st_blocks"] = st.st_blocks
        return attrs

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._full(path))]

    def open(self, path: str, flags: int) -> int:
        # Read-write underneath whatever was asked (a write keeps the old bytes of its pages); offsets
        # come with every write, so O_APPEND must not move them.
        flags = (flags & ~(os.O_WRONLY | os.O_APPEND)) | os.O_RDWR if flags & os.O_ACCMODE else flags
        with self._mutex:
            fd = os.open(self._full(path), flags)
            if flags & os.O_TRUNC and path in self.undo:
                self.undo[path].size = 0
                self.undo[path].pages.clear()
            return fd

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        with self._mutex:
            fd = os.open(self._full(path), os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)
            self.undo.pop(path, None)
            return fd

    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0

    def flush(self, path: str, fh: int) -> int:
        return 0  # close(2) is no promise of durability

    def unlink(self, path: str) -> int:
        with self._mutex:
            os.unlink(self._full(path))
            self.undo.pop(path, None)
        return 0

    def rename(self, old: str, new: str) -> int:
        with self._mutex:
            os.rename(self._full(old), self._full(new))
            self.undo.pop(new, None)
            moved = self.undo.pop(old, None)
            if moved is not None:
                self.undo[new] = moved
            prefix = old.rstrip("/") + "/"
            for key in [k for k in self.undo if k.startswith(prefix)]:
                self.undo[new.rstrip("/") + "/" + key[len(prefix) :]] = self.undo.pop(key)
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._full(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._full(path))
        return 0

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._full(path), mode)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        os.chown(self._full(path), uid, gid)
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        os.utime(self._full(path), ns=times) if times else os.utime(self._full(path))
        return 0

    def access(self, path: str, amode: int) -> int:
        if not os.access(self._full(path), amode):
            raise fuse.FuseOSError(errno.EACCES)
        return 0

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        return 0

    def opendir(self, path: str) -> int:
        return 0

    def releasedir(self, path: str, fh: int) -> int:
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self._full(path))
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag")
        return {key: getattr(st, key) for key in (*keys, "f_frsize", "f_namemax")}

    # -- power ------------------------------------------------------------------------------------
    def lose_power(self) -> None:
        with self._mutex:
            self.lost = True

    def undo_unsynced(self) -> tuple[int, int]:
        """Write the old bytes back and restore the sizes: the backing directory as it was durable."""
        files = pages = 0
        with self._mutex:
            for path, undo in self.undo.items():
                full = self._full(path)
                try:
                    fd = os.open(full, os.O_RDWR)
                except FileNotFoundError:
                    continue
                try:
                    for page, old in undo.pages.items():
                        os.pwrite(fd, old, page * PAGE)
                    os.ftruncate(fd, undo.size)
                finally:
                    os.close(fd)
                files += 1
                pages += len(undo.pages)
            self.undo.clear()
        return files, pages

    def unsynced_pages(self, prefix: str) -> int:
        """Pages written and not synced since, in the files under `prefix` (a path in the mount)."""
        with self._mutex:
            return sum(len(u.pages) for path, u in self.undo.items() if path.startswith(prefix))

    def stats(self) -> str:
        with self._mutex:
            pending = sum(len(u.pages) for u in self.undo.values())
            return f"STATS writes={self.writes} syncs={self.syncs} ignored={self.ignored} unsynced_pages={pending}"


def _commands(fs: PowerLossFS) -> None:
    for line in sys.stdin:
        command = line.strip()
        if command == "lose-power":
            fs.lose_power()
            print("LOST", flush=True)
        elif command == "stats":
            print(fs.stats(), flush=True)
        elif command.startswith("unsynced "):
            prefix = command.split(" ", 1)[1]
            print(f"UNSYNCED {fs.unsynced_pages(prefix)}", flush=True)


def main(backing: str, mountpoint: str) -> int:
    fs = PowerLossFS(backing)
    threading.Thread(target=_commands, args=(fs,), daemon=True).start()
    threading.Thread(target=_announce, args=(Path(mountpoint),), daemon=True).start()
    fuse.FUSE(fs, mountpoint, foreground=True, nothreads=False, default_permissions=True)
    if fs.lost:
        files, pages = fs.undo_unsynced()
        print(f"UNDONE {files} {pages}", flush=True)
    return 0


def _announce(mountpoint: Path) -> None:
    """Say MOUNTED once the mount point is a mount (the FUSE loop blocks the main thread)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if os.path.ismount(mountpoint):
            print("MOUNTED", flush=True)
            return
        time.sleep(0.02)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
