"""The pull's per-unit loop, compiled (_cpull.collect_units) and pure (GetService._collect_py): the same
GetResult for the same store, pull by pull: limits, filters, holes, damaged units, files gone; and the
joined read (the pull's body) as the records joined, on both."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import pytest

from rocketq.store import get_service
from rocketq.store.commit_log import CommitLog

if TYPE_CHECKING:
    from conftest import MessageFactory, StoreFactory
    from rocketq.store.message_store import MessageStore
    from rocketq.store.status import GetResult

# Without the compiled loop (ROCKETQ_NO_EXTENSIONS=1, or not built) the pure one is checked alone.
LOOPS = ("compiled", "pure") if get_service._cpull is not None else ("pure",)

TOPIC = "TopicA"


class OddTagsEvenRecords:
    """A filter that calls back on both steps: odd tags codes pass the unit, even-sized records the record."""

    def __init__(self) -> None:
        self.calls = 0

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        self.calls += 1
        return bool(tags_code is not None and tags_code % 2)

    def is_matched_by_commit_log(self, record: bytes | None, properties: dict[str, str] | None) -> bool:
        self.calls += 1
        return record is not None and len(record) % 2 == 0


def fields(result: GetResult) -> tuple[object, ...]:
    return (
        result.body,
        result.status,
        result.next_begin_offset,
        result.min_offset,
        result.max_offset,
        result.records,
        result.queue_offsets,
        result.suggest_pulling_from_slave,
    )


def both(
    store: MessageStore, monkeypatch: pytest.MonkeyPatch, offset: int, count: int, make_filter: type | None
) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """The compiled and the pure loop's results (the records' list), after checking that the joined read
    of each is the same result with the records joined in `body`."""
    results = []
    for loop in LOOPS:
        with monkeypatch.context() as patch:
            if loop == "pure":
                patch.setattr(get_service, "_cpull", None)
            listed_filter, joined_filter = (make_filter(), make_filter()) if make_filter else (None, None)
            listed = store.get_message("g", TOPIC, 0, offset, count, listed_filter)
            joined = store.get_message("g", TOPIC, 0, offset, count, joined_filter, joined=True)
        assert not joined.records and joined.body == b"".join(listed.records)
        assert fields(joined)[1:] == (*fields(listed)[1:5], [], *fields(listed)[6:])
        if listed_filter is not None and joined_filter is not None:
            assert listed_filter.calls == joined_filter.calls
        results.append((fields(listed), listed_filter.calls if listed_filter else 0))
    (compiled, compiled_calls), (pure, pure_calls) = results[0], results[-1]
    assert compiled_calls == pure_calls  # the same filter callbacks, as many
    return compiled, pure


async def fill(store: MessageStore, message: MessageFactory, count: int) -> None:
    for i in range(count):  # bodies of varying sizes spread the records over several 8 KiB files
        body = b"%03d:" % i + bytes(100 + 37 * (i % 7))
        result = await store.put_message(message(queue_id=i % 2, body=body, tags=f"T{i % 5}"))
        assert result.is_ok


@pytest.mark.parametrize("max_bytes", [None, 700])
async def test_every_pull_gives_the_same_result_on_both_loops(
    make_store: StoreFactory, message: MessageFactory, monkeypatch: pytest.MonkeyPatch, max_bytes: int | None
) -> None:
    store = make_store(maxTransferBytesOnMessageInMemory=max_bytes or 262144)
    await fill(store, message, 120)
    found: dict[object, int] = {None: 0, OddTagsEvenRecords: 0}
    for offset, count, make_filter in itertools.product(range(0, 62), (1, 3, 32), (None, OddTagsEvenRecords)):
        compiled, pure = both(store, monkeypatch, offset, count, make_filter)
        assert compiled == pure, (offset, count, make_filter)
        found[make_filter] += len(compiled[5])  # type: ignore[arg-type]
    assert found[OddTagsEvenRecords] and found[None] > found[OddTagsEvenRecords]


async def test_damaged_units_and_holes_are_skipped_alike(
    make_store: StoreFactory, message: MessageFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store()
    await fill(store, message, 60)
    queue = store.queues.get(TOPIC, 0)
    assert queue is not None
    phys, size, tags = queue.unit(3)  # type: ignore[misc]
    queue.repair(3, phys + 8, size, tags)  # points into the middle of its record
    phys, size, tags = queue.unit(5)  # type: ignore[misc]
    queue.repair(5, phys, size + 4, tags)  # the wrong size
    phys, size, tags = queue.unit(7)  # type: ignore[misc]
    queue.repair(7, phys, 0, tags)  # a hole
    for offset, count in itertools.product(range(0, 12), (1, 4, 32)):
        compiled, pure = both(store, monkeypatch, offset, count, None)
        assert compiled == pure, (offset, count)
    assert 3 not in compiled[6] and 5 not in compiled[6] and 7 not in compiled[6]  # type: ignore[operator]


async def test_records_of_a_file_gone_answer_message_was_removing_alike(
    make_store: StoreFactory, message: MessageFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store()
    await fill(store, message, 120)
    real = CommitLog.written_part
    statuses = set()
    for gone_below in (store.commit_log.queue.files[1].file_from_offset, store.commit_log.max_offset):

        def files_gone(self: CommitLog, offset: int, gone_below: int = gone_below) -> object:
            return None if offset < gone_below else real(self, offset)

        monkeypatch.setattr(CommitLog, "written_part", files_gone)
        for offset, count in itertools.product(range(0, 40), (1, 32)):
            compiled, pure = both(store, monkeypatch, offset, count, None)
            assert compiled == pure, (offset, count)
            statuses.add(compiled[1])
    assert {s.name for s in statuses} == {"MESSAGE_WAS_REMOVING", "FOUND"}  # type: ignore[attr-defined]
