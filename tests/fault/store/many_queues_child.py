"""Child process of the many-queues test: 1,000 topics x 8 queues under a 1,024 open-file soft limit.

Usage: python many_queues_child.py STORE_ROOT
Lowers its own soft RLIMIT_NOFILE to 1,024, writes one message to each of 8,000 queues through a
running store (SYNC_FLUSH is not needed: descriptors are the point), shuts it down, opens it again and
reads every queue back. Prints one JSON line: {"fds_peak": ..., "queues": ..., "read_back": ...}.
Any failure (EMFILE included) is an exception and a non-zero exit.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys

from rocketq.store.config import MessageStoreConfig
from rocketq.store.message import BrokerMessage
from rocketq.store.message_store import MessageStore

TOPICS = 1_000
QUEUES = 8
SOFT_LIMIT = 1_024


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def open_store(root: str) -> MessageStore:
    config = MessageStoreConfig.build(
        {
            "storePathRootDir": root,
            "mappedFileSizeCommitLog": 64 << 20,
            "mappedFileSizeConsumeQueue": 20 * 1024,
            "maxHashSlotNum": 1024,
            "maxIndexNum": 16_384,
        }
    )
    return MessageStore(config)


async def main(root: str) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT_LIMIT, hard))
    peak = 0
    store = open_store(root)
    await store.start()
    for t in range(TOPICS):
        for q in range(QUEUES):
            msg = BrokerMessage(f"Many-{t:04d}", q, b"%d/%d" % (t, q), properties={"TAGS": "x"})
            result = await store.put_message(msg)
            assert result.is_ok, result
        peak = max(peak, open_fds())
    await store.shutdown()
    store = open_store(root)
    store.open()
    read_back = 0
    for t in range(TOPICS):
        for q in range(QUEUES):
            got = store.get_message("g", f"Many-{t:04d}", q, 0, 32)
            assert got.message_count == 1 and got.records[0].find(b"%d/%d" % (t, q)) > 0, (t, q, got.status)
            read_back += 1
        peak = max(peak, open_fds())
    store.close()
    print(json.dumps({"fds_peak": peak, "queues": len(store.queues), "read_back": read_back}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
