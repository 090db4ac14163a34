"""Record codec microbenchmark: CPU per message of the pull-body and batch-body codecs.

    .venv/bin/python bench/record.py                            # accelerators as installed
    ROCKETQ_NO_EXTENSIONS=1 .venv/bin/python bench/record.py    # pure Python

A pull body of 32 records (1 KiB bodies, the properties a producer sets: UNIQ_KEY, TAGS, KEYS, WAIT,
plus MIN/MAX offsets and a user property) is decoded over and over; each case reports CPU
microseconds per message (process time, best of --repeat rounds). Cases:
eager (decode_records: every field), lazy (decode_records_lazy: views only), lazy+read (the views,
then what a push consumer and its listener touch: properties, body, msg_id), batch (decode_batch of
a SEND_BATCH_MESSAGE body, the broker's batch path), properties (one properties string).
It runs against an older tree too (the codec was in rocketq.remoting.protocol.message_codec), for the
before/after figures of docs/performance.md: PYTHONPATH=<old tree>/src python bench/record.py.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

from rocketq.common.message import Message, MessageExt, decode_properties

try:
    from rocketq.common.record import accel
    from rocketq.common.record.codec import decode_batch, decode_records, encode_batch, encode_record
    from rocketq.common.record.lazy import decode_records_lazy

    IMPLEMENTATION = "compiled" if accel.using_extensions() else "pure-python"
except ImportError:  # a tree from before rocketq.common.record
    from rocketq.remoting.protocol.message_codec import (  # type: ignore[no-redef]
        decode_batch,
        decode_records,
        encode_batch,
        encode_record,
    )

    decode_records_lazy = None  # type: ignore[assignment]
    IMPLEMENTATION = "old"

RECORDS = 32
BODY = os.urandom(1024)


def pull_body() -> bytes:
    records = []
    for i in range(RECORDS):
        msg = MessageExt(
            "BenchTopic",
            BODY,
            tags="TagA",
            keys=f"order-{i}",
            properties={
                "UNIQ_KEY": f"7F000001{i:024X}",
                "WAIT": "true",
                "MIN_OFFSET": "0",
                "MAX_OFFSET": "100000",
                "shop": "s1",
            },
            queue_id=i % 8,
            queue_offset=1000 + i,
            commit_log_offset=4096 * i,
            born_host=("127.0.0.1", 50000),
            store_host=("127.0.0.1", 10911),
        )
        records.append(encode_record(msg))
    return b"".join(records)


def cpu_us_per_message(fn: Callable[[], Any], messages: int, rounds: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(rounds):
            fn()
        best = min(best, time.process_time() - start)
    return best / (rounds * messages) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=300, help="decodes of the body per measurement")
    parser.add_argument("--repeat", type=int, default=5, help="measurements; the best counts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    body = pull_body()
    batch = encode_batch(
        [
            Message("BenchTopic", BODY, tags="TagA", keys=f"k{i}", properties={"UNIQ_KEY": f"{i:032X}"})
            for i in range(RECORDS)
        ]
    )
    props_text = decode_records(body)[0].properties
    text = "\x02".join(f"{k}\x01{v}" for k, v in props_text.items())

    def lazy_read() -> None:
        for msg in decode_records_lazy(body):
            _ = msg.properties, msg.body, msg.msg_id

    def eager_read() -> None:
        for msg in decode_records(body):
            _ = msg.properties, msg.body, msg.msg_id

    cases: dict[str, tuple[Callable[[], Any], int]] = {
        "eager": (lambda: decode_records(body), RECORDS),
        "eager+read": (eager_read, RECORDS),
        "batch": (lambda: decode_batch(batch), RECORDS),
        "properties": (lambda: decode_properties(text), 1),
    }
    if decode_records_lazy is not None:
        cases["lazy"] = (lambda: decode_records_lazy(body), RECORDS)
        cases["lazy+read"] = (lazy_read, RECORDS)
    results = {
        name: round(cpu_us_per_message(fn, n, args.rounds * (RECORDS if n == 1 else 1), args.repeat), 3)
        for name, (fn, n) in cases.items()
    }
    if args.json:
        print(json.dumps({"implementation": IMPLEMENTATION, "cpu_us_per_message": results}))
    else:
        print(f"{IMPLEMENTATION}: " + "  ".join(f"{k} {v:.2f} us" for k, v in results.items()))


if __name__ == "__main__":
    main()
