"""IndexService: the index files under index/, named by creation time, and the keys of each message.

Port of org.apache.rocketmq.store.index.IndexService (4.9.8): every message with UNIQ_KEY gets the key
`topic#UNIQ_KEY`, and each space-separated word of KEYS gets `topic#KEY`; ROLLBACK records are not
indexed; a full file is followed by a new one that starts where it ended; queries walk the files from
the newest back while they overlap the time range, up to maxMsgsNumBatch (64) offsets.
Deviations: the "already indexed" check uses an in-memory next offset (set from the last header at load,
lowered by recovery truncation) instead of comparing with the header's endPhyOffset directly; the put
path does not write a record's entries itself but queues them (`pending`), and they are written in
bulk once PENDING_MAX have gathered, before any query, flush, truncation, cleanup or close, and before
a record is indexed directly (`build`): the files hold the same entries in the same order, about half
a microsecond a message cheaper. The durable index offset in the checkpoint is taken after a drain.
On a full disk the entries that found no room wait in `unwritten` (the store refuses puts meanwhile,
as Java's makeIndexFileError does) and are written by a later drain; the checkpoint stops short of them.
"""

from __future__ import annotations

import datetime as _dt
import errno
import logging
import os
from collections.abc import Callable
from pathlib import Path

from rocketq.common import constants as C
from rocketq.common.clock import Clock
from rocketq.store.index_file import (
    IndexFile,
    index_key_hash,
    java_string_hash,
    legacy_index_key_hash,
    positive_key_hash,
)
from rocketq.store.mapped_file import TMP_SUFFIX

log = logging.getLogger("rocketq.store")

MAX_MSGS_NUM_BATCH = 64
PENDING_MAX = 256  # records whose entries wait to be written in one go
_KEY_SEPARATOR = C.KEY_SEPARATOR
_ROLLBACK = int(C.MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)


def key_prefix(topic: str) -> int:
    """String.hashCode of "topic#": a key's hash continues from it (java_string_hash(key, prefix) is the
    hash of "topic#key"), so a topic's part is computed once."""
    return java_string_hash(f"{topic}#")


def index_file_name(now_ms: int) -> str:
    """yyyyMMddHHmmssSSS in local time (Java UtilAll.timeMillisToHumanString)."""
    moment = _dt.datetime.fromtimestamp(now_ms / 1000)
    return moment.strftime("%Y%m%d%H%M%S") + f"{now_ms % 1000:03d}"


