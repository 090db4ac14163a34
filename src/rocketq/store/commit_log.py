"""CommitLog: the single append-only log of every record, on a MappedFileQueue.

Port of org.apache.rocketmq.store.CommitLog (4.9.8): DefaultAppendMessageCallback.doAppend and
MessageExtBatchEncoder (the record layout of rocketq.common.record.layout, written straight into the mapping with
struct.pack_into), the end-of-file blank record, getMessage/getData, pickupStoreTimestamp and
rollNextFile. One writer (the event-loop thread): no lock. A record or a batch never spans two files:
when it does not fit with 8 bytes to spare, the rest of the file becomes a blank record.
"""

from __future__ import annotations

import logging
import struct
from itertools import repeat
from mmap import mmap
from operator import add, itemgetter
from typing import NamedTuple

from rocketq.common.record.codec import pack_batch_into, pack_record_into
from rocketq.common.record.layout import (
    BLANK_MAGIC_CODE,
    BLANK_RECORD,
    END_FILE_MIN_BLANK_LENGTH,
    FIXED_SIZE_V4,
    LAYOUT_FLAGS,
    LAYOUTS,
    MESSAGE_MAGIC_CODE,
    RECORD_HEAD,
    UNIT_RECORD_HEAD,
    V6_FLAGS,
    RecordTooLargeError,
    msg_id_prefix,
    pack_host,
    store_timestamp_of,
    topic_block,
)
from rocketq.store.config import MessageStoreConfig
from rocketq.store.mapped_file import MADV_POPULATE_WRITE, MappedFile, is_disk_full, offset_to_file_name
from rocketq.store.mapped_file_queue import FileAllocator, MappedFileQueue, Reservation, check_free_space
from rocketq.store.message import BrokerMessage, BrokerMessageBatch

__all__ = ["CommitLog", "RecordTooLargeError", "topic_block"]

log = logging.getLogger("rocketq.store")
_body_of = itemgetter(1)  # a batch entry's body

# Slack Java allows a whole record over maxMessageSize (topic, properties and fixed fields).
RECORD_OVERHEAD_ALLOWANCE = 64 * 1024


class _Host:
    """A host as it goes into records: ip bytes, port, its sysFlag bit, msgId prefix."""

    __slots__ = ("ip", "msg_id_prefix", "port", "v6")

    def __init__(self, host: tuple[str, int]) -> None:
        self.ip = pack_host(host[0])
        self.port = host[1]
        self.v6 = len(self.ip) == 16
        self.msg_id_prefix = msg_id_prefix(self.ip, self.port)


_HOST_PAIRS_KEPT = 65536


class _HostPair(NamedTuple):
    """What a record takes from its (born host, store host) pair, worked out once per pair."""

    layout: struct.Struct  # the fixed fields, by the width of each host
    v6_flags: int  # the sysFlag bits that width implies
    born_ip: bytes
    born_port: int
    store_ip: bytes
    store_port: int
    msg_id_prefix: str  # of the store host


def _host_pair(born: _Host, store: _Host) -> _HostPair:
    kind = (1 if born.v6 else 0) + (2 if store.v6 else 0)  # LAYOUTS index: bit 0 born v6, bit 1 store v6
    return _HostPair(
        LAYOUTS[kind], LAYOUT_FLAGS[kind], born.ip, born.port, store.ip, store.port, store.msg_id_prefix
    )


