"""Persistence of the broker's small state files (topics, subscription groups, consumer offsets).

Port of org.apache.rocketmq.common.ConfigManager (load / persist / configFilePath) over
rocketq.common.persist (temp + fsync + rename, `.bak` kept). Deviation: Java persists on the caller's
thread at every change; here a change only marks the manager dirty and wakes the broker's persist
service, which writes on a worker thread, so the event loop never blocks on fsync. Where Java's
ordering matters to a client (a topic created by UPDATE_AND_CREATE_TOPIC or by a send must survive a
kill -9 right after the answer), the request awaits `persist_changes()` before answering: the write
still runs on a worker thread. Shutdown writes everything once more, synchronously.

Invariants: one write at a time per file (a per-manager threading lock), so the periodic writer and the
final shutdown write never interleave on the same temp file; every change bumps a counter and each
write carries the counter of its snapshot, so a slower writer holding an older snapshot never replaces
a newer file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketq.common.persist import atomic_write_bytes
from rocketq.remoting.protocol.bodies import fastjson

log = logging.getLogger("rocketq.broker.persist")


class ConfigFileManager:
    """A table persisted as one JSON file under `<storeRoot>/config/`."""

    file_name: str = "config.json"

    def __init__(self, config_dir: str | Path | None) -> None:
        self._path = Path(config_dir) / self.file_name if config_dir is not None else None
        self._write_lock = threading.Lock()
        self._order_lock = threading.Lock()  # guards _persisted_changes across writer threads
        self._dirty = False
        self._changes = 0  # bumped by every mark_dirty
        self._persisted_changes = 0  # the change counter of the snapshot on disk
        self._on_change: Callable[[], None] | None = None
        self._durable_write: asyncio.Future[None] | None = None  # the write persist_changes waits on

    # -- subclass API -----------------------------------------------------------------------------
    def encode(self) -> dict[str, Any]:
        raise NotImplementedError

    def decode(self, data: Any) -> None:
        raise NotImplementedError

    # -- change tracking --------------------------------------------------------------------------
    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def dirty(self) -> bool:
        return self._dirty

    @property
    def changes(self) -> int:
        """How many changes were made so far (compare two readings to tell whether the table changed)."""
        return self._changes

    def set_change_listener(self, listener: Callable[[], None] | None) -> None:
        """Called (synchronously) whenever the table changes and wants persisting soon."""
        self._on_change = listener

    def mark_dirty(self, *, urgent: bool = True) -> None:
        """Record a change; `urgent` wakes the persist service now (topics), else it waits its period."""
        self._dirty = True
        self._changes += 1
        if urgent and self._on_change is not None:
            self._on_change()

    # -- load / persist -----------------------------------------------------------------------------
    def load(self) -> bool:
        """Read the file, or its .bak when the file is missing, empty or torn; False when neither exists.

        Raises ValueError naming the file when neither copy parses (the broker then refuses to start
        rather than run with an empty table and overwrite the evidence).
        """
        if self._path is None:
            return False
        problems: list[str] = []
        for candidate in (self._path, self._path.with_name(self._path.name + ".bak")):
            try:
                raw = candidate.read_bytes()
            except FileNotFoundError:
                continue
            if not raw:
                continue
            try:
                # fastjson's reader: Apache's broker writes integer map keys unquoted (consumerOffset.json's
                # {"topic@group":{0:6,1:6}}), which strict JSON refuses; a store moved from Apache's loads.
                data = fastjson.loads(raw)
            except ValueError as exc:
                problems.append(f"{candidate}: not valid JSON ({exc})")
                continue
            if problems:
                log.warning("%s; using the backup %s", problems[0], candidate)
            self.decode(data)
            return True
        if problems:
            raise ValueError("; ".join(problems))
        return False

    def snapshot(self) -> bytes | None:
        """The bytes to write now (clears the dirty flag), or None when nothing changed."""
        taken = self._take_snapshot()
        return None if taken is None else taken[1]

    def _take_snapshot(self) -> tuple[int, bytes] | None:
        if not self._dirty or self._path is None:
            return None
        self._dirty = False
        return self._changes, json.dumps(self.encode(), indent=2, sort_keys=True).encode("utf-8")

    def write(self, data: bytes) -> None:
        if self._path is None:
            return
        with self._write_lock:
            atomic_write_bytes(self._path, data)

    def _write_snapshot(self, changes: int, data: bytes) -> None:
        """Write a snapshot unless a newer one is on disk already (writer threads may finish out of order)."""
        with self._order_lock:
            if changes <= self._persisted_changes:
                return
            self.write(data)
            self._persisted_changes = changes

    def persist(self) -> None:
        """Write now on this thread if anything changed (shutdown path)."""
        taken = self._take_snapshot()
        if taken is not None:
            self._write_snapshot(*taken)

    async def persist_async(self) -> None:
        """Snapshot on the loop, write on a worker thread; a failed write marks the table dirty again."""
        taken = self._take_snapshot()
        if taken is None:
            return
        try:
            await asyncio.to_thread(self._write_snapshot, *taken)
        except asyncio.CancelledError:
            # Stopped mid-write (shutdown): the job may never have run, so the final persist writes again.
            self._dirty = True
            raise
        except OSError as exc:
            self._dirty = True
            log.error("persisting %s failed: %s", self._path, exc)

    async def persist_changes(self) -> bool:
        """Return once every change made so far is on disk (written now on a worker thread if needed).

        For requests whose answer promises durability (Java persists before it answers). False when
        the write failed (logged; the table stays dirty and the persist service tries again).
        Strategy (group commit): one durable write at a time; callers that arrive while it runs wait for
        it, and if their changes came after its snapshot, the next single write covers all of them, so
        a burst of N creates costs a handful of writes, not N.
        """
        target = self._changes
        if self._path is None:
            return True  # an in-memory table (tests, tools) has nothing to make durable
        while self._persisted_changes < target:
            running = self._durable_write
            # (a finished write whose owner has not run yet must not be awaited again: awaiting a done
            # future does not yield, and this loop would spin)
            if running is not None and not running.done():
                with contextlib.suppress(OSError):  # its owner logs a failure; we then try our own
                    await asyncio.shield(running)
                continue
            # A write holding these changes may be in flight from the persist service (its snapshot
            # cleared the dirty flag): writing them once more is cheap and certain. The snapshot is
            # taken here, synchronously, so it holds every change up to `target`.
            self._dirty = True
            taken = self._take_snapshot()
            assert taken is not None
            write = asyncio.ensure_future(asyncio.to_thread(self._write_snapshot, *taken))
            self._durable_write = write
            try:
                await asyncio.shield(write)
            except OSError as exc:
                self._dirty = True
                log.error("persisting %s failed: %s", self._path, exc)
                return False
            finally:
                if self._durable_write is write:
                    self._durable_write = None
        return True
