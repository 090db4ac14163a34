from pathlib import Path

from rocketq.client.consumer.offset_store import (
    NOT_FOUND,
    UNKNOWN,
    LocalFileOffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from rocketq.common.message import MessageQueue
from rocketq.common.persist import atomic_write_json

MQ0 = MessageQueue("T", "broker-a", 0)
MQ1 = MessageQueue("T", "broker-a", 1)
OTHER = MessageQueue("U", "broker-b", 0)


class FakeBackend:
    def __init__(self) -> None:
        self.stored: dict[MessageQueue, int] = {}
        self.commits: list[tuple[MessageQueue, int]] = []
        self.down = False

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int | None:
        if self.down:
            raise ConnectionError("down")
        return self.stored.get(mq)

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, *, oneway: bool = True
    ) -> None:
        if self.down:
            raise ConnectionError("down")
        self.commits.append((mq, offset))
        self.stored[mq] = offset


async def test_remote_read_found_not_found_unknown() -> None:
    backend = FakeBackend()
    store = RemoteBrokerOffsetStore("g", backend)
    backend.stored[MQ0] = 42
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == 42
    assert store.read_memory(MQ0) == 42
    assert await store.read_offset(MQ1, ReadOffsetType.READ_FROM_STORE) == NOT_FOUND
    backend.down = True
    assert await store.read_offset(MQ1, ReadOffsetType.READ_FROM_STORE) == UNKNOWN
    assert await store.read_offset(MQ0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 42


async def test_remote_increase_only_and_persist_subset() -> None:
    backend = FakeBackend()
    store = RemoteBrokerOffsetStore("g", backend)
    store.update_offset(MQ0, 10)
    store.update_offset(MQ0, 5, increase_only=True)
    assert store.read_memory(MQ0) == 10
    store.update_offset(MQ0, 5)
    assert store.read_memory(MQ0) == 5
    store.update_offset(MQ1, 7)
    store.update_offset(OTHER, -3)  # ignored
    await store.persist_all([MQ0])
    assert backend.commits == [(MQ0, 5)]
    await store.persist(MQ1)
    assert backend.commits[-1] == (MQ1, 7)
    backend.down = True
    await store.persist_all([MQ0, MQ1])  # logged, not raised
    assert store.clone_offset_table("T") == {MQ0: 5, MQ1: 7}
    store.remove_offset(MQ0)
    assert store.read_memory(MQ0) == NOT_FOUND


async def test_local_file_round_trip(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("g", str(tmp_path), "127.0.0.1@DEFAULT")
    store.update_offset(MQ0, 3)
    store.update_offset(OTHER, 9)
    await store.persist_all([MQ0])
    again = LocalFileOffsetStore("g", str(tmp_path), "127.0.0.1@DEFAULT")
    await again.load()
    assert again.clone_offset_table() == {MQ0: 3, OTHER: 9}
    assert await again.read_offset(MQ1, ReadOffsetType.READ_FROM_STORE) == NOT_FOUND


async def test_local_file_bad_entries_skipped(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("g", str(tmp_path), "c")
    atomic_write_json(
        store.path,
        {"offsetTable": [{"topic": "T"}, {"topic": "T", "brokerName": "b", "queueId": 1, "offset": 4}]},
    )
    await store.load()
    assert store.clone_offset_table() == {MessageQueue("T", "b", 1): 4}
