"""Index files: codecs, chains through one slot, true hash collisions, time ranges, rolls, queries."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.common.clock import ManualClock
from rocketq.common.record.codec import decode_record
from rocketq.store.index_file import (
    INDEX_HEADER_SIZE,
    IndexFile,
    decode_index_entry,
    decode_index_header,
    encode_index_entry,
    encode_index_header,
    index_file_size,
    index_key_hash,
    java_string_hash,
    java_string_hash_py,
    legacy_index_key_hash,
    positive_key_hash,
)
from rocketq.store.index_service import PENDING_MAX, IndexService
from rocketq.store.message import BrokerMessageBatch

if TYPE_CHECKING:
    from conftest import Crash, MessageFactory, StoreFactory

# Two keys whose index hashes are equal (String.hashCode's classic pair): a true collision, not a shared slot.
COLLIDING = ("Aa", "BB")
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)


@given(st.integers(0, 2**31 - 1), _i64, _i32, _i32)
def test_index_entry_codec_round_trip(key_hash: int, phy: int, diff: int, prev: int) -> None:
    raw = encode_index_entry(key_hash, phy, diff, prev)
    assert len(raw) == 20 and decode_index_entry(raw) == (key_hash, phy, diff, prev)


@given(_i64, _i64, _i64, _i64, _i32, _i32)
def test_index_header_codec_round_trip(a: int, b: int, c: int, d: int, e: int, f: int) -> None:
    raw = encode_index_header(a, b, c, d, e, f)
    assert len(raw) == INDEX_HEADER_SIZE and decode_index_header(raw) == (a, b, c, d, e, f)


@given(st.text(max_size=200))
def test_key_hash_is_a_non_negative_int32(key: str) -> None:
    assert 0 <= index_key_hash(key) < 2**31


# (text, String.hashCode(), abs as IndexService.indexKeyHashMethod) printed by a real JVM (OpenJDK 17).
JAVA_HASHES = [
    ("hello", 99162322, 99162322),
    ("TopicTest#KEY1", -1656969516, 1656969516),
    ("T#héllo 世界🚀", 441240826, 441240826),  # non-ASCII and a surrogate pair: hashed by UTF-16 code unit
    ("JavaProduced#FD00000000000000000000000000000255654E0E2F2A80E4FEC30000", 532194299, 532194299),
    ("polygenelubricants", -(2**31), 0),  # Integer.MIN_VALUE: Math.abs stays negative, Java takes 0
    ("", 0, 0),
]


@pytest.mark.parametrize(("text", "java_hash", "slot_hash"), JAVA_HASHES)
def test_index_key_hash_is_javas_string_hash_code(text: str, java_hash: int, slot_hash: int) -> None:
    # The same slots as Apache's broker: an index file written by either is read by the other.
    assert java_string_hash(text) == java_hash & 0xFFFFFFFF
    assert index_key_hash(text) == slot_hash


@given(st.text(max_size=50), st.text(max_size=50))
def test_java_string_hash_continues_from_a_prefix(prefix: str, rest: str) -> None:
    assert java_string_hash(rest, java_string_hash(prefix)) == java_string_hash(prefix + rest)


@settings(max_examples=300)
@given(
    st.text("0123456789ABCDEF", min_size=9, max_size=40),
    st.lists(st.text("0123456789ABCDEF\u00e9", min_size=0, max_size=6), max_size=6),
    st.integers(0, 2**32 - 1),
)
def test_pure_hash_of_keys_sharing_a_head(head: str, tails: list[str], prefix: int) -> None:
    # The pure hash keeps the hash of a long ASCII key's head (all but its last 4 characters) for the next
    # key with that head; every key still hashes as String.hashCode's loop does.
    for key in [head + tail for tail in tails] * 2:
        expected = prefix
        for unit in memoryview(key.encode("utf-16-le")).cast("H"):
            expected = (expected * 31 + unit) & 0xFFFFFFFF
        assert java_string_hash_py(key, prefix) == expected


def test_positive_key_hash_is_java_math_abs() -> None:
    assert [positive_key_hash(h) for h in (0, 5, 2**31 - 1, 2**31, 2**32 - 1)] == [0, 5, 2**31 - 1, 0, 1]


def test_files_of_earlier_versions_with_crc_hashes_are_still_searched(tmp_path: Path) -> None:
    clock = ManualClock(1_700_000_000_000)
    service = IndexService(tmp_path / "index", slot_num=64, index_num=100, clock=clock)
    service.build("T", 100, clock.now_ms(), 0, "uniq-now", None)  # written with Java's hash
    old = service.files[-1]
    assert old.put_key(
        legacy_index_key_hash("T#written-before"), 200, clock.now_ms()
    )  # as older versions did
    assert service.query("T", "written-before", 32, 0, 2**62)[0] == [200]
    assert service.query("T", "uniq-now", 32, 0, 2**62)[0] == [100]
    service.close()


def test_colliding_keys_really_collide() -> None:
    assert index_key_hash(f"TopicA#{COLLIDING[0]}") == index_key_hash(f"TopicA#{COLLIDING[1]}")


def test_one_slot_chains_every_key_newest_first(tmp_path: Path) -> None:
    assert index_file_size(1, 10) == 40 + 4 + 200
    index = IndexFile(tmp_path / "idx", slot_num=1, index_num=10)
    base = 1_700_000_000_000
    for i in range(9):
        assert index.put_key(index_key_hash(f"k{i % 3}"), 100 * i, base + 1000 * i)
    assert index.is_write_full and not index.put_key(1, 1, base)
    found: list[int] = []
    index.select_phy_offsets(found, index_key_hash("k1"), 32, 0, 2**62)
    assert found == [700, 400, 100]
    found = []
    index.select_phy_offsets(found, index_key_hash("k1"), 2, 0, 2**62)
    assert found == [700, 400]
    found = []  # [begin, end] in ms; entries keep whole seconds since the file's first entry
    index.select_phy_offsets(found, index_key_hash("k1"), 32, base + 2000, base + 5000)
    assert found == [400]
    index.close()
    reopened = IndexFile(tmp_path / "idx", slot_num=1, index_num=10)
    assert (reopened.index_count, reopened.begin_phy_offset, reopened.end_phy_offset) == (10, 0, 800)
    found = []
    reopened.select_phy_offsets(found, index_key_hash("k0"), 32, 0, 2**62)
    assert found == [600, 300, 0]
    reopened.close()


def test_service_rolls_files_and_queries_across_them(tmp_path: Path) -> None:
    clock = ManualClock()
    service = IndexService(tmp_path / "index", slot_num=4, index_num=5, clock=clock)
    service.load()
    for i in range(20):
        clock.advance(1)
        service.build("T", 1000 + i, clock.now_ms(), 0, f"U{i}", "shared")
    assert len(service.files) >= 8  # 4 usable entries a file, two keys a message
    offsets, last_ts, last_phy = service.query("T", "shared", 64, 0, 2**62)
    assert sorted(offsets) == [1000 + i for i in range(20)]
    assert (last_ts, last_phy) == (clock.now_ms(), 1019)
    assert service.query("T", "U7", 64, 0, 2**62)[0] == [1007]
    assert service.query("T", "shared", 3, 0, 2**62)[0] == [1019, 1018, 1017]
    assert service.query("Other", "shared", 64, 0, 2**62)[0] == []
    service.build("T", 1005, clock.now_ms(), 0, "again", None)  # below the indexed end: skipped
    assert service.query("T", "again", 64, 0, 2**62)[0] == []
    service.build("T", 2000, clock.now_ms(), 0xC, "rolled-back", None)  # ROLLBACK is not indexed
    assert service.query("T", "rolled-back", 64, 0, 2**62)[0] == []
    assert service.delete_expired(1010) >= 3
    assert min(service.query("T", "shared", 64, 0, 2**62)[0]) >= 1008
    service.close()


async def test_store_query_checks_keys_so_collisions_never_answer_wrongly(
    make_store: StoreFactory, message: MessageFactory
) -> None:
    store = make_store(maxHashSlotNum=2)
    await store.put_message(message(keys=COLLIDING[0], body=b"first"))
    await store.put_message(message(keys=f"{COLLIDING[1]} other", body=b"second"))
    await store.put_message(message("TopicB", keys=COLLIDING[0], body=b"other topic"))
    await store.put_message(message(uniq="UNIQ-1", body=b"by uniq"))
    for key, bodies in (
        (COLLIDING[0], [b"first"]),
        (COLLIDING[1], [b"second"]),
        ("other", [b"second"]),
        ("UNIQ-1", [b"by uniq"]),
        ("missing", []),
    ):
        result = store.query_message("TopicA", key, 32, 0, 2**62)
        assert [decode_record(r)[0].body for r in result.records] == bodies, key
    assert store.index is not None
    candidates = store.index.query("TopicA", COLLIDING[0], 32, 0, 2**62)[0]
    assert len(candidates) == 2  # the raw index answers both records with that hash
    result = store.query_message("TopicA", "first", 32, 0, 2**62)
    assert result.index_last_update_phy_offset == store.get_commit_log_offset_in_queue("TopicA", 0, 2)


async def test_batch_entries_are_indexed_by_their_own_keys(make_store: StoreFactory) -> None:
    store = make_store()
    entries = [(0, b"e%d" % i, {"KEYS": f"order-{i}", "UNIQ_KEY": f"B{i}"}) for i in range(5)]
    assert (await store.put_messages(BrokerMessageBatch("TopicA", 0, entries))).is_ok
    for i in range(5):
        assert [
            decode_record(r)[0].body for r in store.query_message("TopicA", f"order-{i}", 8, 0, 2**62).records
        ] == [b"e%d" % i]


async def test_time_range_of_a_query(
    make_store: StoreFactory, message: MessageFactory, clock: ManualClock
) -> None:
    store = make_store()
    stamps = []
    for i in range(4):
        await store.put_message(message(keys="k", body=b"%d" % i))
        stamps.append(clock.now_ms())
        clock.advance(10_000)
    bodies = [
        decode_record(r)[0].body for r in store.query_message("TopicA", "k", 32, stamps[1], stamps[2]).records
    ]
    assert bodies == [b"1", b"2"]
    assert store.query_message("TopicA", "k", 32, stamps[3] + 5000, 2**62).records == []


async def test_disabled_index_answers_nothing(make_store: StoreFactory, message: MessageFactory) -> None:
    store = make_store(messageIndexEnable=False)
    await store.put_message(message(keys="k"))
    assert store.query_message("TopicA", "k", 32, 0, 2**62).records == []


def test_entries_written_after_the_last_header_save_are_recovered(tmp_path: Path) -> None:
    index = IndexFile(tmp_path / "idx", slot_num=2, index_num=50)
    for i in range(5):
        index.put_key(index_key_hash(f"k{i % 2}"), 100 * i, 1_700_000_000_000)
    index.flush()  # header saved with 5 entries
    for i in range(5, 12):
        index.put_key(index_key_hash(f"k{i % 2}"), 100 * i, 1_700_000_000_000)
    index.mapped.close()  # a crash: the header still says 5
    again = IndexFile(tmp_path / "idx", slot_num=2, index_num=50)
    assert (again.index_count, again.end_phy_offset) == (13, 1100)
    found: list[int] = []
    again.select_phy_offsets(found, index_key_hash("k0"), 32, 0, 2**62)
    assert found == [1000, 800, 600, 400, 200, 0]
    again.close()


def test_an_interrupted_file_creation_is_cleaned_up(tmp_path: Path) -> None:
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "20240101000000000.tmp").write_bytes(b"")
    service = IndexService(tmp_path / "index", slot_num=4, index_num=8, clock=ManualClock())
    service.load()
    assert list((tmp_path / "index").iterdir()) == [] and service.files == []


_entry = st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**40), st.integers(0, 2**42))


@settings(max_examples=40, deadline=None)
@given(st.lists(_entry, max_size=12), st.integers(-1, 2**41))
def test_put_entries_writes_what_put_key_writes(
    tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[int, int, int]], begin: int
) -> None:
    """The bulk writer of pending entries and put_key leave byte-identical files (slots, chains, header)."""
    root = tmp_path_factory.mktemp("idx")
    one = IndexFile(root / "one", 4, 8, end_timestamp=max(begin, 0))
    bulk = IndexFile(root / "bulk", 4, 8, end_timestamp=max(begin, 0))
    stored = 0
    for key_hash, phy, ts in entries:
        stored += one.put_key(key_hash, phy, ts)
    assert bulk.put_entries(entries, 0) == stored  # stops where the file is full, as put_key refuses
    one.close()
    bulk.close()
    assert (root / "one").read_bytes() == (root / "bulk").read_bytes()


async def test_index_entries_waiting_to_be_written_are_found_and_survive_a_crash(
    make_store: StoreFactory, message: MessageFactory, crash: Crash
) -> None:
    store = make_store(maxIndexNum=64)
    assert store.index is not None
    for i in range(3):
        await store.put_message(message(keys=f"before{i}"))
    store.flush()  # the checkpoint vouches for the index up to here: the pending entries were written
    assert not store.index.pending and store.checkpoint is not None
    assert store.checkpoint.index_offset == store.get_max_phy_offset()
    count = PENDING_MAX // 2
    for i in range(count):
        await store.put_message(message(uniq=f"U{i}", keys=f"after{i}"))
    assert len(store.index.pending) == count  # not written yet...
    assert [len(store.query_message("TopicA", f"after{i}", 8, 0, 2**62).records) for i in (0, count - 1)] == [
        1,
        1,
    ]
    assert not store.index.pending  # ...a query writes them first
    for i in range(count, 2 * count):
        await store.put_message(message(uniq=f"U{i}", keys=f"after{i}"))
    store.index.pending.clear()  # lost with the process, never written...
    crash(store)
    again = make_store(maxIndexNum=64)  # ...so recovery indexes those records again
    found = [len(again.query_message("TopicA", f"after{i}", 8, 0, 2**62).records) for i in range(2 * count)]
    assert found == [1] * (2 * count)
    assert len(again.query_message("TopicA", "U5", 8, 0, 2**62).records) == 1
    assert len(again.query_message("TopicA", "before2", 8, 0, 2**62).records) == 1
