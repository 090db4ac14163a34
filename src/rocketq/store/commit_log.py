"""CommitLog: the single append-only log of every record, on a MappedFileQueue.

Port of org.apache.rocketmq.store.CommitLog (4.9.8): DefaultAppendMessageCallback.doAppend and
MessageExtBatchEncoder (record layout of protocol.md 4.1, written straight into the mapping with
struct.pack_into), the end-of-file blank record, getMessage/getData, pickupStoreTimestamp and
rollNextFile. One writer (the event-loop thread): no lock. A record or a batch never spans two files:
when it does not fit with 8 bytes to spare, the rest of the file becomes a blank record.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

from rocketq.remoting.protocol.message_codec import (
    BLANK_MAGIC_CODE,
    BORNHOST_V6_FLAG,
    MESSAGE_MAGIC_CODE,
    RECORD_HEADER,
    STOREHOST_V6_FLAG,
    pack_host,
)
from rocketq.store.config import MessageStoreConfig
from rocketq.store.mapped_file import MADV_POPULATE_READ, MappedFile
from rocketq.store.mapped_file_queue import FileAllocator, MappedFileQueue, Reservation
from rocketq.store.message import BrokerMessage, BrokerMessageBatch
from rocketq.store.record import BLANK_RECORD, END_FILE_MIN_BLANK_LENGTH, store_timestamp_of

_SHORT = struct.Struct(">h")
_INT = struct.Struct(">i")
_CRC_MASK: Final = 0x7FFFFFFF
_V6_BITS: Final = BORNHOST_V6_FLAG | STOREHOST_V6_FLAG
# Slack Java allows a whole record over maxMessageSize (topic, properties and fixed fields).
RECORD_OVERHEAD_ALLOWANCE: Final = 64 * 1024


class RecordTooLargeError(ValueError):
    """A record that can never be stored (over the size limit or larger than a file)."""


class _Host:
    """A host as it goes into records: ip bytes, port, whether it is IPv6, msgId prefix."""

    __slots__ = ("ip", "msg_id_prefix", "port", "v6")

    def __init__(self, host: tuple[str, int]) -> None:
        self.ip = pack_host(host[0])
        self.port = host[1]
        self.v6 = len(self.ip) == 16
        self.msg_id_prefix = (self.ip + _INT.pack(self.port)).hex().upper()


class CommitLog:
    def __init__(self, config: MessageStoreConfig, allocator: FileAllocator | None = None) -> None:
        self.file_size = config.mapped_file_size_commit_log_bytes
        # Space is reserved (fallocate, pages faulted in read-only: no zero pages to write back) a
        # window ahead of the writer; the append path only compares two ints until it nears the end.
        reservation = Reservation(
            config.mapped_file_reserve_ahead_bytes,
            config.preallocate_mapped_file,
            MADV_POPULATE_READ if config.warm_mapped_file_enable else 0,
        )
        self.queue = MappedFileQueue(
            config.commit_log_dir, self.file_size, allocator=allocator, reservation=reservation
        )
        self._low_water = reservation.ahead * 3 // 4 if reservation.ahead else -(1 << 62)
        # The largest record accepted: Java's limit, and it must fit a file with a blank record's room.
        self.max_record_size = min(
            config.max_message_size_bytes + RECORD_OVERHEAD_ALLOWANCE,
            self.file_size - END_FILE_MIN_BLANK_LENGTH,
        )
        self._cur: MappedFile | None = None
        self._topics: dict[str, bytes] = {}
        self._hosts: dict[tuple[str, int], _Host] = {}
        self.last_store_timestamp = 0

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
        """After recovery: appends continue at the end of the last file."""
        self._cur = self.queue.last()
        if self._cur is None:
            self._cur = self.queue.get_last_or_create(0)
        if not self._cur.is_full:
            self._reserve(self._cur, self._cur.wrote_position)

    def _reserve(self, mapped: MappedFile, upto: int) -> None:
        self.queue.ensure_reserved(mapped, upto)

    # -- caches --------------------------------------------------------------------------------------
    def _topic_block(self, topic: str) -> bytes:
        block = self._topics.get(topic)
        if block is None:
            raw = topic.encode("utf-8")
            if len(raw) > 127:
                raise RecordTooLargeError(f"topic of {len(raw)} bytes; a record holds at most 127")
            block = bytes((len(raw),)) + raw
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

    def msg_id(self, store_host: tuple[str, int], phys_offset: int) -> str:
        return f"{self.host(store_host).msg_id_prefix}{phys_offset:016X}"

    # -- append --------------------------------------------------------------------------------------
    def _file_for(self, size: int) -> MappedFile:
        """The file the next `size` bytes go to, rolling (blank record + new file) when they do not fit."""
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
        return current

    def append(self, msg: BrokerMessage, props: bytes, queue_offset: int, store_ts: int) -> tuple[int, int]:
        """Write one record; returns (commit-log offset, size). Raises RecordTooLargeError, OSError."""
        body = msg.body
        topic_block = self._topics.get(msg.topic) or self._topic_block(msg.topic)
        born = self._hosts.get(msg.born_host) or self.host(msg.born_host)
        store = self._hosts.get(msg.store_host) or self.host(msg.store_host)
        layout = RECORD_HEADER[(born.v6, store.v6)]
        sys_flag = (
            (msg.sys_flag & ~_V6_BITS)
            | (BORNHOST_V6_FLAG if born.v6 else 0)
            | (STOREHOST_V6_FLAG if store.v6 else 0)
        )
        body_len = len(body)
        at_topic = layout.size + body_len
        at_props = at_topic + len(topic_block)
        total = at_props + 2 + len(props)
        if total > self.max_record_size:
            raise RecordTooLargeError(f"record of {total} bytes is over the limit of {self.max_record_size}")
        mapped = self._file_for(total)
        pos = mapped.wrote_position
        phys = mapped.file_from_offset + pos
        mm = mapped.mm
        layout.pack_into(
            mm, pos, total, MESSAGE_MAGIC_CODE, zlib.crc32(body) & _CRC_MASK, msg.queue_id, msg.flag,
            queue_offset, phys, sys_flag, msg.born_timestamp, born.ip, born.port, store_ts, store.ip,
            store.port, msg.reconsume_times, msg.prepared_transaction_offset, body_len,
        )  # fmt: skip
        mm[pos + layout.size : pos + at_topic] = body
        mm[pos + at_topic : pos + at_props] = topic_block
        _SHORT.pack_into(mm, pos + at_props, len(props))
        mm[pos + at_props + 2 : pos + total] = props
        mapped.wrote_position = pos + total
        self.last_store_timestamp = store_ts
        return phys, total

    def append_batch(
        self,
        batch: BrokerMessageBatch,
        props: list[bytes],
        first_queue_offset: int,
        store_ts: int,
    ) -> list[tuple[int, int]]:
        """Write a batch's records into one file, consecutive queue offsets; returns (offset, size) each."""
        topic_block = self._topic_block(batch.topic)
        born = self.host(batch.born_host)
        store = self.host(batch.store_host)
        layout = RECORD_HEADER[(born.v6, store.v6)]
        sys_flag = (
            (batch.sys_flag & ~_V6_BITS)
            | (BORNHOST_V6_FLAG if born.v6 else 0)
            | (STOREHOST_V6_FLAG if store.v6 else 0)
        )
        fixed = layout.size + len(topic_block) + 2
        sizes = [fixed + len(entry[1]) + len(p) for entry, p in zip(batch.entries, props, strict=True)]
        for size in sizes:
            if size > self.max_record_size:
                raise RecordTooLargeError(
                    f"record of {size} bytes is over the limit of {self.max_record_size}"
                )
        if sum(sizes) > self.file_size - END_FILE_MIN_BLANK_LENGTH:
            raise RecordTooLargeError(
                f"a batch of {sum(sizes)} bytes does not fit a {self.file_size}-byte file"
            )
        mapped = self._file_for(sum(sizes))
        mm = mapped.mm
        pos = mapped.wrote_position
        base = mapped.file_from_offset
        out: list[tuple[int, int]] = []
        queue_offset = first_queue_offset
        pack, crc32 = layout.pack_into, zlib.crc32
        for (flag, body, _), p, total in zip(batch.entries, props, sizes, strict=True):
            body_len = len(body)
            pack(
                mm, pos, total, MESSAGE_MAGIC_CODE, crc32(body) & _CRC_MASK, batch.queue_id, flag, queue_offset,
                base + pos, sys_flag, batch.born_timestamp, born.ip, born.port, store_ts, store.ip, store.port,
                batch.reconsume_times, 0, body_len,
            )  # fmt: skip
            at = pos + layout.size
            mm[at : at + body_len] = body
            at += body_len
            mm[at : at + len(topic_block)] = topic_block
            at += len(topic_block)
            _SHORT.pack_into(mm, at, len(p))
            mm[at + 2 : pos + total] = p
            out.append((base + pos, total))
            pos += total
            queue_offset += 1
        mapped.wrote_position = pos
        self.last_store_timestamp = store_ts
        return out

    # -- read ----------------------------------------------------------------------------------------
    def read(self, offset: int, size: int) -> bytes | None:
        """`size` bytes at `offset` when they are all written and still stored, else None."""
        mapped = self.queue.find(offset)
        if mapped is None or mapped.closed:
            return None
        pos = offset - mapped.file_from_offset
        if size <= 0 or pos + size > mapped.wrote_position:
            return None
        return mapped.mm[pos : pos + size]

    def read_record(self, offset: int) -> bytes | None:
        """The whole record at `offset` (by its TOTALSIZE), or None."""
        head = self.read(offset, 4)
        if head is None:
            return None
        (size,) = _INT.unpack(head)
        return self.read(offset, size) if size > 0 else None

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
