"""Stats unit-test constants and builders (a unique module name: test directories share sys.path)."""

from __future__ import annotations

import json
from typing import Any

from rocketq.common.message import MessageExt
from rocketq.common.record.codec import decode_records
from rocketq.store.message_store import MessageStore

T0 = 1_700_000_000_000  # the ManualClock's start (epoch ms)


def read_topic(store: MessageStore, topic: str, queue_id: int = 0) -> list[MessageExt]:
    records: list[bytes] = []
    offset = 0
    for _ in range(1000):
        got = store.get_message("g", topic, queue_id, offset, 32)
        records.extend(got.records)
        if got.next_begin_offset == offset:
            break
        offset = got.next_begin_offset
    return decode_records(b"".join(records))


def read_json(store: MessageStore, topic: str) -> list[dict[str, Any]]:
    return [json.loads(m.body) for m in read_topic(store, topic)]
