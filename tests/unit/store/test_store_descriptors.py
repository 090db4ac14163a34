"""Descriptors: one at most per mapped store file, consume-queue maps within a budget, idle queues none."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rocketq.common.record.codec import decode_record
from rocketq.store.status import PutMessageStatus

if TYPE_CHECKING:
    from conftest import Crash, MessageFactory, ReadAll, StoreFactory
    from rocketq.store.message_store import MessageStore

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")

NOT_MAPPED = {"lock", "checkpoint", "abort"}  # the lock and the checkpoint hold one descriptor each
HELD = 2  # the lock and the checkpoint
PASSING = 2  # short-lived ones of the allocator thread (creating the next file, reserving space)


def open_fds(root: Path) -> int:
    """Descriptors of this process open on files under `root` (the store's own: other tests' threads
    and the interpreter may open and close descriptors of their own meanwhile)."""
    prefix = str(root.resolve())
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed since the listing
        if target.startswith(prefix):
            count += 1
    return count


def store_files(root: Path) -> list[Path]:
    """The mapped files of a store: commit-log, consume-queue and index files."""
    return [
        p for p in root.rglob("*") if p.is_file() and p.name not in NOT_MAPPED and p.parent.name != "config"
    ]


async def fill(
    store: MessageStore, message: MessageFactory, topics: int, queues: int, rounds: int = 1
) -> None:
    for r in range(rounds):
        for t in range(topics):
            for q in range(queues):
                result = await store.put_message(message(f"T{t:03d}", q, body=b"%d/%d/%d" % (r, t, q)))
                assert result.status is PutMessageStatus.PUT_OK


async def test_descriptors_grow_by_at_most_one_per_mapped_file(
    make_store: StoreFactory, message: MessageFactory, tmp_path: Path
) -> None:
    before = open_fds(tmp_path / "store")
    store = make_store()
    await fill(store, message, topics=40, queues=4)
    files = store_files(tmp_path / "store")
    assert len(files) >= 160  # a consume-queue file per queue, commit-log and index files
    assert open_fds(tmp_path / "store") - before <= len(files) + HELD + PASSING
    store.close()
    assert open_fds(tmp_path / "store") <= before


async def test_consume_queue_maps_stay_within_the_budget(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll, tmp_path: Path
) -> None:
    before = open_fds(tmp_path / "store")
    store = make_store(maxMappedConsumeQueueFiles=8)
    # Round after round over 60 queues: every put finds its queue's file unmapped to make room.
    await fill(store, message, topics=20, queues=3, rounds=3)
    assert len(store.queues.budget) <= 8 and store.queues.budget.unmapped > 100
    others = [p for p in store_files(tmp_path / "store") if "consumequeue" not in p.parts]
    assert open_fds(tmp_path / "store") - before <= len(others) + 8 + HELD + PASSING
    for t in range(20):
        for q in range(3):
            bodies = [decode_record(r)[0].body for r in read_all(store, f"T{t:03d}", q)]
            assert bodies == [b"%d/%d/%d" % (r, t, q) for r in range(3)]
    assert open_fds(tmp_path / "store") - before <= len(others) + 8 + HELD + PASSING
    store.close()
    again = make_store(maxMappedConsumeQueueFiles=8)  # load and recovery keep to the budget too
    assert len(again.queues.budget) <= 8
    assert open_fds(tmp_path / "store") - before <= len(others) + 8 + HELD + PASSING
    assert [len(read_all(again, f"T{t:03d}", 1)) for t in range(20)] == [3] * 20


async def test_idle_queues_give_their_maps_back(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll, crash: Crash, tmp_path: Path
) -> None:
    store = make_store()
    await fill(store, message, topics=10, queues=2)
    queues = store.queues
    assert queues.release_idle() == 0  # everything was just used
    mapped = open_fds(tmp_path / "store")
    await store.put_message(message("T000", 0, body=b"busy"))
    assert queues.release_idle() == 19  # every queue but T000/0 was idle for a whole round
    assert mapped - open_fds(tmp_path / "store") >= 19
    busy = queues.get("T000", 0)
    assert busy is not None and all(f.is_mapped for f in busy.queue.files)
    # An unmapped queue is mapped again by a read or a put; its unflushed units are flushed by path.
    assert len(read_all(store, "T005", 1)) == 1
    await store.put_message(message("T006", 1, body=b"again"))
    assert queues.release_idle() == 1  # T000/0, idle since the last round
    assert queues.release_idle() == 2  # T005/1 and T006/1, with units not flushed yet
    store.flush()
    idle = queues.get("T006", 1)
    assert idle is not None and not idle.queue.files[0].is_mapped and not idle.queue.has_unflushed
    crash(store)
    again = make_store()
    assert len(read_all(again, "T006", 1)) == 2
