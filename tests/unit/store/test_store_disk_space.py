"""Disk space: reservations before writes, the disk-full flag and its checks, index entries a full disk
keeps back, and the consume-queue checkpoint that advances every queue flush round."""

from __future__ import annotations

import errno
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rocketq.store.config import MessageStoreConfig
from rocketq.store.consume_queue import ConsumeQueue, encode_unit, find_written_end
from rocketq.store.disk_space import (
    REFUSAL_LOG_EVERY,
    SERVICE_NOT_AVAILABLE_REMARK,
    DiskSpace,
    disk_used_ratio,
)
from rocketq.store.flush import flush_queues
from rocketq.store.index_file import IndexFile
from rocketq.store.mapped_file import MappedFile, read_range
from rocketq.store.status import PutMessageStatus

if TYPE_CHECKING:
    from conftest import Crash, MessageFactory, ReadAll, StoreFactory


def store_config(root: Path) -> MessageStoreConfig:
    return MessageStoreConfig.build({"storePathRootDir": str(root)})


class Disk:
    """A file system whose used ratio and free bytes the test sets."""

    def __init__(self) -> None:
        self.ratio = 0.5
        self.free = 1 << 40

    def usage(self, path: Path) -> float:
        return self.ratio

    def free_bytes(self, path: Path) -> int:
        return self.free


