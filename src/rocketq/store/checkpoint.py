"""StoreCheckpoint (how far each part of the store is durable), the abort file and the lock file.

Port of org.apache.rocketmq.store.StoreCheckpoint: a 4 KiB file whose first 24 bytes are Java's
physicMsgTimestamp, logicsMsgTimestamp and indexMsgTimestamp (int64 ms each). Extension (bytes 24-47,
zero in a Java file): the commit-log offsets up to which the commit log, the consume queues and the
index were flushed, which lets recovery start at an exact record instead of guessing from timestamps.
The abort file exists while the store is open; finding it at open means the last run crashed.
The lock file is held with flock so that two processes never open one store.
"""

from __future__ import annotations

import fcntl
import os
import struct
from pathlib import Path

from rocketq.common.persist import fsync_directory
from rocketq.store.errors import StoreLockedError

CHECKPOINT_SIZE = 4096
_LAYOUT = struct.Struct(">qqqqqq")


class StoreCheckpoint:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        self.physic_offset = 0  # commit log durable below this offset
        self.logics_offset = 0  # every consume-queue unit of records below this offset is durable
        self.index_offset = 0  # every index entry of records below this offset is durable
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        raw = os.pread(self._fd, _LAYOUT.size, 0)
        if len(raw) == _LAYOUT.size:
            (
                self.physic_msg_timestamp,
                self.logics_msg_timestamp,
                self.index_msg_timestamp,
                self.physic_offset,
                self.logics_offset,
                self.index_offset,
            ) = _LAYOUT.unpack(raw)
        else:
            os.ftruncate(self._fd, CHECKPOINT_SIZE)

    @property
    def min_timestamp(self) -> int:
        return min(self.physic_msg_timestamp, self.logics_msg_timestamp)

    @property
    def safe_offset(self) -> int:
        """Below this commit-log offset the commit log, the queues and the index are all durable."""
        return min(self.physic_offset, self.logics_offset, self.index_offset)

    def flush(self) -> None:
        raw = _LAYOUT.pack(
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
            self.physic_offset,
            self.logics_offset,
            self.index_offset,
        )
        os.pwrite(self._fd, raw, 0)
        os.fdatasync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def create_abort_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.flush()
        os.fsync(fh.fileno())
    fsync_directory(path.parent)


def remove_abort_file(path: Path) -> None:
    path.unlink(missing_ok=True)
    fsync_directory(path.parent)


class StoreLock:
    """An exclusive flock on <root>/lock, held while the store is open."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            raise StoreLockedError(f"{path}: the store is in use by another process") from None

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
