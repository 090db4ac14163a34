"""ScheduleMessageService on a real small store and a ManualClock: due times, order, progress, retries."""

from __future__ import annotations

from pathlib import Path

from lifecycle_helpers import message, read_all

from rocketq.common import constants as C
from rocketq.common.clock import ManualClock
from rocketq.common.tags import java_hash_code
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.store.delay import DelayLevels, redirect_to_schedule
from rocketq.store.message_store import MessageStore
from rocketq.store.schedule import ScheduleMessageService
from rocketq.store.status import PutMessageStatus, PutResult

LEVELS = DelayLevels("1s 2s 3s")


async def put_delayed(
    store: MessageStore, clock: ManualClock, level: int, body: bytes = b"x", **props: str
) -> None:
    msg = redirect_to_schedule(message("Real", 1, body, TAGS="TagA", **props), level, LEVELS, clock.now_ms())
    assert (await store.put_message(msg)).is_ok


def service(store: MessageStore, clock: ManualClock, tmp_path: Path) -> ScheduleMessageService:
    svc = ScheduleMessageService(store, LEVELS, tmp_path / "config" / "delayOffset.json", clock)
    svc.load()
    return svc


async def test_a_message_is_delivered_when_its_level_delay_has_passed_and_not_before(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = service(store, clock, tmp_path)
    await put_delayed(store, clock, 2, b"late", KEYS="k1")
    assert await svc.deliver_due(2) == 2000
    clock.advance(1999)
    assert await svc.deliver_due(2) == 1
    assert read_all(store, "Real", 1) == []
    clock.advance(1)
    assert await svc.deliver_due(2) is None
    [got] = read_all(store, "Real", 1)
    assert got.body == b"late" and got.tags == "TagA" and got.keys == ["k1"]
    # Java quirk kept: the re-stored record still carries DELAY / REAL_TOPIC / REAL_QID.
    assert (
        got.properties[C.PROPERTY_REAL_TOPIC] == "Real" and got.properties[C.PROPERTY_DELAY_TIME_LEVEL] == "2"
    )
    unit = store.queues.get("Real", 1).unit(0)  # type: ignore[union-attr]
    assert unit is not None and unit[2] == java_hash_code("TagA")
    assert svc.offsets == {2: 1}


async def test_levels_are_independent_and_each_keeps_its_order(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = service(store, clock, tmp_path)
    await put_delayed(store, clock, 3, b"c1")
    await put_delayed(store, clock, 1, b"a1")
    clock.advance(500)
    await put_delayed(store, clock, 1, b"a2")
    clock.advance(500)
    assert await svc.deliver_due(1) == 500  # a1 due, a2 in 500 ms
    assert await svc.deliver_due(3) == 2000
    clock.advance(2000)
    await svc.deliver_due(1)
    await svc.deliver_due(3)
    assert [m.body for m in read_all(store, "Real", 1)] == [b"a1", b"a2", b"c1"]


async def test_a_level_above_the_maximum_is_clamped(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = service(store, clock, tmp_path)
    await put_delayed(store, clock, 99)
    assert store.get_max_offset_in_queue(C.RMQ_SYS_SCHEDULE_TOPIC, 2) == 1
    assert await svc.deliver_due(3) == 3000


async def test_progress_is_persisted_and_resumed_without_repeating(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = service(store, clock, tmp_path)
    for body in (b"1", b"2"):
        await put_delayed(store, clock, 1, body)
    clock.advance(1000)
    await svc.deliver_due(1)
    svc.persist()
    assert fastjson.loads(svc.path.read_bytes()) == {"offsetTable": {1: 2}}
    await put_delayed(store, clock, 1, b"3")
    again = service(store, clock, tmp_path)
    assert again.offsets == {1: 2}
    clock.advance(1000)
    await again.deliver_due(1)
    assert [m.body for m in read_all(store, "Real", 1)] == [b"1", b"2", b"3"]


async def test_an_offset_outside_the_queue_is_corrected_on_load(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    await put_delayed(store, clock, 1)
    path = tmp_path / "config" / "delayOffset.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"offsetTable":{1:57,2:3}}')
    svc = service(store, clock, tmp_path)
    assert svc.offsets == {1: 1, 2: 3}  # level 2's queue does not exist yet: left alone


async def test_a_failed_put_is_retried_from_the_same_message(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = service(store, clock, tmp_path)
    await put_delayed(store, clock, 1, b"keep")
    clock.advance(1000)
    real_put = store.put_message
    failures = [PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None, "disk full")]

    async def flaky(msg):  # type: ignore[no-untyped-def]
        return failures.pop() if failures else await real_put(msg)

    store.put_message = flaky  # type: ignore[method-assign]
    pause = await svc.deliver_due(1)
    assert pause is not None and pause > 0 and svc.offsets.get(1, 0) == 0
    assert read_all(store, "Real", 1) == []
    assert await svc.deliver_due(1) is None
    assert [m.body for m in read_all(store, "Real", 1)] == [b"keep"]


async def test_a_delivery_time_beyond_now_plus_the_delay_means_now(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = service(store, clock, tmp_path)
    msg = redirect_to_schedule(message("Real", 1), 1, LEVELS, clock.now_ms())
    msg.tags_code = clock.now_ms() + 10 * 3_600_000  # the clock went back a long way
    await store.put_message(msg)
    assert await svc.deliver_due(1) is None
    assert len(read_all(store, "Real", 1)) == 1


async def test_a_record_without_a_real_topic_is_skipped_not_retried_forever(
    store: MessageStore, clock: ManualClock, tmp_path: Path
) -> None:
    svc = service(store, clock, tmp_path)
    broken = redirect_to_schedule(message("Real", 1, b"bad"), 1, LEVELS, clock.now_ms())
    del broken.properties[C.PROPERTY_REAL_TOPIC]
    await store.put_message(broken)
    await put_delayed(store, clock, 1, b"good")
    clock.advance(1000)
    assert await svc.deliver_due(1) is None
    assert [m.body for m in read_all(store, "Real", 1)] == [b"good"]
    assert svc.offsets == {1: 2}
    assert svc.running_stats() == {"scheduleMessageOffset_1": "2,2"}
