"""IndexFile: an on-disk hash map from message keys to commit-log offsets (docs/protocol.md 4.8.3).

Port of org.apache.rocketmq.store.index.{IndexFile, IndexHeader}. Layout: a 40-byte header
(beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset int64; hashSlotCount, indexCount int32),
`slot_num` int32 slots holding the newest entry of their chain, then `index_num` 20-byte entries
(keyHash int32, phyOffset int64, timeDiff int32 seconds since beginTimestamp, prevIndex int32).
Entry 0 is never used, so 0 means "no entry". keyHash is Java's: abs(String.hashCode()) of `topic#key`
(IndexService.indexKeyHashMethod), so index files move between Apache's broker and ours both ways (see
docs/compat.md). Earlier rocketq versions wrote CRC-32 of the UTF-8 key masked to 31 bits
(legacy_index_key_hash); a query looks a key up under both, and a hash match is only a candidate anyway
(the store checks the record's keys).
The header is kept in memory and written to the mapping on flush and close. Deviation: an entry's time
matches [begin, end] when its whole second overlaps it (Java drops a message stored in the first
999 ms of `begin`, as timeDiff keeps whole seconds).
Disk space: the header and the slot table are reserved (fallocate) when a file is created and entries a
RESERVE_WINDOW ahead of the writer, as Java's warmMappedFile writes a file out before use, so a full disk
fails a reservation with ENOSPC (put_entries writes what fits and keeps the error in `space_error`)
instead of a write into a hole of the mapping (SIGBUS). Entries written after the last saved header are
counted at load with pread, not through the mapping (a read fault in a tmpfs hole allocates a page:
SIGBUS on a full disk).
"""

from __future__ import annotations

import struct
import sys
import zlib
from operator import mul
from pathlib import Path
from typing import Any

from rocketq.common.record.accel import compiled
from rocketq.store.mapped_file import MADV_POPULATE_READ, MappedFile, populate, read_range

INDEX_HEADER = struct.Struct(">qqqqii")
INDEX_HEADER_SIZE = INDEX_HEADER.size  # 40
HASH_SLOT_SIZE = 4
INDEX_ENTRY = struct.Struct(">iqii")
INDEX_ENTRY_SIZE = INDEX_ENTRY.size  # 20
INVALID_INDEX = 0
_SLOT = struct.Struct(">i")
_SLOT_UNPACK = _SLOT.unpack_from
_SLOT_PACK = _SLOT.pack_into
_ENTRY_PACK = INDEX_ENTRY.pack_into
_INT_MAX = 0x7FFFFFFF
RESERVE_WINDOW = 1 << 20  # entries reserved ahead of the writer (52,428 entries)


_M32 = 0xFFFFFFFF
_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"  # native order, for memoryview.cast("H")
# _WEIGHTS[n]: 31**(n-1-i) mod 2**32 for i < n, and _SCALE[n] = 31**n mod 2**32: String.hashCode of n UTF-16
# code units is their dot product with the weights, and continuing a prefix's hash multiplies it by the scale.
_WEIGHTS: list[tuple[int, ...]] = [()]
_SCALE: list[int] = [1]


def _grow(n: int) -> None:
    while len(_WEIGHTS) <= n:
        k = len(_WEIGHTS)
        _WEIGHTS.append((*(w * 31 & _M32 for w in _WEIGHTS[k - 1]), 1))
        _SCALE.append(_SCALE[k - 1] * 31 & _M32)


_grow(64)

# Hashes of UNIQ_KEY heads: an SDK's ids share all but their last 4 hex digits (the counter) within a
# millisecond (MessageClientIDSetter), so the pure hash continues from the head's hash and multiplies only
# the tail; bounded (cleared when full), the loop thread's and any other thread's reads race harmlessly.
_TAIL = 4
_HEADS: dict[str, int] = {}
_HEADS_KEPT = 4096


