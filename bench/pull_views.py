"""The SDK's own work per pulled message, in one process, without sockets: the answer's records as views,
PullAPIWrapper.process (the broker name, MIN_OFFSET / MAX_OFFSET, the transaction id), and the body read.

    .venv/bin/python bench/pull_views.py                          # as a pull consumer does it now
    .venv/bin/python bench/pull_views.py --eager                  # every message's properties decoded
    ROCKETQ_NO_EXTENSIONS=1 .venv/bin/python bench/pull_views.py  # pure Python
    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python bench/pull_views.py --pulls 1000
    # ... and again with --pulls 3000: (difference of the two "I refs") / 64,000 = instructions per message

A pull body of --batch 1 KiB records (the properties a producer sends: UNIQ_KEY, WAIT, and the broker's
CLUSTER) is encoded once; each pull decodes it into views, processes them as PullAPIWrapper.pull does and
reads every body, as a listener that reads only the body would (--read-properties: and the properties).
"cpu us" is time.process_time per message, best of --rounds. --eager makes plain views and decodes every
message's properties in process(), as before the pull's offsets waited for the first read of the
properties (the figure to compare with).
"""

from __future__ import annotations

import argparse
import time

from rocketq.client.consumer.pull_api import PullAPIWrapper
from rocketq.client.consumer.pulled import decode_pulled
from rocketq.client.model import PullResult, PullStatus
from rocketq.common.message import MessageExt, MessageQueue
from rocketq.common.record.codec import encode_record
from rocketq.common.record.lazy import decode_records_lazy
from rocketq.remoting.protocol.bodies.heartbeat import SubscriptionData

TRANSACTIONAL = b"TRAN_MSG\x01true"


def pull_body(batch: int, size: int) -> bytes:
    records = []
    for i in range(batch):
        msg = MessageExt("bench_pull_views", b"x" * size, queue_offset=i, commit_log_offset=i * (size + 200))
        msg.properties = {
            "UNIQ_KEY": f"7F0000010B2A18B4AAC2{i:012X}",
            "WAIT": "true",
            "CLUSTER": "DefaultCluster",
        }
        msg.store_host, msg.born_host = ("127.0.0.1", 10911), ("127.0.0.1", 50000)
        records.append(encode_record(msg))
    return b"".join(records)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pulls", type=int, default=3000, help="pulls per round")
    p.add_argument("--batch", type=int, default=32, help="messages per pull")
    p.add_argument("--size", type=int, default=1024, help="body bytes")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--eager", action="store_true", help="decode every message's properties in process()")
    p.add_argument("--read-properties", action="store_true", help="the listener reads the properties too")
    args = p.parse_args()
    body = pull_body(args.batch, args.size)
    wrapper = PullAPIWrapper(None, "bench")  # type: ignore[arg-type]  # process() needs no instance
    mq = MessageQueue("bench_pull_views", "broker-a", 0)
    sub = SubscriptionData(topic="bench_pull_views", sub_string="*")
    best = float("inf")
    for _ in range(args.rounds):
        started = time.process_time()
        for _ in range(args.pulls):
            views = decode_records_lazy(body) if args.eager else decode_pulled(body)
            result = PullResult(PullStatus.FOUND, args.batch, 0, 1_000_000, views, 0)
            transactional = True if args.eager else TRANSACTIONAL in body
            for msg in wrapper.process(mq, result, sub, transactional).messages:
                _ = msg.body
                if args.read_properties:
                    _ = msg.properties
        best = min(best, (time.process_time() - started) * 1e6 / (args.pulls * args.batch))
    what = ("eager, " if args.eager else "") + ("properties read, " if args.read_properties else "")
    print(f"pull views ({what}{args.pulls} pulls of {args.batch}): best cpu {best:.3f} us/msg")


if __name__ == "__main__":
    main()
