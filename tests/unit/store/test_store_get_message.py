"""get_message: every status and next-begin-offset rule of Java DefaultMessageStore.getMessage."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from rocketq.common.record.codec import decode_record
from rocketq.store.status import GetMessageStatus as S

if TYPE_CHECKING:
    from conftest import MessageFactory, StoreFactory
    from rocketq.store.message_store import MessageStore


class TagFilter:
    """Tag codes first, then (optionally) a property check on the record, like the broker's filters."""

    def __init__(self, codes: set[int], prop: tuple[str, str] | None = None) -> None:
        self.codes = codes
        self.prop = prop
        self.records_seen = 0

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        return tags_code in self.codes

    def is_matched_by_commit_log(self, record: bytes | None, properties: dict[str, str] | None) -> bool:
        self.records_seen += 1
        if self.prop is None or record is None:
            return True
        msg, _ = decode_record(record)
        return msg.properties.get(self.prop[0]) == self.prop[1]


async def fill(store: MessageStore, message: MessageFactory, count: int, **kw: str) -> None:
    for i in range(count):
        tags = "TagA" if i % 2 == 0 else "TagB"
        result = await store.put_message(message(body=b"m%d" % i, tags=tags, n=str(i), **kw))
        assert result.is_ok


async def test_status_table_without_filter(make_store: StoreFactory, message: MessageFactory) -> None:
    store = make_store()
    await fill(store, message, 10)
    cases = [
        (("Nope", 0, 5), S.NO_MESSAGE_IN_QUEUE, 0),  # Java creates the queue on the read
        (("TopicA", 0, -1), S.OFFSET_TOO_SMALL, 0),
        (("TopicA", 0, 10), S.OFFSET_OVERFLOW_ONE, 10),
        (("TopicA", 0, 11), S.OFFSET_OVERFLOW_BADLY, 10),
        (("TopicA", 0, 99), S.OFFSET_OVERFLOW_BADLY, 10),
        (("TopicA", 0, 3), S.FOUND, 10),
    ]
    for (topic, queue_id, offset), status, nxt in cases:
        got = store.get_message("g", topic, queue_id, offset, 32)
        assert (got.status, got.next_begin_offset) == (status, nxt), (topic, offset)
        if topic == "TopicA":
            assert (got.min_offset, got.max_offset) == (0, 10)
    got = store.get_message("g", "TopicA", 0, 3, 32)
    assert got.queue_offsets == list(range(3, 10)) and got.message_count == 7


