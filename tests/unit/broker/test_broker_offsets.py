import json
from pathlib import Path

from rocketq.broker.offsets import ConsumerOffsetManager


def test_commit_and_query() -> None:
    m = ConsumerOffsetManager()
    assert m.query_offset("g", "T", 0) == -1
    m.commit_offset("1.2.3.4:5", "g", "T", 0, 10)
    m.commit_offset("1.2.3.4:5", "g", "T", 1, 3)
    assert m.query_offset("g", "T", 0) == 10
    assert m.query_offsets("g", "T") == {0: 10, 1: 3}
    assert m.which_topics_by_consumer("g") == {"T"}
    assert m.which_groups_by_topic("T") == {"g"}


def test_committing_minus_one_means_no_offset() -> None:
    m = ConsumerOffsetManager()
    m.commit_offset("c", "g", "T", 0, 5)
    m.commit_offset("c", "g", "T", 0, -1)
    assert m.query_offset("g", "T", 0) == -1
    assert m.offset_table == {}


def test_persist_and_reload_in_java_shape(tmp_path: Path) -> None:
    m = ConsumerOffsetManager(str(tmp_path))
    assert m.load() is False
    m.commit_offset("c", "g", "T", 2, 7)
    assert m.dirty
    m.persist()
    assert not m.dirty
    data = json.loads((tmp_path / "consumerOffset.json").read_text())
    assert data == {"offsetTable": {"T@g": {"2": 7}}}
    again = ConsumerOffsetManager(str(tmp_path))
    assert again.load() is True
    assert again.query_offset("g", "T", 2) == 7


def test_load_accepts_fastjson_like_content_and_skips_garbage(tmp_path: Path) -> None:
    (tmp_path / "consumerOffset.json").write_text(
        json.dumps({"offsetTable": {"T@g": {"0": 1, "x": 2}, "bad": {"0": 1}, "U@h": {"1": -1}}})
    )
    m = ConsumerOffsetManager(str(tmp_path))
    m.load()
    assert m.offset_table == {"T@g": {0: 1}}


def test_remove_group_and_topic_and_clone() -> None:
    m = ConsumerOffsetManager()
    m.commit_offset("c", "g", "T", 0, 1)
    m.commit_offset("c", "g", "U", 0, 2)
    m.commit_offset("c", "h", "T", 0, 3)
    m.clone_offset("g", "k", "T")
    assert m.query_offset("k", "T", 0) == 1
    m.remove_offset("g")
    assert m.which_topics_by_consumer("g") == set()
    m.remove_topic("T")
    assert m.which_groups_by_topic("T") == set()


async def test_a_persist_stopped_mid_write_leaves_the_table_dirty(tmp_path: Path) -> None:
    import asyncio
    import contextlib
    import threading

    m = ConsumerOffsetManager(str(tmp_path))
    m.commit_offset("c", "g", "T", 0, 1)
    gate = threading.Event()
    original = m.write
    m.write = lambda data: (gate.wait(5), original(data))  # type: ignore[method-assign, assignment]
    task = asyncio.ensure_future(m.persist_async())
    for _ in range(3):
        await asyncio.sleep(0)
    assert not m.dirty  # the snapshot was taken
    task.cancel()
    gate.set()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert m.dirty  # so the shutdown's final persist writes it again
    m.write = original  # type: ignore[method-assign]
    m.persist()
    assert ConsumerOffsetManager(str(tmp_path)).load()


def test_a_torn_file_falls_back_to_the_backup_and_two_torn_copies_refuse(tmp_path: Path) -> None:
    import pytest

    m = ConsumerOffsetManager(str(tmp_path))
    m.commit_offset("c", "g", "T", 0, 1)
    m.persist()
    m.commit_offset("c", "g", "T", 0, 2)
    m.persist()  # consumerOffset.json holds 2, consumerOffset.json.bak holds 1
    (tmp_path / "consumerOffset.json").write_text('{"offsetTable": {"T@g": {"0": ')
    again = ConsumerOffsetManager(str(tmp_path))
    assert again.load() and again.query_offset("g", "T", 0) == 1
    (tmp_path / "consumerOffset.json.bak").write_text("garbage")
    with pytest.raises(ValueError, match=r"consumerOffset\.json"):
        ConsumerOffsetManager(str(tmp_path)).load()


def test_a_consumer_offset_file_written_by_apaches_broker_loads(tmp_path: Path) -> None:
    # Apache's fastjson writes integer map keys unquoted: a store moved from Apache's broker must load.
    (tmp_path / "consumerOffset.json").write_text(
        '{\n\t"offsetTable":{\n\t\t"Portable@cg-port":{0:6,1:5,2:6,3:7\n\t\t}\n\t}\n}'
    )
    m = ConsumerOffsetManager(str(tmp_path))
    assert m.load()
    assert [m.query_offset("cg-port", "Portable", q) for q in range(4)] == [6, 5, 6, 7]
