"""Lifecycle unit-test helpers: the small store configuration and message builders."""

from __future__ import annotations

from typing import Any

from rocketq.common.message import MessageExt
from rocketq.remoting.protocol.message_codec import decode_records
from rocketq.store.message import BrokerMessage
from rocketq.store.message_store import MessageStore

SMALL: dict[str, Any] = {
    "mappedFileSizeCommitLog": 64 * 1024,
    "mappedFileSizeConsumeQueue": 20 * 64,
    "maxMessageSize": 4096,
    "maxHashSlotNum": 64,
    "maxIndexNum": 256,
    "mappedFileReserveAhead": 4096,
    "messageDelayLevel": "1s 2s 3s",
}


def message(topic: str = "T", queue_id: int = 0, body: bytes = b"hello", **props: str) -> BrokerMessage:
    return BrokerMessage(topic, queue_id, body, properties=dict(props), born_host=("10.0.0.1", 5000),
                         store_host=("10.0.0.2", 10911), born_timestamp=1)


def read_all(store: MessageStore, topic: str, queue_id: int = 0) -> list[MessageExt]:
    records: list[bytes] = []
    offset = 0
    for _ in range(1000):
        got = store.get_message("g", topic, queue_id, offset, 32)
        records.extend(got.records)
        if got.next_begin_offset == offset:
            break
        offset = got.next_begin_offset
    return decode_records(b"".join(records))
