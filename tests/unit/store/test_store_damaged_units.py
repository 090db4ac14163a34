"""Consume-queue units that do not name their record (torn, overwritten): never served, repaired at open."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rocketq.common.record.codec import decode_record
from rocketq.common.record.layout import body_crc
from rocketq.store.consume_queue import CQ_UNIT
from rocketq.store.recovery import TAIL_UNITS_CHECKED

if TYPE_CHECKING:
    from conftest import Crash, MessageFactory, ReadAll, StoreFactory
    from rocketq.store.message_store import MessageStore


async def put_round_robin(store: MessageStore, message: MessageFactory, count: int) -> list[int]:
    """`count` messages alternating over queues 0 and 1; returns their commit-log offsets."""
    offsets = []
    for i in range(count):
        result = await store.put_message(message(queue_id=i % 2, body=b"%03d:" % i + bytes(200), tags="T"))
        assert result.is_ok and result.append is not None
        offsets.append(result.append.wrote_offset)
    return offsets


def unit_file(store: MessageStore, queue_id: int, offset: int) -> tuple[Path, int]:
    queue = store.queues.get("TopicA", queue_id)
    assert queue is not None
    unit_pos = offset * CQ_UNIT.size
    mapped = queue.queue.find(unit_pos)
    assert mapped is not None
    return mapped.path, unit_pos - mapped.file_from_offset


def patch_file(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(position)
        fh.write(data)


def overwrite_unit(store: MessageStore, queue_id: int, offset: int, unit: tuple[int, int, int]) -> None:
    """Damage a unit of a store that is open: through its mapping, as a stray write would."""
    queue = store.queues.get("TopicA", queue_id)
    assert queue is not None
    assert queue.repair(offset, *unit) is not None


def assert_sound(records: list[bytes]) -> None:
    for record in records:
        msg, end = decode_record(record)
        assert end == len(record) and body_crc(msg.body) == msg.body_crc


@pytest.mark.parametrize("kind", ["mid-record", "other-queue-record", "wrong-size"])
async def test_a_unit_that_does_not_name_its_record_is_skipped_and_logged_once(
    make_store: StoreFactory, message: MessageFactory, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    store = make_store()
    offsets = await put_round_robin(store, message, 16)  # queue 0: offsets[0], [2], ... [14]
    phys, size, tags = store.queues.get("TopicA", 0).unit(3)  # type: ignore[union-attr]
    if kind == "mid-record":
        damaged = (offsets[2] + 17, size, tags)
    elif kind == "other-queue-record":
        damaged = (offsets[1], size, tags)  # a sound record, but queue 1's offset 0
    else:
        damaged = (phys, size - 1, tags)
    overwrite_unit(store, 0, 3, damaged)
    overwrite_unit(store, 0, 5, (offsets[4] + 33, size, tags))
    with caplog.at_level(logging.ERROR, logger="rocketq.store"):
        got = store.get_message("g", "TopicA", 0, 0, 32)
        again = store.get_message("g", "TopicA", 0, 4, 32)
    assert got.queue_offsets == [0, 1, 2, 4, 6, 7] and got.next_begin_offset == 8
    assert_sound(got.records)
    assert [decode_record(r)[0].queue_offset for r in got.records] == got.queue_offsets
    assert again.queue_offsets == [4, 6, 7]
    assert len([r for r in caplog.records if "TopicA/0" in r.getMessage()]) == 1
    # Skipped units do not count against max_count (as filtered ones): the pull goes on past them.
    one = store.get_message("g", "TopicA", 0, 3, 1)
    assert one.queue_offsets == [4] and one.next_begin_offset == 5
    # Only damaged units left: nothing found, and the reader moves past them.
    overwrite_unit(store, 0, 7, (offsets[4] + 33, size, tags))
    last = store.get_message("g", "TopicA", 0, 7, 32)
    assert last.records == [] and last.next_begin_offset == 8


async def test_a_wrong_commit_log_offset_finds_no_record(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()
    offsets = await put_round_robin(store, message, 4)
    size = offsets[1] - offsets[0]
    assert store.select_one_message_by_offset(offsets[1]) is not None
    assert store.select_one_message_by_offset(offsets[1], size) is not None
    assert store.select_one_message_by_offset(offsets[1] + 17) is None
    assert store.select_one_message_by_offset(offsets[1] + 17, size) is None
    assert store.select_one_message_by_offset(offsets[1], size + 1) is None
    assert store.look_message_by_offset(offsets[1] + 4) is None


@pytest.mark.parametrize("shutdown", ["clean", "crash"])
@pytest.mark.parametrize("damage", ["garbage", "torn", "other-record"])
async def test_damaged_last_units_are_rewritten_from_the_log_at_open(
    make_store: StoreFactory,
    message: MessageFactory,
    read_all: ReadAll,
    crash: Crash,
    shutdown: str,
    damage: str,
) -> None:
    store = make_store()
    offsets = await put_round_robin(store, message, 20)
    before = [read_all(store, "TopicA", q) for q in (0, 1)]
    path, pos = unit_file(store, 1, 9)  # the last unit of queue 1
    if shutdown == "clean":
        store.close()
    else:
        store.flush()  # the units are durable: the checkpoint does not make recovery re-dispatch them
        crash(store)
    if damage == "garbage":
        patch_file(path, pos, (offsets[10] + 17).to_bytes(8, "big"))
    elif damage == "torn":
        patch_file(path, pos + 8, bytes(12))  # size and tags code never written
    else:
        patch_file(path, pos, offsets[17].to_bytes(8, "big"))  # queue 1's offset 8
    again = make_store()
    assert again.recovery is not None
    assert (again.recovery.damaged_queues, again.recovery.units_repaired) == (1, 1)
    assert [read_all(again, "TopicA", q) for q in (0, 1)] == before
    result = await again.put_message(message(queue_id=1, body=b"after"))
    assert result.append is not None and result.append.logical_offset == 10
    again.close()
    third = make_store()  # the repair reached the disk
    assert third.recovery is not None and third.recovery.units_repaired == 0
    assert read_all(third, "TopicA", 1)[:10] == before[1]


async def test_a_damaged_unit_deeper_than_the_checked_tail_is_only_skipped(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll
) -> None:
    count = 2 * (TAIL_UNITS_CHECKED + 4)
    store = make_store()
    offsets = await put_round_robin(store, message, count)
    before = read_all(store, "TopicA", 0)
    path, pos = unit_file(store, 0, 1)
    store.close()
    patch_file(path, pos, (offsets[0] + 5).to_bytes(8, "big"))
    again = make_store()
    assert again.recovery is not None and again.recovery.units_repaired == 0
    got = read_all(again, "TopicA", 0)
    assert_sound(got)
    assert got == before[:1] + before[2:]
