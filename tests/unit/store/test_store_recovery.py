"""Recovery at open: clean restarts, crashes, torn and corrupted tails, damage in the middle, lost queues."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rocketq.common.record.codec import decode_record, decode_records
from rocketq.store.errors import StoreCorruptError, StoreLockedError
from rocketq.store.status import GetMessageStatus, PutMessageStatus

if TYPE_CHECKING:
    from conftest import Crash, MessageFactory, ReadAll, StoreFactory
    from rocketq.store.message_store import MessageStore


async def put_many(store: MessageStore, message: MessageFactory, count: int, size: int = 300) -> list[int]:
    offsets = []
    for i in range(count):
        result = await store.put_message(message(queue_id=i % 2, body=bytes([i % 256]) * size, keys=f"k{i}"))
        assert result.status is PutMessageStatus.PUT_OK and result.append is not None
        offsets.append(result.append.wrote_offset)
    return offsets


def patch_file(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(position)
        fh.write(data)


def commit_log_file(store: MessageStore, offset: int) -> tuple[Path, int]:
    size = store.config.mapped_file_size_commit_log_bytes
    start = offset - offset % size
    return store.config.commit_log_dir / f"{start:020d}", offset - start


def bodies(records: list[bytes]) -> list[bytes]:
    return [m.body for m in decode_records(b"".join(records))]


async def test_clean_restart_keeps_everything(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll
) -> None:
    store = make_store()
    await put_many(store, message, 40)
    before = [read_all(store, "TopicA", q) for q in (0, 1)]
    end = store.get_max_phy_offset()
    store.close()
    again = make_store()
    assert again.recovery is not None and not again.recovery.abnormal and not again.recovery.truncated_tail
    assert again.get_max_phy_offset() == end
    assert [read_all(again, "TopicA", q) for q in (0, 1)] == before
    result = await again.put_message(message(queue_id=0))
    assert result.append is not None and result.append.logical_offset == 20
    assert (
        end <= result.append.wrote_offset <= end + 100
    )  # right after, or at the next file if it did not fit
    assert len(again.query_message("TopicA", "k33", 8, 0, 2**62).records) == 1


async def test_crash_without_damage_loses_nothing(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll, crash: Crash
) -> None:
    store = make_store()
    await put_many(store, message, 40)
    before = read_all(store, "TopicA", 1)
    crash(store)
    again = make_store()
    assert again.recovery is not None and again.recovery.abnormal and not again.recovery.truncated_tail
    assert again.recovery.records_redispatched == 40
    assert read_all(again, "TopicA", 1) == before
    assert again.get_max_offset_in_queue("TopicA", 0) == 20


@pytest.mark.parametrize(
    "damage",
    ["torn-body", "torn-header", "flipped-body-byte", "bad-magic", "size-overruns-file"],
)
async def test_a_damaged_last_record_is_cut_after_a_crash(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll, crash: Crash, damage: str
) -> None:
    store = make_store()
    offsets = await put_many(store, message, 21)
    last = offsets[-1]
    path, pos = commit_log_file(store, last)
    crash(store)
    if damage == "torn-body":
        patch_file(path, pos + 150, bytes(200))  # the write stopped inside the body
    elif damage == "torn-header":
        patch_file(path, pos + 20, bytes(400))
    elif damage == "flipped-body-byte":
        patch_file(path, pos + 120, b"\xff")
    elif damage == "bad-magic":
        patch_file(path, pos + 4, b"\x00\x00\x00\x01")
    else:
        patch_file(path, pos, (10**6).to_bytes(4, "big"))
    again = make_store()
    assert again.recovery is not None and again.recovery.truncated_tail and again.recovery.problem
    assert again.get_max_phy_offset() == last
    assert again.get_max_offset_in_queue("TopicA", 0) == 10  # message 20 (queue 0, offset 10) is gone
    assert len(read_all(again, "TopicA", 0)) == 10
    assert again.select_one_message_by_offset(last) is None
    assert again.query_message("TopicA", "k20", 8, 0, 2**62).records == []
    # The cut tail is zeroed and the next message takes the same place and queue offset.
    result = await again.put_message(message(queue_id=0, body=b"after", keys="k20"))
    assert result.append is not None and (result.append.wrote_offset, result.append.logical_offset) == (
        last,
        10,
    )
    assert [decode_record(r)[0].body for r in again.query_message("TopicA", "k20", 8, 0, 2**62).records] == [
        b"after"
    ]
    again.close()
    third = make_store()
    assert third.recovery is not None and not third.recovery.truncated_tail
    assert bodies(read_all(third, "TopicA", 0))[-1] == b"after"


async def test_a_damaged_last_record_is_cut_after_a_clean_shutdown_too(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()
    offsets = await put_many(store, message, 5)
    store.close()
    path, pos = commit_log_file(store, offsets[-1])
    patch_file(path, pos + 100, b"\x00\x01\x02")
    again = make_store()
    assert again.recovery is not None and again.recovery.truncated_tail
    assert again.get_max_phy_offset() == offsets[-1]


async def test_damage_in_the_middle_is_an_error_naming_the_file(
    make_store: StoreFactory, message: MessageFactory, crash: Crash
) -> None:
    store = make_store()
    offsets = await put_many(store, message, 60)
    store.flush()  # everything is durable: damage below this point is not a torn tail
    crash(store)
    last_file_start = offsets[-1] - offsets[-1] % 8192
    victim = next(o for o in offsets if o >= last_file_start)
    assert victim < offsets[-1]  # valid records follow it in the same file
    path, pos = commit_log_file(store, victim)
    patch_file(path, pos + 120, b"\xee")
    with pytest.raises(StoreCorruptError) as info:
        make_store()
    assert info.value.path == str(path) and "valid records follow" in str(info.value)
    # The lock was released: the repaired store opens with everything.
    patch_file(path, pos + 120, bytes([offsets.index(victim) % 256]))
    assert make_store().get_max_phy_offset() > offsets[-1]


async def test_lost_consume_queues_are_rebuilt(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll, tmp_path: Path
) -> None:
    store = make_store()
    await put_many(store, message, 30)
    before = [read_all(store, "TopicA", q) for q in (0, 1)]
    store.close()
    for path in sorted((tmp_path / "store" / "consumequeue").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    again = make_store()
    assert [read_all(again, "TopicA", q) for q in (0, 1)] == before


async def test_queue_units_past_the_log_end_are_dropped(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll, crash: Crash
) -> None:
    store = make_store()
    offsets = await put_many(store, message, 12)
    crash(store)
    # The last three records vanish from the commit log (not flushed before power was lost).
    path, pos = commit_log_file(store, offsets[9])
    patch_file(path, pos, bytes(3 * 400))
    again = make_store()
    assert again.get_max_phy_offset() == offsets[9]
    # Records 9, 10 and 11 are gone: queue 0 keeps 0 2 4 6 8, queue 1 keeps 1 3 5 7.
    assert (again.get_max_offset_in_queue("TopicA", 0), again.get_max_offset_in_queue("TopicA", 1)) == (5, 4)
    got = again.get_message("g", "TopicA", 1, 4, 32)
    assert got.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
    assert len(read_all(again, "TopicA", 1)) == 4


async def test_lost_queue_units_are_rebuilt_from_the_log(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll, crash: Crash
) -> None:
    store = make_store()
    await put_many(store, message, 10)
    before = read_all(store, "TopicA", 0)
    queue = store.queues.get("TopicA", 0)
    assert queue is not None
    queue_file = queue.queue.files[0].path
    crash(store)
    patch_file(queue_file, 3 * 20, bytes(2 * 20))  # units 3 and 4 never reached the disk
    again = make_store()
    assert read_all(again, "TopicA", 0) == before


async def test_files_of_the_wrong_size_or_a_held_lock_refuse_to_open(
    make_store: StoreFactory, message: MessageFactory, tmp_path: Path
) -> None:
    store = make_store()
    await put_many(store, message, 3)
    with pytest.raises(StoreLockedError):
        make_store()
    store.close()
    path = store.config.commit_log_dir / f"{0:020d}"
    patch_file(path, 8192, b"extra")
    with pytest.raises(StoreCorruptError) as info:
        make_store()
    assert info.value.path == str(path) and "expected 8192" in str(info.value)


async def test_a_missing_middle_file_is_an_error(make_store: StoreFactory, message: MessageFactory) -> None:
    store = make_store()
    await put_many(store, message, 60)
    store.close()
    files = sorted(store.config.commit_log_dir.iterdir())
    files[1].unlink()
    with pytest.raises(StoreCorruptError, match="file missing"):
        make_store()


async def test_an_interrupted_file_creation_is_removed(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()
    await put_many(store, message, 3)
    store.close()
    leftover = store.config.commit_log_dir / f"{8192:020d}.tmp"
    leftover.write_bytes(b"")
    again = make_store()
    assert not leftover.exists() and again.get_max_offset_in_queue("TopicA", 0) == 2
