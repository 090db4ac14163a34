"""Consume queues: the unit codec, search by store time, positions after load, truncation and holes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hypothesis import given
from hypothesis import strategies as st

from rocketq.common.clock import ManualClock
from rocketq.common.record.check import RecordCheck, check_record
from rocketq.store.consume_queue import ConsumeQueue, decode_unit, encode_unit, find_written_end

if TYPE_CHECKING:
    from conftest import MessageFactory, StoreFactory


@given(st.integers(0, 2**63 - 1), st.integers(1, 2**31 - 1), st.integers(-(2**63), 2**63 - 1))
def test_unit_codec_round_trip(phys: int, size: int, tags: int) -> None:
    raw = encode_unit(phys, size, tags)
    assert len(raw) == 20 and decode_unit(raw) == (phys, size, tags)


@given(
    st.lists(
        st.tuples(st.integers(0, 2**40), st.integers(1, 5000), st.sampled_from([0, 2598919, -5])), max_size=40
    )
)
def test_the_written_end_is_found_whatever_the_units_hold(units: list[tuple[int, int, int]]) -> None:
    buf = bytearray(20 * 50)
    for i, (phys, size, tags) in enumerate(units):
        buf[i * 20 : i * 20 + 20] = encode_unit(phys, size, tags)
    assert find_written_end(bytes(buf), len(buf)) == 20 * len(units)


def test_units_across_files_and_reload(tmp_path: Path) -> None:
    queue = ConsumeQueue("T", 0, tmp_path / "q", 20 * 4)
    for i in range(10):
        queue.put(i, 1000 + 100 * i, 100, i)
    assert (queue.min_offset, queue.max_offset, queue.max_physic_offset) == (0, 10, 2000)
    assert len(queue.queue.files) == 3
    assert queue.unit(5) == (1500, 100, 5) and queue.unit(10) is None and queue.unit(-1) is None
    assert queue.units_from(5, 32) == encode_unit(1500, 100, 5) + encode_unit(1600, 100, 6) + encode_unit(
        1700, 100, 7
    )
    queue.put(3, 1, 1, 1)  # a repeat (re-dispatch) changes nothing
    assert queue.unit(3) == (1300, 100, 3)
    queue.close()
    again = ConsumeQueue("T", 0, tmp_path / "q", 20 * 4)
    again.load()
    assert (again.min_offset, again.max_offset, again.max_physic_offset) == (0, 10, 2000)
    again.put(10, 2000, 50, 0)
    assert again.unit(10) == (2000, 50, 0)
    again.truncate_to_phys(1750)  # records ending past 1750 go
    assert (again.max_offset, again.max_physic_offset) == (7, 1700)
    assert len(again.queue.files) == 2
    again.put(7, 1700, 10, 0)
    assert again.unit(7) == (1700, 10, 0) and again.unit(8) is None
    again.close()


def test_a_queue_rebuilt_from_the_middle_starts_at_its_first_unit(tmp_path: Path) -> None:
    queue = ConsumeQueue("T", 0, tmp_path / "q", 20 * 4)
    queue.put(6, 500, 10, 0)  # the earlier records were deleted: a new queue begins at 6
    queue.put(7, 510, 10, 0)
    assert (queue.min_offset, queue.max_offset) == (6, 8)
    queue.close()
    again = ConsumeQueue("T", 0, tmp_path / "q", 20 * 4)
    again.load()
    again.correct_min_offset(0)
    assert (again.min_offset, again.max_offset) == (6, 8)
    again.correct_min_offset(505)
    assert again.min_offset == 7
    again.close()


async def test_search_offset_by_store_time(
    make_store: StoreFactory, message: MessageFactory, clock: ManualClock
) -> None:
    store = make_store()
    base = clock.now_ms()
    times = [0, 10, 10, 10, 20, 40, 100]  # ms after base, one message each
    for t in times:
        clock.advance(base + t - clock.now_ms())
        assert (await store.put_message(message())).is_ok
    cases = {
        base - 50: 0,  # before everything: the first
        base: 0,
        base + 10: 1,  # an exact match: the first of equal times
        base + 14: 3,  # nearer to 10 (offset 3, the last 10) than to 20
        base + 15: 3,  # a tie goes to the earlier
        base + 16: 4,
        base + 39: 5,
        base + 100: 6,
        base + 5000: 6,  # after everything: the last
    }
    for when, offset in cases.items():
        assert store.get_offset_in_queue_by_time("TopicA", 0, when) == offset, when - base
    assert store.get_offset_in_queue_by_time("Nope", 0, base) == 0
    assert store.get_earliest_message_time("TopicA", 0) == base
    assert store.get_earliest_message_time("Nope", 0) == -1
    assert store.get_earliest_message_time_in_store() == base


def test_check_record_tells_end_blank_and_damage_apart() -> None:
    assert check_record(bytes(64), 0, 64).kind is RecordCheck.END
    blank = (64).to_bytes(4, "big") + (0xCBD43194).to_bytes(4, "big") + bytes(56)
    assert check_record(blank, 0, 64).kind is RecordCheck.BLANK
    assert check_record(blank, 0, 128).kind is RecordCheck.CORRUPT
    junk = (200).to_bytes(4, "big") + b"\x12\x34\x56\x78" + bytes(200)
    assert check_record(junk, 0, len(junk)).kind is RecordCheck.CORRUPT
    assert check_record(bytes(4), 0, 4).kind is RecordCheck.END
