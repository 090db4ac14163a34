"""Timer messages on a real small store and a ManualClock: parking, due delivery, windows, restarts."""

from __future__ import annotations

from pathlib import Path

import pytest
from lifecycle_helpers import message, read_all

from rocketq.common import constants as C
from rocketq.common.clock import ManualClock
from rocketq.store.message_store import MessageStore
from rocketq.store.timer import (
    PROPERTY_TIMER_OUT_MS,
    TIMER_TOPIC,
    TimerBucketLog,
    TimerEntry,
    TimerMessageIllegal,
    TimerMessageService,
    redirect_to_timer,
)

DAY_MS = 86_400_000


async def put_timer(store: MessageStore, clock: ManualClock, at_ms: int, body: bytes = b"t") -> None:
    msg = message("Real", 2, body, TAGS="TagT", TIMER_DELIVER_MS=str(at_ms))
    assert redirect_to_timer(msg, clock.now_ms(), 3 * DAY_MS)
    assert (await store.put_message(msg)).is_ok


def timer_service(
    store: MessageStore, clock: ManualClock, tmp_path: Path, window_ms: int = 1_000
) -> TimerMessageService:
    svc = TimerMessageService(store, tmp_path / "timer-root", clock, window_ms=window_ms)
    svc.load()
    return svc


def bodies(store: MessageStore) -> list[bytes]:
    return [m.body for m in read_all(store, "Real", 2)]


def test_redirect_parks_a_future_time_and_leaves_a_due_one_alone(clock: ManualClock) -> None:
    now = clock.now_ms()
    future = message("Real", 3, TIMER_DELIVER_MS=str(now + 5000))
    assert redirect_to_timer(future, now, DAY_MS)
    assert (future.topic, future.queue_id, future.tags_code) == (TIMER_TOPIC, 0, now + 5000)
    assert (
        future.properties[C.PROPERTY_REAL_TOPIC] == "Real"
        and future.properties[C.PROPERTY_REAL_QUEUE_ID] == "3"
    )
    assert future.properties[PROPERTY_TIMER_OUT_MS] == str(now + 5000)
    past = message("Real", 3, **{C.PROPERTY_START_DELIVER_TIME: str(now - 1)})
    assert not redirect_to_timer(past, now, DAY_MS) and past.topic == "Real"
    relative = message("Real", 0, TIMER_DELAY_SEC="7")
    assert redirect_to_timer(relative, now, DAY_MS) and relative.tags_code == now + 7000
    parked_again = message(TIMER_TOPIC, 0, TIMER_DELIVER_MS=str(now + 5000), TIMER_OUT_MS=str(now + 5000))
    assert not redirect_to_timer(parked_again, now, DAY_MS)


def test_redirect_refuses_a_time_beyond_the_maximum_and_garbage(clock: ManualClock) -> None:
    now = clock.now_ms()
    with pytest.raises(TimerMessageIllegal, match="maximum delay"):
        redirect_to_timer(message(TIMER_DELIVER_MS=str(now + 3 * DAY_MS + 1)), now, 3 * DAY_MS)
    with pytest.raises(TimerMessageIllegal, match="not a number"):
        redirect_to_timer(message(TIMER_DELIVER_MS="soon"), now, 3 * DAY_MS)


async def test_a_timer_message_is_delivered_at_its_time_not_before(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = timer_service(store, clock, tmp_path)
    start = clock.now_ms()
    await put_timer(store, clock, start + 2_500, b"a")
    await put_timer(store, clock, start + 700, b"b")
    await svc.run_once()
    assert bodies(store) == []
    clock.advance(699)
    await svc.run_once()
    assert bodies(store) == []
    clock.advance(1)
    await svc.run_once()
    assert bodies(store) == [b"b"]
    clock.advance(1_799)
    await svc.run_once()
    assert bodies(store) == [b"b"]
    clock.advance(1)
    await svc.run_once()
    assert bodies(store) == [b"b", b"a"]
    [_, got] = read_all(store, "Real", 2)
    assert got.tags == "TagT" and got.properties[PROPERTY_TIMER_OUT_MS] == str(start + 2_500)
    assert store.queues.get("Real", 2).unit(1)[2] != start + 2_500  # type: ignore[union-attr,index]


async def test_only_the_current_window_is_held_in_memory(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = timer_service(store, clock, tmp_path, window_ms=1_000)
    start = clock.now_ms() - clock.now_ms() % 1_000
    for i in range(60):
        await put_timer(store, clock, start + 1_000 + i * 100, str(i).encode())
    await svc.run_once()
    assert svc.in_memory == 0 and svc.buckets.pending_count() == 60
    clock.advance(start + 1_000 - clock.now_ms())
    await svc.run_once()
    assert svc.in_memory == 9  # the first of the window's 10 went out at once
    clock.advance(6_000)
    for _ in range(8):
        await svc.run_once()
    assert bodies(store) == [str(i).encode() for i in range(60)]
    assert svc.buckets.windows() == []  # every delivered window file is gone


async def test_a_restart_resumes_without_losing_or_repeating_what_was_checkpointed(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = timer_service(store, clock, tmp_path)
    now = clock.now_ms()
    for i, offset in enumerate((100, 200, 5_000)):
        await put_timer(store, clock, now + offset, str(i).encode())
    await svc.run_once()
    clock.advance(150)
    await svc.run_once()
    svc.persist()
    again = timer_service(store, clock, tmp_path)
    clock.advance(100)
    await again.run_once()
    assert bodies(store) == [b"0", b"1"]
    # A crash after more work but before the next checkpoint: that work is redone, nothing lost.
    await put_timer(store, clock, clock.now_ms() + 300, b"3")
    await again.run_once()
    crashed = timer_service(store, clock, tmp_path)
    clock.advance(5_000)
    for _ in range(3):
        await crashed.run_once()
    assert sorted(bodies(store)) == [b"0", b"1", b"1", b"2", b"3"]


async def test_a_time_already_past_when_ingested_is_delivered_at_once(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = timer_service(store, clock, tmp_path)
    await put_timer(store, clock, clock.now_ms() + 50, b"x")
    clock.advance(10_000)  # the service was not running
    await svc.run_once()
    assert bodies(store) == [b"x"]


def test_the_bucket_log_ignores_a_torn_entry_and_duplicates(tmp_path: Path) -> None:
    log = TimerBucketLog(tmp_path / "tl", window_ms=1_000)
    log.append([TimerEntry(1_500, 10, 100), TimerEntry(1_600, 20, 100), TimerEntry(1_500, 10, 100)])
    path = tmp_path / "tl" / f"{1:020d}"
    path.write_bytes(path.read_bytes() + b"\x00\x01\x02")
    assert log.load(1) == [TimerEntry(1_500, 10, 100), TimerEntry(1_600, 20, 100)]
    log.flush()
    log.drop(1)
    assert log.windows() == [] and log.load(1) == []