def _no_space(self: MappedFile, upto: int, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_the_disk_is_full_over_the_ratio_or_under_the_headroom_and_puts_check_when_near(
    tmp_path: Path,
) -> None:
    disk = Disk()
    space = DiskSpace(store_config(tmp_path), 1000, disk.usage, disk.free_bytes)
    assert not space.check() and not space.near
    disk.free = 3000  # under 4 x headroom: near, every put reads the disk
    assert not space.check() and space.near
    disk.free = 999
    assert not space.check_if_near()  # read less than NEAR_CHECK_INTERVAL_S ago: not again yet
    space._checked_at = 0.0
    assert space.check_if_near() and "999 bytes free" in space.reason
    disk.free, disk.ratio = 1 << 40, 0.91
    assert space.check() and "91.0% full" in space.reason
    disk.ratio = 0.5
    assert not space.check()
    assert space.remark() == SERVICE_NOT_AVAILABLE_REMARK.format(util="CL:  0.50 CQ:  0.50 INDEX:  0.50")


def test_after_a_failed_reservation_the_disk_stays_full_until_the_probe_succeeds(tmp_path: Path) -> None:
    disk = Disk()
    space = DiskSpace(store_config(tmp_path), 1000, disk.usage, disk.free_bytes)
    room = [False]

    def probe() -> None:
        if not room[0]:
            raise OSError(errno.ENOSPC, "still full")

    space.probe = probe
    space.mark_full(OSError(errno.ENOSPC, "No space left on device"), "commit log")
    assert space.full and space.check()  # probed at most every PROBE_INTERVAL_S
    space._probed_at = 0.0
    assert space.check() and "still full" in space.reason
    room[0] = True
    space._probed_at = 0.0
    assert not space.check()


async def test_a_consume_queue_reserves_before_a_put_and_a_full_disk_writes_nothing(
    make_store: StoreFactory, message: MessageFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store(mappedFileSizeConsumeQueue=20 * 30_000)
    assert (await store.put_message(message())).is_ok
    queue = store.queues.get("TopicA", 0)
    assert queue is not None
    mapped = queue.queue.last()
    assert mapped is not None and 20 <= mapped.reserved < mapped.file_size  # a window, not the file
    end = store.get_max_phy_offset()
    monkeypatch.setattr(MappedFile, "reserve", _no_space)
    mapped.reserved = 20  # the window is used up: the next unit needs a reservation
    queue.room_limit = queue.max_offset
    result = await store.put_message(message())
    assert result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.get_max_phy_offset() == end and queue.max_offset == 1  # no record without its unit


async def test_index_entries_a_full_disk_keeps_back_are_written_once_there_is_room(
    make_store: StoreFactory, message: MessageFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store(maxIndexNum=256)
    index = store.index
    assert index is not None
    assert (await store.put_message(message(keys="k0"))).is_ok
    index.drain()
    monkeypatch.setattr(IndexFile, "__init__", lambda *a, **k: _no_space(None, 0))  # type: ignore[arg-type]
    for i in range(1, 300):  # past the first file: a second one cannot be created
        index.build("TopicA", 10_000 + i, 1_700_000_000_000, 0, None, f"k{i}")
    assert index.space_error is not None and index.unwritten
    assert store.space.full  # the store refuses puts meanwhile
    first_kept = index.unwritten_from
    assert first_kept is not None and store.checkpoint is not None
    flush_queues(store.commit_log, store.queues, index, store.checkpoint, store.config)
    assert store.checkpoint.index_offset <= first_kept  # the checkpoint does not vouch for them
    monkeypatch.undo()
    index.drain()
    assert index.space_error is None and not index.unwritten
    assert index.query("TopicA", "k299", 4, 0, 2**62)[0] == [10_299]


async def test_the_queue_checkpoint_advances_without_a_thorough_flush(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store(flushConsumeQueueLeastPages=0)
    for _ in range(20):
        assert (await store.put_message(message())).is_ok
    assert store.checkpoint is not None and store.checkpoint.logics_offset == 0
    flush_queues(store.commit_log, store.queues, store.index, store.checkpoint, store.config, thorough=False)
    assert store.checkpoint.logics_offset == store.get_max_phy_offset()


def test_find_written_end_reads_through_a_function(tmp_path: Path) -> None:
    path = tmp_path / "cq"
    path.write_bytes(bytes(20) * 3 + b"\x01" + bytes(19) + bytes(200))
    assert find_written_end(lambda start, end: read_range(path, start, end), 280) == 80
    queue = ConsumeQueue("T", 0, tmp_path / "q", 400)
    queue.load()  # an empty directory
    assert queue.max_offset == 0


def test_a_queue_that_starts_in_the_middle_of_a_file_loads_its_end(tmp_path: Path) -> None:
    """Its file begins with a hole: the end is found in the last stretch of data, not at the first hole."""
    directory = tmp_path / "q"
    directory.mkdir()
    with open(directory / ("0" * 20), "wb") as fh:
        fh.truncate(20 * 3000)  # sparse
        fh.seek(20 * 2000)
        fh.write(encode_unit(12345, 100, 0) + encode_unit(12445, 100, 0))
    queue = ConsumeQueue("T", 0, directory, 20 * 3000)
    queue.load()
    assert queue.max_offset == 2002 and queue.unit(2001) == (12445, 100, 0)
    queue.close()


async def test_refused_puts_on_a_full_disk_log_one_line_in_refusal_log_every(
    make_store: StoreFactory,
    message: MessageFactory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """DefaultMessageStore.checkStoreStatus logs the first refused put of a run and then one in 50,000."""
    store = make_store()
    room = [False]

    def probe() -> None:
        if not room[0]:
            raise OSError(errno.ENOSPC, "No space left on device")

    store.space.probe = probe
    store.space.mark_full(OSError(errno.ENOSPC, "No space left on device"), "commit log")
    caplog.set_level(logging.INFO, logger="rocketq")

    def refusal_lines() -> int:
        return sum("not writable" in r.getMessage() for r in caplog.records)

    for _ in range(1000):
        assert (await store.put_message(message())).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert refusal_lines() == 1 and len(caplog.records) <= 2  # and nothing else per put
    store.space.refusals = REFUSAL_LOG_EVERY - 1  # skip ahead: the next refusal is the 50,000th
    for _ in range(3):
        await store.put_message(message())
    assert refusal_lines() == 2
    room[0] = True
    store.space._probed_at = 0.0
    assert (await store.put_message(message())).is_ok and store.space.refusals == 0  # a new run starts
    store.space.mark_full(OSError(errno.ENOSPC, "No space left on device"), "commit log")
    room[0] = False
    await store.put_message(message())
    assert refusal_lines() == 3


async def test_a_recovery_with_no_room_for_the_queues_starts_serving_reads_and_dispatches_the_rest_later(
    make_store: StoreFactory,
    message: MessageFactory,
    read_all: ReadAll,
    crash: Crash,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a crash the queues are rebuilt from the commit log, and no consume-queue unit can be
    reserved (a full disk): recovery stops re-dispatching instead of failing the start, the store opens
    with the disk marked full (reads served, puts refused), and the probe dispatches the rest once
    there is room; the next put continues the queue where the commit log has it."""
    store = make_store()
    for _ in range(30):
        assert (await store.put_message(message())).is_ok
    before = read_all(store, "TopicA", 0)
    crash(store)
    shutil.rmtree(store.config.consume_queue_dir)  # every unit must be written again, into new files
    real_reserve = MappedFile.reserve

    def reserve(self: MappedFile, upto: int, **kwargs: object) -> None:
        if "consumequeue" in self.path.parts:
            _no_space(self, upto)
        real_reserve(self, upto, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(MappedFile, "reserve", reserve)
    again = make_store()  # before: OSError out of recovery, a broker that cannot start
    assert again.recovery is not None and again.recovery.redispatch_stopped_at == 0
    assert again.space.full and again.get_max_offset_in_queue("TopicA", 0) == 0
    assert again.dispatch_behind_bytes() == again.get_max_phy_offset()
    assert (await again.put_message(message())).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    again.space._probed_at = 0.0
    assert again.space.check()  # still no room: still behind, still refusing
    monkeypatch.undo()
    again.space._probed_at = 0.0
    assert not again.space.check()
    assert read_all(again, "TopicA", 0) == before and again.dispatch_behind_bytes() == 0
    result = await again.put_message(message())
    assert result.is_ok and result.append is not None and result.append.logical_offset == 30


def test_the_used_ratio_is_java_s_and_df_s_blocks_reserved_for_root_count_neither_way(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import os

    class Vfs:  # 1000 blocks of 4 KiB: 300 free of which 250 usable by others, 50 reserved for root
        f_frsize, f_blocks, f_bfree, f_bavail = 4096, 1000, 300, 250

    monkeypatch.setattr(os, "statvfs", lambda path: Vfs)
    # Java UtilAll.getDiskPartitionSpaceUsedPercent: used = 700, used + usable = 950 (df's Use%),
    # not (total - usable) / total = 0.75, which would count the reserve as used
    assert disk_used_ratio(tmp_path) == pytest.approx(700 / 950)

    def refused(path: object) -> None:
        raise OSError(errno.ENOENT, "gone")

    monkeypatch.setattr(os, "statvfs", refused)
    assert disk_used_ratio(tmp_path) == -1.0