def java_string_hash(text: str, prefix_hash: int = 0) -> int:
    """Java's String.hashCode() of `text` as an unsigned 32-bit value, continuing from the hash of a prefix
    (`java_string_hash(a + b) == java_string_hash(b, java_string_hash(a))`). The loop runs in C (map, sum);
    an ASCII key of more than 12 characters continues from its head's kept hash (0.65 us instead of 1.45 us
    for a 32-digit UNIQ_KEY, measured)."""
    n = len(text)
    if n > 12 and text.isascii():
        if n >= len(_WEIGHTS):
            _grow(n)
        head = text[:-_TAIL]
        head_hash = _HEADS.get(head)
        if head_hash is None:
            if len(_HEADS) >= _HEADS_KEPT:
                _HEADS.clear()
            head_hash = _HEADS[head] = _dot(head.encode())
        tail_dot: int = sum(map(mul, text[-_TAIL:].encode(), _WEIGHTS[_TAIL]))
        return (prefix_hash * _SCALE[n] + head_hash * _SCALE[_TAIL] + tail_dot) & _M32
    units: bytes | memoryview = text.encode() if text.isascii() else memoryview(text.encode(_UTF16)).cast("H")
    dot = _dot(units)  # grows the tables to len(units) first
    return (prefix_hash * _SCALE[len(units)] + dot) & _M32


def _dot(units: bytes | memoryview) -> int:
    """String.hashCode of the code units `units` (unsigned, 32 bits); grows the weight tables as needed."""
    n = len(units)
    if n >= len(_WEIGHTS):
        _grow(n)
    dot: int = sum(map(mul, units, _WEIGHTS[n]))  # operator.mul is typed (Any, Any) -> Any
    return dot & _M32


java_string_hash_py = java_string_hash
if compiled is not None:  # the same hash from a C loop over the code units (~1 us less per key)
    compiled.set_java_string_hash_fallback(java_string_hash_py)
    java_string_hash = compiled.java_string_hash


def put_entries_py(
    mm: Any,
    entries: list[tuple[int, int, int]],
    start: int,
    stop: int,
    count: int,
    entry_at: int,
    slot_num: int,
    begin: int,
    begin_phy: int,
) -> tuple[int, int, int, int]:
    """IndexFile.put_entries' loop: entries[start:stop] of (key hash, commit-log offset, store timestamp)
    written from `entry_at` on with their slots, the file holding `count` entries so far; returns the new
    count, the slots newly taken and the file's begin offset and timestamp (set by its first entry)."""
    new_slots = 0
    for i in range(start, stop):
        key_hash, phy_offset, store_timestamp = entries[i]
        slot_pos = INDEX_HEADER_SIZE + (key_hash % slot_num) * HASH_SLOT_SIZE
        (slot_value,) = _SLOT_UNPACK(mm, slot_pos)
        if slot_value <= INVALID_INDEX or slot_value > count:
            slot_value = INVALID_INDEX
            new_slots += 1
        time_diff = (store_timestamp - begin) // 1000 if store_timestamp > begin > 0 else 0
        if time_diff > _INT_MAX:
            time_diff = _INT_MAX
        _ENTRY_PACK(mm, entry_at, key_hash, phy_offset, time_diff, slot_value)
        _SLOT_PACK(mm, slot_pos, count)
        if count <= 1:
            begin_phy = phy_offset
            begin = store_timestamp
        count += 1
        entry_at += INDEX_ENTRY_SIZE
    return count, new_slots, begin_phy, begin


# The loop in C when the accelerators are built (one call for a drain's entries, no struct call per entry).
_put_entries = compiled.index_put_entries if compiled is not None else put_entries_py


def positive_key_hash(h32: int) -> int:
    """Math.abs of the int `h32` (unsigned form); Integer.MIN_VALUE, whose abs is negative, gives 0."""
    if h32 < 0x80000000:
        return h32
    return 0 if h32 == 0x80000000 else 0x100000000 - h32


def index_key_hash(key: str) -> int:
    """The index hash of a key (`topic#key`): abs(String.hashCode()), a non-negative int32, as Java."""
    return positive_key_hash(java_string_hash(key))


def legacy_index_key_hash(key: str) -> int:
    """What rocketq versions before Java's hash wrote: CRC-32 of the UTF-8 key, masked to 31 bits."""
    return zlib.crc32(key.encode("utf-8")) & _INT_MAX


def encode_index_entry(key_hash: int, phy_offset: int, time_diff_s: int, prev_index: int) -> bytes:
    return INDEX_ENTRY.pack(key_hash, phy_offset, time_diff_s, prev_index)


def decode_index_entry(raw: bytes) -> tuple[int, int, int, int]:
    key_hash, phy, diff, prev = INDEX_ENTRY.unpack(raw)
    return key_hash, phy, diff, prev


def encode_index_header(
    begin_ts: int, end_ts: int, begin_phy: int, end_phy: int, slots: int, count: int
) -> bytes:
    return INDEX_HEADER.pack(begin_ts, end_ts, begin_phy, end_phy, slots, count)


