"""Persistence of the broker's small state files (topics, subscription groups, consumer offsets).

Port of org.apache.rocketmq.common.ConfigManager (load / persist / configFilePath) over
rocketq.common.persist (temp + fsync + rename, `.bak` kept). Deviation: Java persists on the caller's
thread at every change; here a change only marks the manager dirty and wakes the broker's persist
service, which writes on a worker thread, so a topic created by a send never blocks the event loop on
fsync. Shutdown writes everything once more, synchronously.

Invariant: one write at a time per file (a per-manager threading lock), so the periodic writer and the
final shutdown write never interleave on the same temp file.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketq.common.persist import atomic_write_bytes

log = logging.getLogger("rocketq.broker.persist")


class ConfigFileManager:
    """A table persisted as one JSON file under `<storeRoot>/config/`."""

    file_name: str = "config.json"

    def __init__(self, config_dir: str | Path | None) -> None:
        self._path = Path(config_dir) / self.file_name if config_dir is not None else None
        self._write_lock = threading.Lock()
        self._dirty = False
        self._on_change: Callable[[], None] | None = None

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

    def set_change_listener(self, listener: Callable[[], None] | None) -> None:
        """Called (synchronously) whenever the table changes and wants persisting soon."""
        self._on_change = listener

    def mark_dirty(self, *, urgent: bool = True) -> None:
        """Record a change; `urgent` wakes the persist service now (topics), else it waits its period."""
        self._dirty = True
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
                data = json.loads(raw)
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
        if not self._dirty or self._path is None:
            return None
        self._dirty = False
        return json.dumps(self.encode(), indent=2, sort_keys=True).encode("utf-8")

    def write(self, data: bytes) -> None:
        if self._path is None:
            return
        with self._write_lock:
            atomic_write_bytes(self._path, data)

    def persist(self) -> None:
        """Write now on this thread if anything changed (shutdown path)."""
        data = self.snapshot()
        if data is not None:
            self.write(data)

    async def persist_async(self) -> None:
        """Snapshot on the loop, write on a worker thread; a failed write marks the table dirty again."""
        data = self.snapshot()
        if data is None:
            return
        try:
            await asyncio.to_thread(self.write, data)
        except asyncio.CancelledError:
            # Stopped mid-write (shutdown): the job may never have run, so the final persist writes again.
            self._dirty = True
            raise
        except OSError as exc:
            self._dirty = True
            log.error("persisting %s failed: %s", self._path, exc)
