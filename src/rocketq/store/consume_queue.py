"""ConsumeQueue: the per-(topic, queue) index of 20-byte units (commit-log offset, size, tags code).

Port of org.apache.rocketmq.store.ConsumeQueue (4.9.8). A unit's logical offset is its position / 20.
Deviations: units are written at the position their logical offset names (Java appends at the file's
write position and logs a mismatch), so re-dispatch after a crash is idempotent and a lost unit stays a
hole (size 0, skipped by reads) instead of shifting every later offset; offsets here are unit counts,
not bytes; search by time binary-searches the whole queue by STORETIMESTAMP instead of picking a file
by its modification time; files are mapped on use, within a MappingBudget shared by all queues, and
unmapped when the budget needs room or the queue was idle between two `release_if_idle` calls, so an
idle queue holds no descriptor and no map. Disk space is reserved (fallocate) a window of RESERVE_WINDOW
bytes ahead of the writer, as Java's warmMappedFile writes a file out before use: a full disk then
fails the reservation with ENOSPC (the put is refused before its record is written, see
`prepare_room`) instead of a write into a hole of the mapping, which is SIGBUS. Loading reads the
last file with pread, never through the mapping, for the same reason (a read fault in a tmpfs hole
allocates a page).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable
from itertools import chain
from pathlib import Path

from rocketq.store.config import CQ_STORE_UNIT_SIZE
from rocketq.store.mapped_file import MappedFile, read_range
from rocketq.store.mapped_file_queue import MappedFileQueue
from rocketq.store.mapping_budget import MappingBudget

CQ_UNIT = struct.Struct(">qiq")
_UNIT_PACK = CQ_UNIT.pack_into
# count -> the Struct of that many units, for a batch of up to _UNITS_MAX records (a Struct holds ~100 bytes
# a unit: a larger batch, or a count past the first 64 seen, goes unit by unit).
_UNITS: dict[int, struct.Struct] = {}
_UNITS_MAX = 256


def _units_struct(count: int) -> struct.Struct | None:
    """The Struct of `count` consecutive consume-queue units, or None: pack them one by one."""
    units = _UNITS.get(count)
    if units is None and count <= _UNITS_MAX and len(_UNITS) < 64:
        units = _UNITS[count] = struct.Struct(">" + "qiq" * count)
    return units


# store_time(phys_offset, size) -> STORETIMESTAMP, or -1 when the record is gone.
StoreTimeLookup = Callable[[int, int], int]


def encode_unit(phys_offset: int, size: int, tags_code: int) -> bytes:
    return CQ_UNIT.pack(phys_offset, size, tags_code)


def decode_unit(raw: bytes) -> tuple[int, int, int]:
    phys, size, tags = CQ_UNIT.unpack(raw)
    return phys, size, tags


_SCAN_CHUNK = CQ_STORE_UNIT_SIZE * 3277  # about 64 KiB, whole units
RESERVE_WINDOW = CQ_STORE_UNIT_SIZE * 3277 * 4  # 256 KiB (13,108 units) reserved at a time
UNFLUSHED_LOOKAHEAD = 64  # holes skipped to find the first unflushed unit's record


def find_written_end(mm: object, limit: int) -> int:
    """Byte position just after the last written unit in [0, limit) of `mm` (a buffer, or a function
    (start, end) -> bytes).

    A written unit is never all zeros (its size is > 0), so this is the end of the last non-zero unit,
    found from the back: zero chunks are skipped by comparison, then the last chunk with data is
    stripped of its trailing zeros. Holes before it (a queue rebuilt from the middle) stay holes.
    """
    end = limit
    zeros = bytes(_SCAN_CHUNK)
    while end > 0:
        start = max(0, end - _SCAN_CHUNK)
        chunk = mm(start, end) if callable(mm) else mm[start:end]  # type: ignore[index]
        if chunk != zeros[: end - start]:
            last = start + len(chunk.rstrip(b"\0"))
            return -(-last // CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE
        end = start
    return 0


class ConsumeQueue:
    """One queue's units. `max_offset` is the next logical offset; `min_offset` the first still valid."""

    __slots__ = (
        "_budget",
        "_cur",
        "_cur_base",
        "_cur_mm",
        "_swept_max",
        "_used",
        "file_size",
        "max_offset",
        "min_offset",
        "queue",
        "queue_id",
        "room_limit",
        "topic",
        "units_per_file",
    )

    def __init__(
        self, topic: str, queue_id: int, directory: Path, file_size: int, budget: MappingBudget | None = None
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = file_size
        self.units_per_file = file_size // CQ_STORE_UNIT_SIZE
        self.queue = MappedFileQueue(directory, file_size, lazy=True)
        self._budget = budget
        self._used = False  # a file was mapped or read since the last release_if_idle
        self._swept_max = -1  # max_offset at the last release_if_idle
        self.max_offset = 0
        self.min_offset = 0
        self._cur: MappedFile | None = None
        self._cur_base = 0
        # First logical offset past the current file's reserved units (0: no current file); the put
        # path reads it to skip prepare_room while a unit has room.
        self.room_limit = 0
        self._cur_mm: object = None

    # -- mapping -------------------------------------------------------------------------------------
    def _mm(self, mapped: MappedFile) -> mmap.mmap:
        """The map of one of this queue's files, mapped now if it is not (every access but the put
        fast path, which writes through `_cur_mm`, comes through here)."""
        mm = mapped.mm if mapped.is_mapped else mapped.map()
        self._used = True
        if self._budget is not None:
            self._budget.touch(mapped, self._release)
        return mm

    def _release(self, mapped: MappedFile) -> None:
        """Unmap one file (the budget needs room); the put fast path stops writing through it."""
        if mapped is self._cur:
            self.room_limit = 0
            self._cur_mm = None
        mapped.unmap()

    def release_if_idle(self) -> int:
        """Unmap every file if the queue was neither written nor used since the last call; returns how
        many files were unmapped (unflushed units stay in the page cache; a flush reaches them by path)."""
        if self._used or self.max_offset != self._swept_max:
            self._used = False
            self._swept_max = self.max_offset
            return 0
        released = 0
        for mapped in self.queue.files:
            if mapped.is_mapped:
                self._forget(mapped)
                self._release(mapped)
                released += 1
        return released

    def _forget(self, mapped: MappedFile) -> None:
        if self._budget is not None:
            self._budget.forget(mapped)

    # -- open ----------------------------------------------------------------------------------------
    def load(self) -> None:
        """Map the files and find the end of the written units (Java ConsumeQueue.load + recover)."""
        self.queue.load()
        files = self.queue.files
        if not files:
            return
        last = files[-1]
        data_end = last.data_end(last_extent=True)
        end = find_written_end(lambda start, stop: read_range(last.path, start, stop), data_end)
        last.set_positions(end)
        # A pre-created-then-unused last file: the previous one ends the queue.
        self.max_offset = (last.file_from_offset + end) // CQ_STORE_UNIT_SIZE
        self.min_offset = files[0].file_from_offset // CQ_STORE_UNIT_SIZE
        self._set_current(last)

    def _set_current(self, mapped: MappedFile) -> None:
        self._cur = mapped
        self._cur_base = mapped.file_from_offset // CQ_STORE_UNIT_SIZE
        # The fast path writes up to the reserved end of the file, the slow path reserves more.
        self.room_limit = self._cur_base + min(mapped.reserved, mapped.file_size) // CQ_STORE_UNIT_SIZE
        self._cur_mm = self._mm(mapped)

    @property
    def max_physic_offset(self) -> int:
        """End (offset + size) of the record of the last unit; 0 when there is none (Java getMaxPhysicOffset)."""
        unit = self.unit(self.max_offset - 1) if self.max_offset > self.min_offset else None
        return unit[0] + unit[1] if unit is not None else 0

    # -- write ---------------------------------------------------------------------------------------
    def put(self, offset: int, phys_offset: int, size: int, tags_code: int) -> None:
        """Write the unit of logical `offset` (the dispatch of one record)."""
        if offset == self.max_offset and offset < self.room_limit:
            rel = (offset - self._cur_base) * CQ_STORE_UNIT_SIZE
            _UNIT_PACK(self._cur_mm, rel, phys_offset, size, tags_code)  # type: ignore[arg-type]
            self._cur.wrote_position = rel + CQ_STORE_UNIT_SIZE  # type: ignore[union-attr]
            self.max_offset = offset + 1
            return
        self._put_slow(offset, phys_offset, size, tags_code)

    def put_units(
        self, offset: int, phys_offsets: list[int], sizes: list[int], tags_codes: list[int]
    ) -> None:
        """Write the units of logical offsets `offset`, `offset` + 1, ... (the dispatch of a batch's
        records): in one pass over the current file when they all fit it, else one put each."""
        count = len(sizes)
        if offset == self.max_offset and offset + count <= self.room_limit:
            mm, rel = self._cur_mm, (offset - self._cur_base) * CQ_STORE_UNIT_SIZE
            # The units packed by one Struct of `count` units and written with one slice copy, not a
            # pack_into per unit.
            units = _units_struct(count)
            if units is not None:
                fields = chain.from_iterable(zip(phys_offsets, sizes, tags_codes, strict=True))
                units.pack_into(mm, rel, *fields)  # type: ignore[arg-type]
                rel += units.size
            else:
                for phys_offset, size, tags_code in zip(phys_offsets, sizes, tags_codes, strict=True):
                    _UNIT_PACK(mm, rel, phys_offset, size, tags_code)  # type: ignore[arg-type]
                    rel += CQ_STORE_UNIT_SIZE
            self._cur.wrote_position = rel  # type: ignore[union-attr]
            self.max_offset = offset + count
            return
        for phys_offset, size, tags_code in zip(phys_offsets, sizes, tags_codes, strict=True):
            self.put(offset, phys_offset, size, tags_code)
            offset += 1

    def _put_slow(self, offset: int, phys_offset: int, size: int, tags_code: int) -> None:
        if offset < self.max_offset:
            return  # already there: re-dispatch during recovery
        mapped, rel = self._room_for(offset)
        CQ_UNIT.pack_into(self._mm(mapped), rel, phys_offset, size, tags_code)
        mapped.wrote_position = rel + CQ_STORE_UNIT_SIZE
        self.max_offset = offset + 1
        self._set_current(mapped)

    def prepare_room(self, offset: int, count: int = 1) -> None:
        """Make sure units `offset` .. `offset + count - 1` can be written without touching unreserved
        disk (the put path calls it before it appends the records, when the fast path would not take
        them). Raises OSError (ENOSPC) when the disk has no room: nothing is written then."""
        if offset < self.max_offset:
            return
        last = offset + count - 1
        if offset == self.max_offset and last < self.room_limit:
            return
        self._room_for(offset)
        if last // self.units_per_file == offset // self.units_per_file:
            self._room_for(last, create=False)

    def _room_for(self, offset: int, create: bool = True) -> tuple[MappedFile, int]:
        """The file that holds unit `offset` and its byte position there, the file created and the unit's
        page reserved (a window ahead) if need be; raises OSError when the disk is full."""
        if self.max_offset == 0 and not self.queue.files:
            self.min_offset = offset
        byte_pos = offset * CQ_STORE_UNIT_SIZE
        mapped = self.queue.last()
        while create and (mapped is None or mapped.file_from_offset + self.file_size <= byte_pos):
            if mapped is not None:
                mapped.wrote_position = mapped.file_size  # a gap rolls over the rest of this file
            mapped = self.queue.get_last_or_create(byte_pos)
        assert mapped is not None
        rel = byte_pos - mapped.file_from_offset
        if rel + CQ_STORE_UNIT_SIZE > mapped.reserved:
            mapped.reserve(rel + RESERVE_WINDOW, advice=0)
            if mapped is self._cur:
                self._set_current(mapped)
        return mapped, rel

    def repair(self, offset: int, phys_offset: int, size: int, tags_code: int) -> MappedFile | None:
        """Rewrite the unit of `offset` below max_offset (recovery found it wrong); returns the file
        written (to be forced to disk) or None when no file holds `offset`."""
        mapped = self._file_of(offset)
        if mapped is None:
            return None
        CQ_UNIT.pack_into(
            self._mm(mapped),
            offset * CQ_STORE_UNIT_SIZE - mapped.file_from_offset,
            phys_offset,
            size,
            tags_code,
        )
        return mapped

    # -- read ----------------------------------------------------------------------------------------
    def _file_of(self, offset: int) -> MappedFile | None:
        if offset < self.min_offset or offset >= self.max_offset:
            return None
        return self.queue.find(offset * CQ_STORE_UNIT_SIZE)

    def unit(self, offset: int) -> tuple[int, int, int] | None:
        """(commit-log offset, size, tags code) of logical `offset`, or None outside the queue."""
        mapped = self._file_of(offset)
        if mapped is None:
            return None
        phys, size, tags = CQ_UNIT.unpack_from(
            self._mm(mapped), offset * CQ_STORE_UNIT_SIZE - mapped.file_from_offset
        )
        return phys, size, tags

    def units_from(self, offset: int, max_units: int) -> bytes | None:
        """Raw units from `offset` to the end of its file's written part (at most `max_units`).

        None when no file holds `offset` (Java getIndexBuffer returning null).
        """
        mapped = self._file_of(offset)
        if mapped is None:
            return None
        start = offset * CQ_STORE_UNIT_SIZE - mapped.file_from_offset
        end = min(mapped.wrote_position, start + max_units * CQ_STORE_UNIT_SIZE)
        if end <= start:
            return None
        return self._mm(mapped)[start:end]

    def roll_next_file(self, offset: int) -> int:
        """The first logical offset of the file after the one `offset` falls in."""
        return offset + self.units_per_file - offset % self.units_per_file

    def offset_by_time(self, timestamp_ms: int, min_phys: int, store_time: StoreTimeLookup) -> int:
        """The offset whose message was stored closest to `timestamp_ms` (an exact match wins, the
        earliest of equal ones; a tie between neighbours goes to the earlier), as Java 4.9.8 answers
        SEARCH_OFFSET_BY_TIMESTAMP. 0 for an empty queue."""
        lo, hi = self.min_offset, self.max_offset
        if lo >= hi:
            return 0

        def time_at(offset: int) -> int:
            unit = self.unit(offset)
            if unit is None or unit[1] <= 0 or unit[0] < min_phys:
                return -1  # gone or a hole: counts as older than anything
            return store_time(unit[0], unit[1])

        low, high = lo, hi  # first offset in [lo, hi) with time >= timestamp
        while low < high:
            mid = (low + high) // 2
            if time_at(mid) < timestamp_ms:
                low = mid + 1
            else:
                high = mid
        if low >= hi:
            return hi - 1
        right_time = time_at(low)
        if right_time == timestamp_ms or low == lo:
            return low
        left_time = time_at(low - 1)
        if left_time < 0:
            return low
        return low if abs(timestamp_ms - left_time) > abs(timestamp_ms - right_time) else low - 1

    # -- truncate / expire ---------------------------------------------------------------------------
    def truncate_to_phys(self, phys_end: int) -> None:
        """Drop the units of records that end beyond `phys_end` (the commit log was cut there)."""
        new_max = self.max_offset
        while new_max > self.min_offset:
            unit = self.unit(new_max - 1)
            if unit is not None and unit[1] > 0 and unit[0] + unit[1] <= phys_end:
                break
            new_max -= 1
        if new_max == self.max_offset:
            return
        byte_end = new_max * CQ_STORE_UNIT_SIZE
        for mapped in self.queue.files:
            if not mapped.file_from_offset <= byte_end < mapped.file_from_offset + self.file_size:
                continue
            start = max(0, byte_end - mapped.file_from_offset)
            self._mm(mapped)[start : mapped.wrote_position] = bytes(max(0, mapped.wrote_position - start))
        before = list(self.queue.files)
        self.queue.truncate_dirty(byte_end)
        for mapped in before:
            if mapped.closed:
                self._forget(mapped)
        self.max_offset = new_max
        last = self.queue.last()
        if last is not None:
            self._set_current(last)
        else:
            self._cur, self._cur_mm, self._cur_base, self.room_limit = None, None, 0, 0
            self.min_offset = self.max_offset = new_max

    def correct_min_offset(self, min_phys: int) -> None:
        """Move min_offset to the first unit whose record is still in the commit log.

        Leading holes (a queue rebuilt from the middle) are skipped first; then, as units grow in
        commit-log offset, a binary search finds the first unit at or above `min_phys`.
        """
        low, high = self.min_offset, self.max_offset
        while low < high:
            unit = self.unit(low)
            if unit is not None and unit[1] > 0:
                break
            low += 1
        while low < high:
            mid = (low + high) // 2
            unit = self.unit(mid)
            if unit is not None and unit[1] > 0 and unit[0] < min_phys:
                low = mid + 1
            else:
                high = mid
        self.min_offset = low

    def delete_expired_files(self, min_phys: int) -> int:
        """Delete the files whose units all point below `min_phys` (never the last file)."""
        count = 0
        files = self.queue.files
        while count < len(files) - 1:
            mapped = files[count]
            last_unit = CQ_UNIT.unpack_from(self._mm(mapped), mapped.file_size - CQ_STORE_UNIT_SIZE)
            if last_unit[0] + last_unit[1] > min_phys:
                break
            count += 1
        if count:
            for mapped in self.queue.delete_first_files(count):
                self._forget(mapped)
            self.min_offset = max(self.min_offset, self.queue.min_offset // CQ_STORE_UNIT_SIZE)
        self.correct_min_offset(min_phys)
        return count

    def flush(self, least_pages: int = 0) -> int:
        return self.queue.flush(least_pages)

    def first_unflushed_phys(self) -> int | None:
        """The commit-log offset of the record of the first unit not yet flushed: None when every unit
        is durable, -1 when it cannot be told now (thread-safe: the queue flush asks it on its worker;
        a file unmapped or deleted meanwhile just answers -1)."""
        where = self.queue.flushed_where
        end = self.max_offset * CQ_STORE_UNIT_SIZE
        if where >= end:
            return None
        for _ in range(UNFLUSHED_LOOKAHEAD):
            mapped = self.queue.find(where)
            if mapped is None or where >= end:
                return -1
            rel = where - mapped.file_from_offset
            try:
                if mapped.is_mapped:
                    phys, size, _tags = CQ_UNIT.unpack_from(mapped.mm, rel)
                else:  # released while idle: read the page cache by path
                    phys, size, _tags = CQ_UNIT.unpack(read_range(mapped.path, rel, rel + CQ_STORE_UNIT_SIZE))
            except (ValueError, OSError, struct.error):
                return -1  # unmapped or deleted meanwhile
            if size > 0:
                return int(phys)
            where += CQ_STORE_UNIT_SIZE  # a hole: the next unit tells
        return -1

    def close(self) -> None:
        for mapped in self.queue.files:
            self._forget(mapped)
        self.queue.close()

    def destroy(self) -> None:
        for mapped in self.queue.files:
            self._forget(mapped)
        self.queue.destroy()
        self.max_offset = self.min_offset = 0
        self._cur, self._cur_mm, self._cur_base, self.room_limit = None, None, 0, 0