def decode_index_header(raw: bytes) -> tuple[int, int, int, int, int, int]:
    begin_ts, end_ts, begin_phy, end_phy, slots, count = INDEX_HEADER.unpack(raw)
    return begin_ts, end_ts, begin_phy, end_phy, slots, count


def index_file_size(slot_num: int, index_num: int) -> int:
    return INDEX_HEADER_SIZE + slot_num * HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE


class IndexFile:
    """One index file; `put_key` appends an entry and links it into its slot's chain."""

    __slots__ = (
        "_entries_at",
        "begin_phy_offset",
        "begin_timestamp",
        "dirty",
        "end_phy_offset",
        "end_timestamp",
        "hash_slot_count",
        "index_count",
        "index_num",
        "mapped",
        "mm",
        "path",
        "slot_num",
        "space_error",
    )

    def __init__(
        self,
        path: Path,
        slot_num: int,
        index_num: int,
        *,
        end_phy_offset: int = 0,
        end_timestamp: int = 0,
    ) -> None:
        self.path = path
        self.space_error: OSError | None = None  # the last reservation that failed (disk full)
        self.slot_num = slot_num
        self.index_num = index_num
        is_new = not path.exists() or path.stat().st_size == 0
        self.mapped = MappedFile(path, 0, index_file_size(slot_num, index_num))
        self.mm = self.mapped.mm
        self._entries_at = INDEX_HEADER_SIZE + slot_num * HASH_SLOT_SIZE
        if is_new:
            try:
                # The slot table is written at random: its blocks are allocated and its pages faulted in
                # now rather than a page per put (and a full disk fails here, not with SIGBUS later).
                self.mapped.reserve(self._entries_at + RESERVE_WINDOW, advice=0)
            except BaseException:
                self.mapped.destroy()
                raise
            populate(self.mm, INDEX_HEADER_SIZE, slot_num * HASH_SLOT_SIZE, MADV_POPULATE_READ)
            self.begin_timestamp = end_timestamp
            self.end_timestamp = end_timestamp
            self.begin_phy_offset = end_phy_offset
            self.end_phy_offset = end_phy_offset
            self.hash_slot_count = 0
            self.index_count = 1
            self.write_header()
        else:
            (
                self.begin_timestamp,
                self.end_timestamp,
                self.begin_phy_offset,
                self.end_phy_offset,
                self.hash_slot_count,
                self.index_count,
            ) = INDEX_HEADER.unpack_from(self.mm, 0)
            self.index_count = max(1, min(self.index_count, index_num))
            self._recover_count()
        self.dirty = is_new

    def _recover_count(self) -> None:
        """Count the entries written after the header was last saved (a crash between flushes).

        Entries go in order and their offsets never decrease, so the ones past the saved count are
        the non-zero entries that continue the sequence. Without this, slots that already point at
        them would look invalid and cut the older entries of their chains off.
        """
        count = self.index_count
        last_phy = self.end_phy_offset if count > 1 else -1
        recovered = 0
        chunk = b""
        chunk_at = 0
        while count < self.index_num:
            at = self._entries_at + count * INDEX_ENTRY_SIZE
            if at + INDEX_ENTRY_SIZE > chunk_at + len(chunk):
                chunk_at = at
                chunk = read_range(self.path, at, min(self.mapped.file_size, at + 4096 * INDEX_ENTRY_SIZE))
                if len(chunk) < INDEX_ENTRY_SIZE:
                    break
            key_hash, phy, time_diff, prev = INDEX_ENTRY.unpack_from(chunk, at - chunk_at)
            if (
                (key_hash, phy, time_diff, prev) == (0, 0, 0, 0)
                or phy < last_phy
                or key_hash < 0
                or time_diff < 0
            ):
                break
            if count == 1:
                self.begin_phy_offset = phy
            last_phy = phy
            self.end_timestamp = max(self.end_timestamp, self.begin_timestamp + time_diff * 1000)
            count += 1
            recovered += 1
        if recovered:
            self.index_count = count
            self.end_phy_offset = last_phy
            self.dirty = True

    @property
    def is_write_full(self) -> bool:
        return self.index_count >= self.index_num

    def write_header(self) -> None:
        INDEX_HEADER.pack_into(
            self.mm,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )

    def put_key(self, key_hash: int, phy_offset: int, store_timestamp: int) -> bool:
        """Add an entry; False when the file is full (the caller rolls to a new file).

        Key hashes must come from index_key_hash (non-negative 31-bit); the build path inlines it.
        One of the hottest functions of the broker (every put with a UNIQ_KEY): locals, three struct calls.
        """
        count = self.index_count
        if count >= self.index_num:
            return False
        entry_end = self._entries_at + (count + 1) * INDEX_ENTRY_SIZE
        if entry_end > self.mapped.reserved:
            self.mapped.reserve(entry_end + RESERVE_WINDOW, advice=0)  # raises OSError when the disk is full
        mm = self.mm
        slot_pos = INDEX_HEADER_SIZE + (key_hash % self.slot_num) * HASH_SLOT_SIZE
        (slot_value,) = _SLOT_UNPACK(mm, slot_pos)
        if slot_value <= INVALID_INDEX or slot_value > count:
            slot_value = INVALID_INDEX
            self.hash_slot_count += 1
        begin = self.begin_timestamp
        time_diff = (store_timestamp - begin) // 1000 if store_timestamp > begin > 0 else 0
        if time_diff > _INT_MAX:
            time_diff = _INT_MAX
        _ENTRY_PACK(
            mm, self._entries_at + count * INDEX_ENTRY_SIZE, key_hash, phy_offset, time_diff, slot_value
        )
        _SLOT_PACK(mm, slot_pos, count)
        if count <= 1:
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = store_timestamp
        self.index_count = count + 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        self.dirty = True
        return True

    def put_entries(self, entries: list[tuple[int, int, int]], start: int) -> int:
        """put_key for entries[start:] of (key hash, commit-log offset, store timestamp), in order, with
        the header fields kept in locals; returns how far it got (short of the end: the file is full)."""
        count = self.index_count
        room = self.index_num - count
        if room <= 0:
            return start
        stop = min(len(entries), start + room)
        if stop <= start:
            return start
        entry_end = self._entries_at + (count + stop - start) * INDEX_ENTRY_SIZE
        if entry_end > self.mapped.reserved:
            try:
                self.mapped.reserve(entry_end + RESERVE_WINDOW, advice=0)
            except OSError as exc:
                # The disk is full: write what the reserved space holds; the caller sees the short count
                # on a file that is not full and finds the error in `space_error`.
                self.space_error = exc
                fits = (self.mapped.reserved - self._entries_at) // INDEX_ENTRY_SIZE - count
                if fits <= 0:
                    return start
                stop = start + fits
        count, new_slots, self.begin_phy_offset, self.begin_timestamp = _put_entries(
            self.mm, entries, start, stop, count, self._entries_at + count * INDEX_ENTRY_SIZE, self.slot_num,
            self.begin_timestamp, self.begin_phy_offset,
        )  # fmt: skip
        self.hash_slot_count += new_slots
        self.index_count = count
        self.end_phy_offset, self.end_timestamp = entries[stop - 1][1], entries[stop - 1][2]
        self.dirty = True
        return stop

    def is_time_matched(self, begin: int, end: int) -> bool:
        b, e = self.begin_timestamp, self.end_timestamp
        return (begin < b and end > e) or b <= begin <= e or b <= end <= e

    def select_phy_offsets(self, out: list[int], key_hash: int, max_num: int, begin: int, end: int) -> None:
        """Append to `out` the offsets of entries with `key_hash` stored in [begin, end] (ms), newest first."""
        mm = self.mm
        count = self.index_count
        (index,) = _SLOT.unpack_from(mm, INDEX_HEADER_SIZE + (key_hash % self.slot_num) * HASH_SLOT_SIZE)
        if index <= INVALID_INDEX or index > count or count <= 1:
            return
        seen = 0
        while len(out) < max_num and seen < count:
            seen += 1  # a chain longer than the file means a damaged file: stop, do not loop
            hash_read, phy, time_diff, prev = INDEX_ENTRY.unpack_from(
                mm, self._entries_at + index * INDEX_ENTRY_SIZE
            )
            if time_diff < 0:
                break
            time_read = self.begin_timestamp + time_diff * 1000
            # time_read is the store time rounded down to a whole second after beginTimestamp.
            if hash_read == key_hash and begin <= time_read + 999 and time_read <= end:
                out.append(phy)
            if prev <= INVALID_INDEX or prev > count or prev == index or time_read + 999 < begin:
                break
            index = prev

    def flush(self) -> None:
        """Write the header and make the file durable (worker thread)."""
        self.dirty = False
        try:
            self.write_header()
        except ValueError:
            return  # deleted meanwhile (cleanup)
        self.mapped.force()

    def close(self) -> None:
        if not self.mapped.closed:
            self.write_header()
        self.mapped.close()

    def destroy(self) -> None:
        self.mapped.destroy()