class CommitLog:
    def __init__(self, config: MessageStoreConfig, allocator: FileAllocator | None = None) -> None:
        self.file_size = config.mapped_file_size_commit_log_bytes
        # Space is reserved a window ahead of the writer on the allocator thread: blocks allocated
        # (fallocate) and pages faulted in writable (measured with a flush every 500 ms: 1.3 us per 1.2 KB
        # record without, 0.95 with; read-only faulting gains nothing). A flush syncs only the written
        # range (MappedFile.flush), so the window's zero pages are not written back before the records
        # overwrite them. The append path only compares two ints until it nears the window's end.
        reservation = Reservation(
            config.mapped_file_reserve_ahead_bytes,
            config.preallocate_mapped_file,
            MADV_POPULATE_WRITE if config.warm_mapped_file_enable else 0,
        )
        self.queue = MappedFileQueue(
            config.commit_log_dir, self.file_size, allocator=allocator, reservation=reservation
        )
        # A new file needs room for all of it (Java's warmMappedFile writes it out): a disk that
        # cannot hold one refuses puts instead of filling up inside a mapping.
        self.queue.create_needs = self.file_size
        # Less than half a window left: ask for the next window (it arrives long before it is needed).
        self._low_water = reservation.ahead // 2 if reservation.ahead else -(1 << 62)
        # The append path's one check: a record may end at or before this position of the current
        # file (room for the blank record, inside the reserved space, and short of the point where
        # the next window is asked for, or of the reserved end once it was asked for).
        self._check_at = -1
        # The largest record accepted: Java's limit, and it must fit a file with a blank record's room.
        self.max_record_size = min(
            config.max_message_size_bytes + RECORD_OVERHEAD_ALLOWANCE,
            self.file_size - END_FILE_MIN_BLANK_LENGTH,
        )
        self._cur: MappedFile | None = None
        self.space_error: OSError | None = None  # set_current found no room for the file to append to
        self._topics: dict[str, bytes] = {}
        self._hosts: dict[tuple[str, int], _Host] = {}
        self._host_pairs: dict[tuple[tuple[str, int], tuple[str, int]], _HostPair] = {}
        self.last_store_timestamp = 0
        # How far the consume queues and the index hold every record; None: the end of the log (the
        # put path dispatches inline). A slave's log runs ahead of its dispatch by a record split
        # between two replication frames (see rocketq.store.ha).
        self.dispatch_end: int | None = None

    # -- positions -----------------------------------------------------------------------------------
    @property
    def max_offset(self) -> int:
        return self.queue.max_offset

    @property
    def min_offset(self) -> int:
        """The first offset still stored (Java getMinOffset); 0 when the log is empty."""
        return self.queue.min_offset

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    def load(self) -> None:
        self.queue.load()

    def set_current(self) -> None:
        """After recovery: appends continue at the end of the last file. On a full disk the store still
        opens (reads are served): the error is kept in `space_error` and the first put finds its file."""
        self._check_at = -1
        self.space_error = None
        self._cur = self.queue.last()
        try:
            if self._cur is None:
                self._cur = self.queue.get_last_or_create(0)
            if not self._cur.is_full:
                self._reserve(self._cur, self._cur.wrote_position)
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            log.error("commit log: no room to append (%s); puts are refused until there is", exc)
            self.space_error = exc

    def ensure_room(self, size: int) -> None:
        """Raise OSError (ENOSPC) unless a record of `size` bytes can be appended now: reserve it in the
        current file, or check that the disk can hold the next one (the store's probe after a full disk)."""
        current = self.queue.last()
        if (
            current is not None
            and current.wrote_position + size + END_FILE_MIN_BLANK_LENGTH <= self.file_size
        ):
            self._reserve(current, current.wrote_position + size)
        else:
            start = current.file_end_offset if current is not None else 0
            path = self.queue.directory / offset_to_file_name(start)
            if not path.exists():
                check_free_space(self.queue.directory, self.queue.create_needs, path)
        self.space_error = None
        if self._cur is None:
            self._cur = current
        self._check_at = -1

    def _reserve(self, mapped: MappedFile, upto: int) -> None:
        self.queue.ensure_reserved(mapped, upto)

    # -- caches --------------------------------------------------------------------------------------
    def _topic_block(self, topic: str) -> bytes:
        block = self._topics.get(topic)
        if block is None:
            block = topic_block(topic)
            if len(self._topics) < 100_000:
                self._topics[topic] = block
        return block

    def host(self, host: tuple[str, int]) -> _Host:
        info = self._hosts.get(host)
        if info is None:
            info = _Host(host)
            if len(self._hosts) < 65536:
                self._hosts[host] = info
        return info

    def host_pair(self, born_host: tuple[str, int], store_host: tuple[str, int]) -> _HostPair:
        pair = _host_pair(self.host(born_host), self.host(store_host))
        if len(self._host_pairs) >= _HOST_PAIRS_KEPT:
            self._host_pairs.clear()
        self._host_pairs[(born_host, store_host)] = pair
        return pair

    def msg_id(self, store_host: tuple[str, int], phys_offset: int) -> str:
        return f"{self.host(store_host).msg_id_prefix}{phys_offset:016X}"

    # -- append --------------------------------------------------------------------------------------
    def _file_for(self, size: int) -> MappedFile:
        """The file the next `size` bytes go to, rolling (blank record + new file) when they do not fit,
        and reserving space ahead. The append path calls it only when its cheap check fails: no file,
        the end of the file near, or the reserved window near its end."""
        current = self._cur
        if current is None or current.closed:
            current = self._cur = self.queue.get_last_or_create(0)
        pos = current.wrote_position
        if pos + size + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            if pos < self.file_size:
                BLANK_RECORD.pack_into(current.mm, pos, self.file_size - pos, BLANK_MAGIC_CODE)
                current.wrote_position = self.file_size
            current = self._cur = self.queue.get_last_or_create(0)
            pos = 0
        if pos + size + self._low_water > current.reserved:
            self._reserve(current, pos + size)
        # Back here at the point of asking for the next window or, once asked, at the reserved end
        # (by then the window asked for has long arrived): not at every append in between.
        limit = min(self.file_size - END_FILE_MIN_BLANK_LENGTH, current.reserved)
        ask_at = current.reserved - self._low_water
        self._check_at = ask_at if pos + size < ask_at < limit else limit
        return current

    def append(
        self, msg: BrokerMessage, topic: bytes, props: bytes, queue_offset: int, store_ts: int
    ) -> tuple[int, int, str]:
        """Write one record; returns (commit-log offset, size, msgId). Raises RecordTooLargeError, OSError.

        `topic` is topic_block(msg.topic) (the put path keeps it per topic). The hottest function of
        the broker: locals only, one call that writes the record (compiled when the accelerators are
        built: rocketq.common.record.codec.pack_record_into).
        """
        body = msg.body
        hosts = self._host_pairs.get((msg.born_host, msg.store_host)) or self.host_pair(
            msg.born_host, msg.store_host
        )
        total = hosts.layout.size + len(body) + len(topic) + 2 + len(props)
        if total > self.max_record_size:
            raise RecordTooLargeError(f"record of {total} bytes is over the limit of {self.max_record_size}")
        mapped = self._cur
        if mapped is None or mapped.wrote_position + total > self._check_at:
            mapped = self._file_for(total)
        pos = mapped.wrote_position
        phys = mapped.file_from_offset + pos
        _, v6_flags, born_ip, born_port, store_ip, store_port, msg_id_prefix = hosts
        pack_record_into(
            mapped.mm, pos, total, body, topic, props, msg.queue_id, msg.flag, queue_offset, phys,
            (msg.sys_flag & ~V6_FLAGS) | v6_flags, msg.born_timestamp, born_ip, born_port, store_ts,
            store_ip, store_port, msg.reconsume_times, msg.prepared_transaction_offset,
        )  # fmt: skip
        mapped.wrote_position = pos + total
        self.last_store_timestamp = store_ts
        return phys, total, msg_id_prefix + "%016X" % phys  # noqa: UP031 (fastest here, measured)

    def append_batch(
        self,
        batch: BrokerMessageBatch,
        props: list[bytes],
        first_queue_offset: int,
        store_ts: int,
    ) -> tuple[int, list[int], str]:
        """Write a batch's records into one file with consecutive queue offsets.

        Returns (offset of the first record, size of each record, msgId prefix of the store host).
        """
        topic_block = self._topic_block(batch.topic)
        born = self.host(batch.born_host)
        store = self.host(batch.store_host)
        kind = (1 if born.v6 else 0) + (2 if store.v6 else 0)  # LAYOUTS index: bit 0 born v6, bit 1 store v6
        layout = LAYOUTS[kind]
        sys_flag = (batch.sys_flag & ~V6_FLAGS) | LAYOUT_FLAGS[kind]
        # TOTALSIZE .. BODYLEN, TOPICLEN + TOPIC and PROPERTIESLEN: what each record adds to its body and
        # properties; the sizes through C-level maps, not a Python loop over ~100 entries.
        fixed = layout.size + len(topic_block) + 2
        sizes = list(
            map(add, repeat(fixed), map(add, map(len, map(_body_of, batch.entries)), map(len, props)))
        )
        total = sum(sizes)
        if max(sizes) > self.max_record_size:
            raise RecordTooLargeError(
                f"record of {max(sizes)} bytes is over the limit of {self.max_record_size}"
            )
        if total > self.file_size - END_FILE_MIN_BLANK_LENGTH:
            raise RecordTooLargeError(f"a batch of {total} bytes does not fit a {self.file_size}-byte file")
        mapped = self._cur
        if mapped is None or mapped.wrote_position + total > self._check_at:
            mapped = self._file_for(total)
        first = mapped.wrote_position
        base = mapped.file_from_offset
        # One loop for all the records (compiled when the accelerators are built), not a struct pack
        # and three slice copies per record.
        pack_batch_into(
            mapped.mm, first, batch.entries, topic_block, props, sizes, batch.queue_id, first_queue_offset,
            base + first, sys_flag, batch.born_timestamp, born.ip, born.port, store_ts, store.ip, store.port,
            batch.reconsume_times,
        )  # fmt: skip
        pos = first + total
        mapped.wrote_position = pos
        self.last_store_timestamp = store_ts
        return base + first, sizes, store.msg_id_prefix

    # -- replication ---------------------------------------------------------------------------------
    def append_raw(self, offset: int, data: bytes) -> MappedFile:
        """Replication: write `data` (bytes of the master's commit log) at `offset`, which must be the
        end of this log, or on an empty log the start of a file (Java CommitLog.appendData); the data
        must not cross a file end. Returns the file written. Raises ValueError (the caller reconnects)."""
        end = self.queue.max_offset
        if end == 0 and offset > 0:
            self._restart_at(offset)
        elif offset != end:
            raise ValueError(f"replicated data at offset {offset}, but the commit log ends at {end}")
        mapped = self._cur
        if mapped is None or mapped.closed or mapped.is_full:
            mapped = self._cur = self.queue.get_last_or_create(offset)
        pos = offset - mapped.file_from_offset
        if pos != mapped.wrote_position or pos + len(data) > self.file_size:
            raise ValueError(
                f"replicated data of {len(data)} bytes at offset {offset} does not fit {mapped.path.name} "
                f"(written up to {mapped.wrote_position} of {self.file_size})"
            )
        self._check_at = (
            -1
        )  # the put path finds its file again (a slave puts nothing, but a changed role may)
        if pos + len(data) > mapped.reserved:
            self._reserve(mapped, pos + len(data))
        mapped.mm[pos : pos + len(data)] = data
        mapped.wrote_position = pos + len(data)
        return mapped

    def _restart_at(self, offset: int) -> None:
        """An empty log takes its first replicated bytes at `offset` (the master's last file start)."""
        if offset % self.file_size:
            raise ValueError(f"an empty commit log cannot start at {offset}: not a file start")
        allocator = self.queue.allocator
        for mapped in self.queue.files:
            if allocator is not None:
                allocator.discard(self.queue.directory / offset_to_file_name(mapped.file_end_offset))
            mapped.destroy()
        self.queue.files = []
        self.queue.flushed_where = offset
        self._cur = None

    def read_available(self, offset: int, max_bytes: int) -> bytes | None:
        """Up to `max_bytes` written bytes from `offset` to the end of its file (what the master sends a
        slave, Java getCommitLogData); None when nothing is written there yet or it is deleted."""
        mapped = self.queue.find(offset)
        if mapped is None or mapped.closed:
            return None
        pos = offset - mapped.file_from_offset
        size = min(max_bytes, mapped.wrote_position - pos)
        if size <= 0:
            return None
        return mapped.mm[pos : pos + size]

    # -- read ----------------------------------------------------------------------------------------
    def written_part(self, offset: int) -> tuple[int, int, mmap] | None:
        """(start, end of the written part, mapping) of the stored file holding `offset`; None when no
        open file holds it. A reader of many records (the pull's loop) keeps it while they lie inside."""
        mapped = self.queue.find(offset)
        if mapped is None or mapped.closed:
            return None
        return mapped.file_from_offset, mapped.file_from_offset + mapped.wrote_position, mapped.mm

    def read(self, offset: int, size: int) -> bytes | None:
        """`size` bytes at `offset` when they are all written and still stored, else None."""
        part = self.written_part(offset)
        if part is None or size <= 0 or offset + size > part[1]:
            return None
        start, _end, mm = part
        return mm[offset - start : offset - start + size]

    def read_record(self, offset: int, size: int | None = None) -> bytes | None:
        """The whole record at `offset`, or None when no record starts there.

        A record starts at `offset` when its MAGICCODE is the message magic, its PHYSICALOFFSET is
        `offset` and its TOTALSIZE is `size` (when given) and at least the fixed part: a wrong offset
        (a bad msgId, a damaged unit) never returns bytes that are not one whole record.
        """
        head = self.read(offset, RECORD_HEAD.size)
        if head is None:
            return None
        total, magic, phys = RECORD_HEAD.unpack(head)
        if magic != MESSAGE_MAGIC_CODE or phys != offset or total < FIXED_SIZE_V4:
            return None
        if size is not None and total != size:
            return None
        return self.read(offset, total)

    def record_head(self, offset: int, size: int) -> tuple[int, int, int, int, int] | None:
        """(TOTALSIZE, MAGICCODE, QUEUEID, QUEUEOFFSET, PHYSICALOFFSET) of the `size`-byte record a
        consume-queue unit names at `offset`, read in place; None when those bytes are not all stored."""
        mapped = self.queue.find(offset)
        if mapped is None or mapped.closed or size < UNIT_RECORD_HEAD.size:
            return None
        pos = offset - mapped.file_from_offset
        if pos + size > mapped.wrote_position:
            return None
        head: tuple[int, int, int, int, int] = UNIT_RECORD_HEAD.unpack_from(mapped.mm, pos)
        return head

    def store_timestamp(self, offset: int, size: int) -> int:
        """STORETIMESTAMP of the record at `offset` (Java pickupStoreTimestamp); -1 when gone."""
        mapped = self.queue.find(offset)
        if mapped is None or mapped.closed:
            return -1
        pos = offset - mapped.file_from_offset
        if pos + min(size, 80) > mapped.wrote_position:
            return -1
        return store_timestamp_of(mapped.mm, pos)

    def close(self) -> None:
        self.queue.close()
        self._cur = None
        self._check_at = -1
