"""Appends: records across file rolls, blank end-of-file records, batches, queue offsets, bad input."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from rocketq.common import constants as C
from rocketq.common.clock import ManualClock
from rocketq.common.msg_id import parse_offset_msg_id
from rocketq.common.record.codec import decode_record, decode_records
from rocketq.common.record.layout import BLANK_MAGIC_CODE
from rocketq.store.delay import DelayLevels, redirect_to_schedule
from rocketq.store.message import BrokerMessage, BrokerMessageBatch
from rocketq.store.status import GetMessageStatus, PutMessageStatus

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import MessageFactory, ReadAll, StoreFactory


async def test_put_then_read_back_the_exact_record(
    make_store: StoreFactory, clock: ManualClock, message: MessageFactory, read_all: ReadAll
) -> None:
    store = make_store()
    msg = message(body=b"payload", tags="TagA", keys="k1 k2", uniq="U1")
    msg.flag, msg.born_timestamp, msg.reconsume_times = 7, 123, 2
    result = await store.put_message(msg)
    assert result.status is PutMessageStatus.PUT_OK and result.append is not None
    append = result.append
    assert (append.wrote_offset, append.logical_offset, append.msg_num) == (0, 0, 1)
    assert append.store_timestamp == clock.now_ms() == msg.store_timestamp
    assert parse_offset_msg_id(append.msg_id) == ("10.0.0.2", 10911, 0)
    raw = store.select_one_message_by_offset(0)
    assert raw is not None and len(raw) == append.wrote_bytes
    back, _ = decode_record(raw)
    assert (back.topic, back.queue_id, back.body, back.flag) == ("TopicA", 0, b"payload", 7)
    assert (back.born_timestamp, back.reconsume_times, back.store_timestamp) == (123, 2, clock.now_ms())
    assert back.properties == {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "U1"}
    assert back.born_host == ("10.0.0.1", 5000) and back.offset_msg_id == append.msg_id
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert got.status is GetMessageStatus.FOUND and got.records == [raw]


async def test_records_roll_across_small_files_with_a_blank_tail(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll
) -> None:
    store = make_store()
    bodies = [bytes([i % 251]) * random.Random(i).randint(1, 1500) for i in range(60)]
    offsets = []
    for i, body in enumerate(bodies):
        result = await store.put_message(message(queue_id=i % 3, body=body))
        assert result.status is PutMessageStatus.PUT_OK and result.append is not None
        offsets.append(result.append.wrote_offset)
    files = store.commit_log.queue.files
    assert len(files) > 5
    for mapped in files[:-1]:
        # Every full file ends in a blank record filling it (or exactly at its end).
        assert mapped.wrote_position == mapped.file_size
    for i, offset in enumerate(offsets):
        record = store.select_one_message_by_offset(offset)
        assert record is not None
        msg, _ = decode_record(record)
        assert msg.body == bodies[i] and msg.commit_log_offset == offset
        # A record never spans files.
        assert offset // 8192 == (offset + len(record) - 1) // 8192
    blank_seen = False
    for mapped in files[:-1]:
        pos = 0
        while pos < mapped.file_size:
            size = int.from_bytes(mapped.mm[pos : pos + 4], "big")
            magic = int.from_bytes(mapped.mm[pos + 4 : pos + 8], "big", signed=True)
            if magic == BLANK_MAGIC_CODE:
                assert pos + size == mapped.file_size
                blank_seen = True
            pos += size
    assert blank_seen
    for queue_id in range(3):
        records = read_all(store, "TopicA", queue_id)
        assert [decode_record(r)[0].body for r in records] == bodies[queue_id::3]


async def test_queue_offsets_are_per_topic_and_queue(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll
) -> None:
    store = make_store(mappedFileSizeCommitLog=65536)
    rng = random.Random(7)
    expected: dict[tuple[str, int], int] = {}
    for _ in range(400):
        key = (f"Topic{rng.randrange(25)}", rng.randrange(4))
        result = await store.put_message(message(*key, body=b"x" * rng.randrange(10)))
        assert result.append is not None
        assert result.append.logical_offset == expected.get(key, 0)
        expected[key] = expected.get(key, 0) + 1
    for (topic, queue_id), count in expected.items():
        assert store.get_max_offset_in_queue(topic, queue_id) == count
        assert store.get_min_offset_in_queue(topic, queue_id) == 0
        records = read_all(store, topic, queue_id)
        assert [m.queue_offset for m in decode_records(b"".join(records))] == list(range(count))
    assert store.get_max_offset_in_queue("Nope", 0) == 0
    assert store.get_min_offset_in_queue("Nope", 0) == -1


async def test_batch_gets_consecutive_offsets_in_one_file(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll
) -> None:
    store = make_store()
    for _ in range(3):
        await store.put_message(message(body=b"z" * 1800))
    entries = [(i, b"b" * 150, {"UNIQ_KEY": f"B{i}", "TAGS": "TagB"}) for i in range(10)]
    result = await store.put_messages(
        BrokerMessageBatch("TopicA", 0, entries, store_host=("10.0.0.2", 10911))
    )
    assert result.status is PutMessageStatus.PUT_OK and result.append is not None
    assert result.append.logical_offset == 3 and result.append.msg_num == 10
    ids = result.append.msg_id.split(",")
    assert len(ids) == 10
    offsets = [parse_offset_msg_id(i)[2] for i in ids]
    assert offsets[0] == result.append.wrote_offset
    assert {o // 8192 for o in offsets} == {1}  # did not fit after the first records: rolled whole
    got = store.get_message("g", "TopicA", 0, 3, 32)
    msgs = decode_records(b"".join(got.records))
    assert [(m.queue_offset, m.flag, m.tags) for m in msgs] == [(i + 3, i, "TagB") for i in range(10)]
    assert got.queue_offsets == list(range(3, 13))


async def test_bad_messages_are_refused_and_nothing_is_written(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll
) -> None:
    store = make_store()
    cases = [
        (message(body=b"x" * 2049), PutMessageStatus.MESSAGE_ILLEGAL, "maxMessageSize"),
        (message(body=b"x", big="v" * 40000), PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, "32767"),
        (message("T" * 128), PutMessageStatus.MESSAGE_ILLEGAL, "longer than 127"),
        (message("bad topic!"), PutMessageStatus.MESSAGE_ILLEGAL, "characters"),
        (message(""), PutMessageStatus.MESSAGE_ILLEGAL, "empty"),
        (message(queue_id=-1), PutMessageStatus.MESSAGE_ILLEGAL, "negative"),
        # Fits maxMessageSize but not a file with its record overhead.
        (message(body=b"x" * 2000, pad="p" * 6500), PutMessageStatus.MESSAGE_ILLEGAL, "over the limit"),
    ]
    for msg, status, remark in cases:
        result = await store.put_message(msg)
        assert result.status is status and remark in result.remark, (result, remark)
    bad_batches = [
        BrokerMessageBatch("TopicA", 0, []),
        BrokerMessageBatch("TopicA", 0, [(0, b"x", {})], sys_flag=C.MessageSysFlag.TRANSACTION_PREPARED_TYPE),
        BrokerMessageBatch("TopicA", 0, [(0, b"x", {"DELAY": "3"})]),
        BrokerMessageBatch("TopicA", 0, [(0, b"x" * 1500, {}), (0, b"x" * 1500, {})]),
        BrokerMessageBatch("TopicA", 0, [(0, b"x", {}), (0, b"x", {"k": "v" * 40000})]),
        BrokerMessageBatch("bad topic", 0, [(0, b"x", {})]),
    ]
    for batch in bad_batches:
        result = await store.put_messages(batch)
        assert not result.is_ok and result.remark
    assert store.get_max_phy_offset() == 0
    assert store.get_max_offset_in_queue("TopicA", 0) == 0


async def test_prepared_and_rollback_records_get_no_queue_unit(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll
) -> None:
    store = make_store()
    flags = C.MessageSysFlag
    for sys_flag in (
        flags.TRANSACTION_PREPARED_TYPE,
        flags.TRANSACTION_ROLLBACK_TYPE,
        flags.TRANSACTION_COMMIT_TYPE,
        0,
    ):
        msg = message(body=b"t")
        msg.sys_flag = sys_flag
        result = await store.put_message(msg)
        assert result.is_ok and result.append is not None
    assert store.get_max_offset_in_queue("TopicA", 0) == 2
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert [decode_record(r)[0].sys_flag & 0xC for r in got.records] == [flags.TRANSACTION_COMMIT_TYPE, 0]
    # The prepared record itself stays readable by its offset (the transaction check reads it).
    assert decode_record(store.select_one_message_by_offset(0) or b"")[0].queue_offset == 0


async def test_ipv6_hosts_are_stored_with_their_flags(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll
) -> None:
    store = make_store()
    msg = message(body=b"six")
    msg.born_host, msg.store_host = ("2001:db8::1", 1234), ("::1", 10911)
    result = await store.put_message(msg)
    assert result.append is not None and len(result.append.msg_id) == 56
    back, _ = decode_record(store.select_one_message_by_offset(0) or b"")
    assert back.born_host == ("2001:db8::1", 1234) and back.store_host == ("::1", 10911)
    assert back.sys_flag & 0x30 == 0x30


async def test_delay_redirect_keeps_the_real_topic_and_passes_the_tags_code(
    make_store: StoreFactory, clock: ManualClock, message: MessageFactory, read_all: ReadAll
) -> None:
    store = make_store()
    levels = DelayLevels()
    msg = redirect_to_schedule(message("Real", 3, b"later", tags="TagA"), 3, levels, clock.now_ms())
    assert (msg.topic, msg.queue_id, msg.tags_code) == (C.RMQ_SYS_SCHEDULE_TOPIC, 2, clock.now_ms() + 10_000)
    assert (await store.put_message(msg)).is_ok
    queue = store.queues.get(C.RMQ_SYS_SCHEDULE_TOPIC, 2)
    assert queue is not None and queue.unit(0) is not None
    assert queue.unit(0)[2] == clock.now_ms() + 10_000  # type: ignore[index]
    back, _ = decode_record(store.select_one_message_by_offset(0) or b"")
    assert back.properties["REAL_TOPIC"] == "Real" and back.properties["REAL_QID"] == "3"
    assert levels.clamp(99) == 18 and levels.delay_ms(18) == 7_200_000


async def test_arrival_listeners_see_each_consumable_record(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll
) -> None:
    store = make_store()
    seen: list[tuple[str, int, int, int, int]] = []
    store.add_arrival_listener(lambda t, q, o, code, ts, props: seen.append((t, q, o, code, ts)))
    store.add_arrival_listener(lambda *args: 1 / 0)  # a failing listener does not fail the put
    await store.put_message(message(tags="TagA"))
    await store.put_messages(BrokerMessageBatch("TopicB", 1, [(0, b"a", {}), (0, b"b", {"TAGS": "TagB"})]))
    ts = seen[0][4]
    assert seen == [("TopicA", 0, 0, 2598919, ts), ("TopicB", 1, 0, 0, ts), ("TopicB", 1, 1, 2598920, ts)]


async def test_a_listener_for_one_topic_hears_only_that_topic(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store()
    every: list[tuple[str, int]] = []
    only_b: list[tuple[str, int]] = []
    store.add_arrival_listener(lambda t, q, o, *_: every.append((t, o)))
    await store.put_message(message("TopicB"))  # before the topic listener: the put path keeps lists by topic
    store.add_arrival_listener(lambda t, q, o, *_: only_b.append((t, o)), "TopicB")
    await store.put_message(message("TopicA"))
    await store.put_message(message("TopicB"))
    await store.put_messages(BrokerMessageBatch("TopicB", 0, [(0, b"x", {})]))
    assert every == [("TopicB", 0), ("TopicA", 0), ("TopicB", 1), ("TopicB", 2)]
    assert only_b == [("TopicB", 1), ("TopicB", 2)]


async def test_store_not_open_or_slave_refuses_puts(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll
) -> None:
    closed = make_store(open_=False)
    assert (await closed.put_message(message())).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert closed.get_message("g", "TopicA", 0, 0, 1).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    slave = make_store(brokerRole="SLAVE")
    assert (await slave.put_message(message())).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


async def test_a_none_property_is_left_out_and_an_empty_map_stores_no_properties(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    # The put path encodes the common case (every value a str) inline and falls back for the rest.
    store = make_store()
    msg = message(body=b"p", tags="TagA")
    msg.properties["GONE"] = None  # type: ignore[assignment]
    plain = message(body=b"q")
    plain.properties.clear()
    for m in (msg, plain):
        result = await store.put_message(m)
        assert result.status is PutMessageStatus.PUT_OK and result.append is not None
    first, _ = decode_record(store.select_one_message_by_offset(0) or b"")
    assert first.properties == {"TAGS": "TagA"}
    raw = store.select_one_message_by_offset(first.store_size) or b""
    second, _ = decode_record(raw)
    assert second.properties == {} and second.body == b"q"


async def test_a_run_of_puts_writes_and_answers_as_each_put_alone(
    make_store: StoreFactory, message: MessageFactory, tmp_path: Path
) -> None:
    """put_message_list (PutService.put_run, one clock read for the run) against put_message one at a time:
    the same results, bad messages failing alone, and the same commit-log bytes across a file roll."""

    def run() -> list[BrokerMessage]:
        return [
            message("TopicA", i % 3, body=bytes([65 + i]) * 400, tags=f"T{i % 2}", uniq=f"U{i}")
            if i % 5
            else message("bad topic!" if i % 2 else "TopicB", 0, body=b"x" * (2049 if i else 10))
            for i in range(24)
        ]

    alone, together = make_store(root=tmp_path / "alone"), make_store(root=tmp_path / "together")
    expected = [await alone.put_message(msg) for msg in run()]
    got = await together.put_message_list(run())
    assert got == expected
    assert [r.status for r in got].count(PutMessageStatus.MESSAGE_ILLEGAL) == 4
    end = alone.get_max_phy_offset()
    assert end == together.get_max_phy_offset() > alone.commit_log.file_size  # rolled to a second file
    offsets = [r.append.wrote_offset for r in got if r.append is not None]
    assert [alone.select_one_message_by_offset(o) for o in offsets] == [
        together.select_one_message_by_offset(o) for o in offsets
    ]
