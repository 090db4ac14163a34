"""Store test helpers: a small-file store in tmp_path, message builders, a crash without clean shutdown."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.common.clock import ManualClock
from rocketq.common.service import ServiceState
from rocketq.store.config import MessageStoreConfig
from rocketq.store.message import BrokerMessage
from rocketq.store.message_store import MessageStore

SMALL: dict[str, Any] = {
    "mappedFileSizeCommitLog": 8192,
    "mappedFileSizeConsumeQueue": 20 * 16,
    "maxMessageSize": 2048,
    "maxHashSlotNum": 64,
    "maxIndexNum": 256,
    "mappedFileReserveAhead": 4096,
}


def store_config(root: Path, **overrides: Any) -> MessageStoreConfig:
    values = {"storePathRootDir": str(root), **SMALL, **overrides}
    return MessageStoreConfig.build(values)


def make_message(
    topic: str = "TopicA", queue_id: int = 0, body: bytes = b"hello", *, tags: str | None = None, keys: str | None = None,
    uniq: str | None = None, **props: str,
) -> BrokerMessage:  # fmt: skip
    properties = dict(props)
    if tags:
        properties["TAGS"] = tags
    if keys:
        properties["KEYS"] = keys
    if uniq:
        properties["UNIQ_KEY"] = uniq
    return BrokerMessage(
        topic,
        queue_id,
        body,
        properties=properties,
        born_host=("10.0.0.1", 5000),
        store_host=("10.0.0.2", 10911),
    )


def read_queue(store: MessageStore, topic: str, queue_id: int, offset: int = 0) -> list[bytes]:
    """Pull a queue to its end the way a consumer does (a pull stops at a consume-queue file's end)."""
    records: list[bytes] = []
    for _ in range(10_000):
        got = store.get_message("g", topic, queue_id, offset, 32)
        records.extend(got.records)
        if got.next_begin_offset == offset:
            return records
        offset = got.next_begin_offset
    raise AssertionError("the queue never ends")


def crash_store(store: MessageStore) -> None:
    """Leave like a killed process: files unmapped, no final flush, no checkpoint, abort file kept."""
    store._close_files()
    store._state = ServiceState.SHUTDOWN_ALREADY


StoreFactory = Callable[..., MessageStore]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(now_ms=1_700_000_000_000)


@pytest.fixture
def make_store(tmp_path: Path, clock: ManualClock) -> Iterator[StoreFactory]:
    opened: list[MessageStore] = []

    def factory(
        *,
        open_: bool = True,
        root: Path | None = None,
        disk_usage: Callable[[Path], float] | None = None,
        **overrides: Any,
    ) -> MessageStore:
        kwargs = {"disk_usage": disk_usage} if disk_usage is not None else {}
        store = MessageStore(store_config(root or tmp_path / "store", **overrides), clock, **kwargs)
        if open_:
            store.open()
        opened.append(store)
        return store

    yield factory
    for store in opened:
        if store.is_open:
            store.close()


MessageFactory = Callable[..., BrokerMessage]
ReadAll = Callable[..., list[bytes]]
Crash = Callable[[MessageStore], None]


@pytest.fixture
def message() -> MessageFactory:
    return make_message


@pytest.fixture
def read_all() -> ReadAll:
    return read_queue


@pytest.fixture
def crash() -> Crash:
    return crash_store
