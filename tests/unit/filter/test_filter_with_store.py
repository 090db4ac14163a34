"""The broker's filters driving the real store's read loop: only matching messages come back, and a
queue where nothing matches reads as NO_MATCHED_MESSAGE with the offset moved on (PULL_RETRY_IMMEDIATELY).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.broker.filter import ConsumerFilterManager, record_properties
from rocketq.common.clock import ManualClock
from rocketq.store.config import MessageStoreConfig
from rocketq.store.message import BrokerMessage
from rocketq.store.message_store import MessageStore
from rocketq.store.status import GetMessageStatus

TOPIC, GROUP = "TopicFilter", "GID_filter"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    config = MessageStoreConfig.build(
        {
            "storePathRootDir": str(tmp_path / "store"),
            "mappedFileSizeCommitLog": 1 << 20,
            "mappedFileSizeConsumeQueue": 20 * 100,
        }
    )
    s = MessageStore(config, ManualClock())
    s.open()
    yield s
    s.close()


async def put(store: MessageStore, count: int) -> None:
    for i in range(count):
        props = {"TAGS": f"Tag{i % 3}", "n": str(i)}
        if i % 5:
            props["price"] = str(i * 10)
        msg = BrokerMessage(
            TOPIC, 0, b"m%d" % i, properties=props, born_host=("127.0.0.1", 1), store_host=("127.0.0.1", 2)
        )
        assert (await store.put_message(msg)).is_ok


async def test_sql92_filter_in_the_store_read_loop(store: MessageStore) -> None:
    await put(store, 40)
    manager = ConsumerFilterManager(enable_property_filter=True)
    f = manager.filter_for_request(GROUP, TOPIC, "SQL92", "price >= 100 AND TAGS <> 'Tag0'")
    got = store.get_message(GROUP, TOPIC, 0, 0, 32, f)
    assert got.status is GetMessageStatus.FOUND
    seen = [int(record_properties(r)["n"]) for r in got.records]
    assert seen == [i for i in range(40) if i % 5 and i * 10 >= 100 and i % 3]
    assert got.next_begin_offset == 40


async def test_nothing_matching_moves_the_offset_on(store: MessageStore) -> None:
    await put(store, 10)
    f = ConsumerFilterManager(enable_property_filter=True).filter_for_request(
        GROUP, TOPIC, "SQL92", "price > 100000"
    )
    got = store.get_message(GROUP, TOPIC, 0, 0, 32, f)
    assert got.status is GetMessageStatus.NO_MATCHED_MESSAGE
    assert got.records == [] and got.next_begin_offset == 10


async def test_tag_filter_in_the_store_read_loop(store: MessageStore) -> None:
    await put(store, 12)
    f = ConsumerFilterManager().filter_for_request(GROUP, TOPIC, "TAG", "Tag1 || Tag2")
    got = store.get_message(GROUP, TOPIC, 0, 0, 32, f)
    assert [int(record_properties(r)["n"]) for r in got.records] == [i for i in range(12) if i % 3]
