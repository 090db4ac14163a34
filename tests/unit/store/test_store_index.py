"""Index files: codecs, chains through one slot, true hash collisions, time ranges, rolls, queries."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hypothesis import given
from hypothesis import strategies as st

from rocketq.common.clock import ManualClock
from rocketq.remoting.protocol.message_codec import decode_record
from rocketq.store.index_file import (
    INDEX_HEADER_SIZE,
    IndexFile,
    decode_index_entry,
    decode_index_header,
    encode_index_entry,
    encode_index_header,
    index_file_size,
    index_key_hash,
)
from rocketq.store.index_service import IndexService
from rocketq.store.message import BrokerMessageBatch

if TYPE_CHECKING:
    from conftest import MessageFactory, StoreFactory

# Two keys whose index hashes are equal (found by search): a true collision, not just a shared slot.
COLLIDING = ("key3985819", "key4420602")
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
