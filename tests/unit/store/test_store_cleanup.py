"""Cleanup by age at deleteWhen, by disk ratio at any hour, queues and index following, puts on a full disk."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rocketq.common.clock import ManualClock
from rocketq.store.status import GetMessageStatus, PutMessageStatus

if TYPE_CHECKING:
    from conftest import MessageFactory, StoreFactory
    from rocketq.store.message_store import MessageStore

HOUR = 3_600_000


def local_ms(*args: int) -> int:
    return int(dt.datetime(*args).timestamp() * 1000)  # type: ignore[arg-type]  # year, month, day, ...


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(now_ms=local_ms(2024, 3, 10, 10, 0))  # a Sunday, 10:00 local time


class Disk:
    def __init__(self) -> None:
        self.ratio = 0.5

    def __call__(self, path: Path) -> float:
        return self.ratio


async def fill_files(store: MessageStore, message: MessageFactory, clock: ManualClock, files: int) -> None:
    """About three messages a file, one hour apart per file."""
    count = 0
    while len(store.commit_log.queue.files) < files:
        assert (
            await store.put_message(message(queue_id=count % 2, body=b"x" * 2000, keys=f"k{count}"))
        ).is_ok
        count += 1
        if count % 3 == 0:
            clock.advance(HOUR)


def advance_to(clock: ManualClock, *when: int) -> None:
    clock.advance(local_ms(*when) - clock.now_ms())


async def test_expired_files_go_at_delete_hour_and_queues_follow(
    make_store: StoreFactory, message: MessageFactory, clock: ManualClock
) -> None:
    disk = Disk()
    store = make_store(disk_usage=disk, fileReservedTime=87)
    await fill_files(store, message, clock, 6)
    first_names = [f.path.name for f in store.commit_log.queue.files]
    assert store.cleanup.run_once() == 0  # 10:00 + a few hours: not the hour, disk fine
    advance_to(clock, 2024, 3, 14, 3, 30)
    assert store.cleanup.run_once() == 0  # 87 h passed for two files, but it is 03:30
    advance_to(clock, 2024, 3, 14, 4, 10)
    deleted = store.cleanup.run_once()
    # File i is finished when file i+1 starts (10th, 11:00 + i h); 87 h later is the 14th, 02:00 + i h.
    assert deleted == 3
    assert [f.path.name for f in store.commit_log.queue.files] == first_names[deleted:]
    min_phy = store.get_min_phy_offset()
    assert min_phy == int(first_names[deleted])
    for queue_id in (0, 1):
        min_offset = store.get_min_offset_in_queue("TopicA", queue_id)
        assert min_offset > 0
        assert store.get_commit_log_offset_in_queue("TopicA", queue_id, min_offset) >= min_phy
        got = store.get_message("g", "TopicA", queue_id, 0, 32)
        assert (got.status, got.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, min_offset)
        assert store.get_message("g", "TopicA", queue_id, min_offset, 32).status is GetMessageStatus.FOUND
    assert store.get_earliest_message_time("TopicA", 0) == local_ms(2024, 3, 10, 13, 0)
    advance_to(clock, 2024, 3, 20, 4, 0)
    store.cleanup.run_once()
    assert len(store.commit_log.queue.files) == 1  # never the file being written
    assert store.query_message("TopicA", "k0", 8, 0, 2**62).records == []


async def test_a_full_disk_deletes_expired_files_at_any_hour(
    make_store: StoreFactory, message: MessageFactory, clock: ManualClock
) -> None:
    disk = Disk()
    store = make_store(disk_usage=disk)
    await fill_files(store, message, clock, 5)
    clock.advance(100 * HOUR)  # everything expired, but 14:00 is no delete hour
    assert store.cleanup.run_once() == 0
    disk.ratio = 0.80
    assert store.cleanup.run_once() == 4


async def test_a_very_full_disk_deletes_unexpired_files_and_refuses_puts(
    make_store: StoreFactory, message: MessageFactory, clock: ManualClock
) -> None:
    disk = Disk()
    store = make_store(disk_usage=disk)
    await fill_files(store, message, clock, 14)
    disk.ratio = 0.80
    assert store.cleanup.run_once() == 0  # over 75 % but nothing is 72 h old
    disk.ratio = 0.87
    assert store.cleanup.run_once() == 10  # forcibly, at most ten a round
    assert store.cleanup.run_once() == 3
    assert len(store.commit_log.queue.files) == 1
    assert (await store.put_message(message())).is_ok
    disk.ratio = 0.93
    store.cleanup.run_once()
    result = await store.put_message(message())
    assert result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE and "disk" in result.remark
    disk.ratio = 0.5
    store.cleanup.run_once()
    assert (await store.put_message(message())).is_ok


async def test_forcible_cleaning_can_be_switched_off_and_manual_delete(
    make_store: StoreFactory, message: MessageFactory, clock: ManualClock
) -> None:
    disk = Disk()
    store = make_store(disk_usage=disk, cleanFileForciblyEnable=False, fileReservedTime=1)
    await fill_files(store, message, clock, 5)
    disk.ratio = 0.88
    deleted = store.cleanup.run_once()
    assert deleted < 4  # only the files older than 1 h, not all
    disk.ratio = 0.5
    clock.advance(10 * HOUR)
    assert store.cleanup.run_once() == 0  # 20:00-ish: no delete hour
    store.execute_delete_files_manually()
    assert store.cleanup.run_once() > 0
    assert len(store.commit_log.queue.files) == 1
