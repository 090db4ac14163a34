"""Crash-safe persistence of small JSON/text files (config, offsets): temp + fsync + rename, with .bak.

Recovery rule: a reader tries the file, then `<file>.bak`; a leftover `<file>.tmp` is ignored (it was
never renamed, so it never became the truth). Port of RocketMQ's ConfigManager/MixAll.string2File
with tidwall/wal's atomicWrite.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` so that a crash leaves either the old or the new content."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    if target.exists():
        bak = target.with_name(target.name + ".bak")
        try:
            os.replace(target, bak)
        except OSError:
            pass
    os.replace(tmp, target)
    fsync_directory(target.parent)


def fsync_directory(directory: Path) -> None:
    """Make the entries of `directory` durable (a file created or renamed in it survives a power loss)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_with_backup(path: str | os.PathLike[str]) -> bytes | None:
    """The content of `path`, or of its `.bak` when the main file is missing or empty; None if neither."""
    target = Path(path)
    for candidate in (target, target.with_name(target.name + ".bak")):
        try:
            data = candidate.read_bytes()
        except FileNotFoundError:
            continue
        if data:
            return data
    return None


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    atomic_write_bytes(path, json.dumps(obj, indent=2, sort_keys=True).encode("utf-8"))


def read_json(path: str | os.PathLike[str]) -> Any | None:
    """Parsed JSON from `path` (or its .bak when the main file is unreadable); None when neither exists."""
    target = Path(path)
    for candidate in (target, target.with_name(target.name + ".bak")):
        try:
            data = candidate.read_bytes()
        except FileNotFoundError:
            continue
        if not data:
            continue
        try:
            return json.loads(data)
        except ValueError:
            continue
    return None
