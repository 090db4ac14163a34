"""Child process of the store crash tests: appends until killed, printing each acknowledged message.

Usage: python crash_writer.py STORE_ROOT SYNC_FLUSH|ASYNC_FLUSH WRITERS FIRST_SEQ
Each line: ACK <seq> <commit-log offset> <size> <queue id> <queue offset> <crc32 of the stored record>.
Every 7th append is a batch of three (one line per entry). Stops by itself after 60 s or 100,000 messages.
"""

from __future__ import annotations

import asyncio
import sys
import time
import zlib

from rocketq.store.config import MessageStoreConfig
from rocketq.store.message import BrokerMessage, BrokerMessageBatch
from rocketq.store.message_store import MessageStore


def body_of(seq: int) -> bytes:
    return (b"%08d" % seq) * (1 + seq % 40)


async def main(root: str, flush_type: str, writers: int, first_seq: int) -> None:
    config = MessageStoreConfig.build(
        {
            "storePathRootDir": root,
            "flushDiskType": flush_type,
            "mappedFileSizeCommitLog": 64 * 1024,
            "mappedFileSizeConsumeQueue": 20 * 64,
            "maxMessageSize": 8192,
            "mappedFileReserveAhead": 16 * 1024,
            "flushIntervalCommitLog": 20,
            "flushIntervalConsumeQueue": 50,
            "flushConsumeQueueThoroughInterval": 0,
            "maxHashSlotNum": 128,
            "maxIndexNum": 1024,
        }
    )
    store = MessageStore(config)
    await store.start()
    print("READY", flush=True)
    seq_counter = iter(range(first_seq, first_seq + 100_000))
    deadline = time.monotonic() + 60
    out = sys.stdout

    async def writer(worker: int) -> None:
        for seq in seq_counter:
            if time.monotonic() > deadline:
                return
            queue_id = seq % 4
            if seq % 7 == 3:
                seqs = [seq, next(seq_counter), next(seq_counter)]
                entries = [(s, body_of(s), {"UNIQ_KEY": f"U{s}", "KEYS": f"k{s}"}) for s in seqs]
                result = await store.put_messages(BrokerMessageBatch("CrashTopic", queue_id, entries))
            else:
                seqs = [seq]
                msg = BrokerMessage(
                    "CrashTopic",
                    queue_id,
                    body_of(seq),
                    flag=seq,
                    properties={"UNIQ_KEY": f"U{seq}", "TAGS": "T"},
                )
                result = await store.put_message(msg)
            if not result.is_ok or result.append is None:
                print("FAIL", seq, result.status.value, result.remark, flush=True)
                continue
            offset = result.append.wrote_offset
            for i, s in enumerate(seqs):
                record = store.select_one_message_by_offset(offset) or b""
                out.write(
                    f"ACK {s} {offset} {len(record)} {queue_id} {result.append.logical_offset + i} {zlib.crc32(record)}\n"
                )
                offset += len(record)
            out.flush()
            await asyncio.sleep(0)

    await asyncio.gather(*(writer(w) for w in range(writers)))
    await store.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