async def test_empty_queue_says_no_message_and_resets_to_zero(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()
    msg = message()
    msg.sys_flag = 0x4  # a prepared record: the queue exists but gets no unit
    assert (await store.put_message(msg)).is_ok
    got = store.get_message("g", "TopicA", 0, 5, 32)
    assert (got.status, got.next_begin_offset, got.max_offset) == (S.NO_MESSAGE_IN_QUEUE, 0, 0)


async def test_a_slave_keeps_the_clients_offset(make_store: StoreFactory, message: MessageFactory) -> None:
    store = make_store()
    await fill(store, message, 3)
    store.config.broker_role = "SLAVE"  # type: ignore[assignment]
    for offset, status in ((7, S.OFFSET_OVERFLOW_BADLY), (-2, S.OFFSET_TOO_SMALL)):
        got = store.get_message("g", "TopicA", 0, offset, 32)
        assert (got.status, got.next_begin_offset) == (status, offset)
    store.config.offset_check_in_slave = True
    assert store.get_message("g", "TopicA", 0, 7, 32).next_begin_offset == 3


async def test_filter_by_tag_code_then_by_record(make_store: StoreFactory, message: MessageFactory) -> None:
    store = make_store()
    await fill(store, message, 10)
    only_b = TagFilter({2598920})
    got = store.get_message("g", "TopicA", 0, 0, 32, only_b)
    assert got.status is S.FOUND and got.queue_offsets == [1, 3, 5, 7, 9]
    assert only_b.records_seen == 5  # units filtered by tag code never touch the commit log
    assert got.next_begin_offset == 10
    nobody = TagFilter({42})
    got = store.get_message("g", "TopicA", 0, 0, 32, nobody)
    assert (got.status, got.next_begin_offset, got.records) == (S.NO_MATCHED_MESSAGE, 10, [])
    by_prop = TagFilter({2598919, 2598920}, ("n", "4"))
    got = store.get_message("g", "TopicA", 0, 0, 32, by_prop)
    assert got.status is S.FOUND and got.queue_offsets == [4]


async def test_count_and_byte_limits(make_store: StoreFactory, message: MessageFactory) -> None:
    store = make_store(maxTransferCountOnMessageInMemory=4, maxTransferBytesOnMessageInMemory=1000)
    await fill(store, message, 12)
    assert store.get_message("g", "TopicA", 0, 0, 2).queue_offsets == [0, 1]
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert got.queue_offsets == [0, 1, 2, 3] and got.next_begin_offset == 4  # the config count cap
    size = len(got.records[0])
    got = store.get_message("g", "TopicA", 0, 0, 32, max_total_bytes=size * 2 + 1)
    assert got.queue_offsets == [0, 1]
    got = store.get_message("g", "TopicA", 0, 0, 32, max_total_bytes=1)
    assert got.queue_offsets == [0]  # at least one message, whatever the limit


async def test_a_pull_stops_at_the_end_of_a_consume_queue_file(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()  # 16 units a file
    await fill(store, message, 20)
    got = store.get_message("g", "TopicA", 0, 10, 32)
    assert got.queue_offsets == list(range(10, 16)) and got.next_begin_offset == 16
    assert store.get_message("g", "TopicA", 0, 16, 32).queue_offsets == [16, 17, 18, 19]


async def test_records_removed_from_the_commit_log(make_store: StoreFactory, message: MessageFactory) -> None:
    store = make_store()
    for i in range(12):
        await store.put_message(message(body=b"x" * 1500, n=str(i)))
    files = store.commit_log.queue.files
    assert len(files) >= 3
    # Delete the oldest commit-log file but not (yet) the queue units pointing into it.
    first_file_end = files[0].file_end_offset
    store.commit_log.queue.delete_first_files(1)
    got = store.get_message("g", "TopicA", 0, 0, 32)
    removed = sum(
        1 for off in range(12) if store.get_commit_log_offset_in_queue("TopicA", 0, off) < first_file_end
    )
    assert got.status is S.FOUND and got.queue_offsets[0] == removed
    got = store.get_message("g", "TopicA", 0, 0, 1)
    assert got.queue_offsets == [removed]
    # Once cleanup corrects the queue, the same read is "too small" with the new minimum.
    store.cleanup.clean_consume_queues()
    assert store.get_min_offset_in_queue("TopicA", 0) == removed
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert (got.status, got.next_begin_offset) == (S.OFFSET_TOO_SMALL, removed)


async def test_message_was_removing_when_nothing_is_left(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()
    for i in range(5):
        await store.put_message(message(body=b"x" * 1500, n=str(i)))
    await store.put_message(message("Other", body=b"x" * 1500))
    await store.put_message(message("Other", body=b"x" * 1500))
    last_a = store.get_commit_log_offset_in_queue("TopicA", 0, 4)
    count = next(i for i, f in enumerate(store.commit_log.queue.files) if f.file_end_offset > last_a) + 1
    store.commit_log.queue.delete_first_files(count)
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert got.status is S.MESSAGE_WAS_REMOVING and got.records == []
    assert got.next_begin_offset == 5


async def test_offset_found_null_when_a_queue_file_is_missing(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()
    await fill(store, message, 40)
    queue = store.queues.get("TopicA", 0)
    assert queue is not None and len(queue.queue.files) == 3
    queue.queue.files[0].destroy()  # gone from under the queue, min offset not corrected yet
    del queue.queue.files[0]
    got = store.get_message("g", "TopicA", 0, 3, 32)
    assert (got.status, got.next_begin_offset) == (S.OFFSET_FOUND_NULL, 16)


@pytest.mark.parametrize("offset", [0, 5, 9])
async def test_lookups_by_queue_offset(
    make_store: StoreFactory, message: MessageFactory, offset: int
) -> None:
    store = make_store()
    await fill(store, message, 10)
    phys = store.get_commit_log_offset_in_queue("TopicA", 0, offset)
    record = store.select_one_message_by_offset(phys)
    assert record is not None and decode_record(record)[0].queue_offset == offset
    assert store.select_one_message_by_offset(phys, len(record)) == record
    assert store.get_message_store_timestamp("TopicA", 0, offset) == decode_record(record)[0].store_timestamp
    looked = store.look_message_by_offset(phys)
    assert looked is not None and looked.queue_offset == offset
    assert store.get_message_store_timestamp("TopicA", 0, 99) == -1
    assert store.select_one_message_by_offset(10**9) is None