class IndexService:
    def __init__(self, directory: Path, slot_num: int, index_num: int, clock: Clock) -> None:
        self.directory = directory
        self.slot_num = slot_num
        self.index_num = index_num
        self.clock = clock
        self.files: list[IndexFile] = []
        self.next_phy = 0  # records starting below this offset are indexed already
        self._prefixes: dict[str, int] = {}  # key_prefix by topic, for build()
        # (key prefix, commit-log offset, store timestamp, UNIQ_KEY, KEYS) of records not indexed yet,
        # in commit-log order; the put path appends here and calls drain() at PENDING_MAX.
        self.pending: list[tuple[int, int, int, str | None, str | None]] = []
        # (key hash, commit-log offset, store timestamp) entries a full disk kept from being written, and
        # the error that said so; written before anything else once the disk has room.
        self.unwritten: list[tuple[int, int, int]] = []
        self.space_error: OSError | None = None
        self.on_space_error: Callable[[OSError], None] | None = None  # the store refuses puts meanwhile

    # -- open / close --------------------------------------------------------------------------------
    def load(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for name in sorted(os.listdir(self.directory)):
            if name.endswith(TMP_SUFFIX):  # a creation interrupted by a crash
                (self.directory / name).unlink(missing_ok=True)
            if not name.isdigit():
                continue
            self.files.append(IndexFile(self.directory / name, self.slot_num, self.index_num))
        self.next_phy = self._next_phy_from_headers()

    def _next_phy_from_headers(self) -> int:
        for index_file in reversed(self.files):
            if index_file.index_count > 1:
                return index_file.end_phy_offset + 1
        return 0

    def truncate(self, max_phy: int) -> None:
        """The commit log now ends at `max_phy`: re-index from there. Stale entries beyond it stay in
        the files; a query checks every candidate record's topic and keys, so they never answer."""
        self.drain()
        self.unwritten = [entry for entry in self.unwritten if entry[1] < max_phy]
        self.next_phy = min(self.next_phy, max_phy)
        for index_file in self.files:
            if index_file.end_phy_offset >= max_phy:
                index_file.end_phy_offset = max_phy

    def close(self) -> None:
        self.drain()
        for index_file in self.files:
            index_file.close()

    # -- build ---------------------------------------------------------------------------------------
    def _writable(self) -> IndexFile:
        last = self.files[-1] if self.files else None
        if last is not None and not last.is_write_full:
            return last
        now = self.clock.now_ms()
        name = index_file_name(now)
        while (self.directory / name).exists():
            now += 1
            name = index_file_name(now)
        end_phy = last.end_phy_offset if last is not None else 0
        end_ts = last.end_timestamp if last is not None else 0
        self.directory.mkdir(parents=True, exist_ok=True)
        created = IndexFile(
            self.directory / name, self.slot_num, self.index_num, end_phy_offset=end_phy, end_timestamp=end_ts
        )
        self.files.append(created)
        return created

    def build(
        self, topic: str, phys: int, store_ts: int, sys_flag: int, uniq_key: str | None, keys: str | None
    ) -> None:
        """Index one record's keys now (Java IndexService.buildIndex); recovery and batches use it."""
        self.drain()
        if phys < self.next_phy:
            return
        if sys_flag & 0xC == _ROLLBACK or not (uniq_key or keys):
            self.next_phy = phys + 1
            return
        prefix = self._prefixes.get(topic)
        if prefix is None:
            if len(self._prefixes) > 100_000:
                self._prefixes.clear()
            prefix = self._prefixes[topic] = key_prefix(topic)
        self.pending.append((prefix, phys, store_ts, uniq_key, keys))
        self.drain()

    def drain(self) -> None:
        """Write the entries of the pending records (loop thread)."""
        pending = self.pending
        if not pending and not self.unwritten:
            return
        entries: list[tuple[int, int, int]] = []
        add = entries.append
        next_phy = self.next_phy
        for prefix, phys, store_ts, uniq_key, keys in pending:
            if phys < next_phy:
                continue  # indexed already (re-dispatch)
            next_phy = phys + 1
            if uniq_key:
                # String.hashCode continues over "topic#" and then the key.
                add((positive_key_hash(java_string_hash(uniq_key, prefix)), phys, store_ts))
            if keys:
                for key in keys.split(_KEY_SEPARATOR):
                    if key:
                        add((positive_key_hash(java_string_hash(key, prefix)), phys, store_ts))
        pending.clear()
        self.next_phy = next_phy
        if self.unwritten:
            entries = self.unwritten + entries
            self.unwritten = []
        self._write(entries)

    def _write(self, entries: list[tuple[int, int, int]]) -> None:
        """Write entries into the last file and new ones after it; on a full disk keep the rest in
        `unwritten` (written first by the next drain) and the error in `space_error`."""
        done = 0
        try:
            index_file = self.files[-1] if self.files else self._writable()
            while True:
                done = index_file.put_entries(entries, done)
                if done >= len(entries):
                    if self.space_error is not None:
                        log.info("index: entries are written again (the disk has room)")
                    self.space_error = None
                    return
                if not index_file.is_write_full:
                    raise index_file.space_error or OSError(errno.ENOSPC, "no room for index entries")
                index_file = self._writable()  # full: the next file starts where it ended
        except OSError as exc:
            if self.space_error is None:
                log.error("index: cannot write entries (%r); kept for when the disk has room", exc)
            self.space_error = exc
            self.unwritten = entries[done:]
            if self.on_space_error is not None:
                self.on_space_error(exc)

    @property
    def unwritten_from(self) -> int | None:
        """The commit-log offset of the first record whose entries wait for disk space (None: none)."""
        return self.unwritten[0][1] if self.unwritten else None

    # -- query ---------------------------------------------------------------------------------------
    def query(self, topic: str, key: str, max_num: int, begin: int, end: int) -> tuple[list[int], int, int]:
        """(candidate commit-log offsets newest first, last update timestamp, last update offset)."""
        self.drain()
        offsets: list[int] = []
        max_num = min(max_num, MAX_MSGS_NUM_BATCH)
        if not self.files or max_num <= 0:
            return offsets, 0, 0
        full_key = f"{topic}#{key}"
        key_hash = index_key_hash(full_key)
        # Files written by earlier rocketq versions hold CRC-32 hashes: a key is looked up under both (a
        # wrong candidate costs a record read; the store checks every candidate's topic and keys).
        legacy_hash = legacy_index_key_hash(full_key)
        last = self.files[-1]
        for index_file in reversed(self.files):
            if index_file.is_time_matched(begin, end):
                index_file.select_phy_offsets(offsets, key_hash, max_num, begin, end)
                if legacy_hash != key_hash and len(offsets) < max_num:
                    legacy: list[int] = []
                    index_file.select_phy_offsets(legacy, legacy_hash, max_num - len(offsets), begin, end)
                    offsets.extend(o for o in legacy if o not in offsets)
            if index_file.begin_timestamp < begin or len(offsets) >= max_num:
                break
        return offsets, last.end_timestamp, last.end_phy_offset

    # -- flush / cleanup -----------------------------------------------------------------------------
    def flush(self) -> None:
        """Flush the files written since the last flush (worker thread: drain() first, on the loop)."""
        for index_file in list(self.files):
            if index_file.dirty and not index_file.mapped.closed:
                index_file.flush()

    def delete_expired(self, min_phy: int) -> int:
        """Delete the files whose entries all point below `min_phy` (never the last one)."""
        self.drain()
        count = 0
        while len(self.files) > 1 and self.files[0].end_phy_offset < min_phy:
            self.files.pop(0).destroy()
            count += 1
        return count
