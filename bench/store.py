"""Message store throughput: append plus dispatch, and read-back, next to plain write() of the same bytes.

    .venv/bin/python bench/store.py                         # the full table (about a minute)
    .venv/bin/python bench/store.py --seconds 1 --cases async-single,async-batch32
    .venv/bin/python bench/store.py --dir /data/tmp         # the disk to measure (default: the temp dir)
    .venv/bin/python bench/store.py --loop asyncio          # default uvloop, as the broker runs

Every case opens a fresh store (default sizes: 1 GiB commit-log files) in a temporary directory, warms
it up for `--warmup` seconds (untimed appends to another topic), then appends 1 KiB messages with typical properties (UNIQ_KEY, TAGS, WAIT, CLUSTER) into 8 queues of one topic
for `--seconds` (or until `--messages` are done). A put returns after its record is in the mapping,
its consume-queue unit and index entry are written and the arrival listener has run; under SYNC_FLUSH
after the group commit covering it. The baseline is plain os.write() of the same record bytes with the
same chunking (one write per put or per batch), in the same directory, in the same run; under
SYNC_FLUSH it is write() + fdatasync() per put. Ratio = store rate / baseline rate. "cpu us" is the
event-loop thread's CPU time per message (flush and allocator threads excluded): on a shared machine
it says what the wall-clock rate would be with a core to itself, as does "best msg/s", the rate of the
fastest stretch of 8192 messages (one writer only).
Read-back: get_message 32 at a time over what async-single wrote, against os.pread of the same bytes
in the same chunks. Dispatch: what a reput task would add per message (parsing the record back out of
the commit log) next to the whole inline put, which is why dispatch is inline.
Targets: async appends >= 150,000 msg/s; SYNC_FLUSH with 64 writers >= 10x SYNC_FLUSH with 1 writer.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rocketq.common.record.check import check_record
from rocketq.store.config import MessageStoreConfig
from rocketq.store.message import BrokerMessage, BrokerMessageBatch
from rocketq.store.message_store import MessageStore

BODY = os.urandom(1024)
TOPIC = "BenchTopic"
QUEUES = 8
CASES = (
    "async-single",
    "async-batch32",
    "sync-single-1w",
    "sync-single-64w",
    "sync-batch32-1w",
    "sync-batch32-64w",
)


@dataclass
class Outcome:
    name: str
    messages: int
    bytes: int
    seconds: float
    baseline_seconds: float
    note: str = ""
    cpu_seconds: float = 0.0  # the event-loop thread's CPU time (flush threads not included)
    best_window_rate: float = 0.0  # msg/s of the fastest 8192-message stretch

    def row(self) -> str:
        rate = self.messages / self.seconds
        mbps = self.bytes / self.seconds / 1e6
        ratio = (
            (self.bytes / self.seconds) / (self.bytes / self.baseline_seconds) if self.baseline_seconds else 0
        )
        cpu = self.cpu_seconds / self.messages * 1e6 if self.cpu_seconds else 0.0
        best = f"{self.best_window_rate:>12,.0f}" if self.best_window_rate else f"{'':>12s}"
        return f"{self.name:18s} {self.messages:>9,d} {rate:>12,.0f} {mbps:>9.1f} {ratio:>8.2f} {cpu:>8.2f} {best}  {self.note}"


def make_messages(count: int, start: int = 0) -> list[BrokerMessage]:
    return [
        BrokerMessage(
            TOPIC,
            i % QUEUES,
            BODY,
            properties={
                "UNIQ_KEY": f"7F00000100002A9F{i:016X}",
                "WAIT": "true",
                "TAGS": "TagA",
                "CLUSTER": "DefaultCluster",
            },
            tags_code=2598919,
            born_timestamp=1_700_000_000_000,
            born_host=("10.0.0.7", 50123),
            store_host=("10.0.0.1", 10911),
        )
        for i in range(start, start + count)
    ]


def make_batches(count: int) -> list[BrokerMessageBatch]:
    batches = []
    for b in range(count):
        entries = [
            (
                0,
                BODY,
                {
                    "UNIQ_KEY": f"7F00000100002A9F{b * 32 + i:016X}",
                    "TAGS": "TagA",
                    "WAIT": "true",
                    "CLUSTER": "DefaultCluster",
                },
            )
            for i in range(32)
        ]
        batches.append(
            BrokerMessageBatch(
                TOPIC, b % QUEUES, entries, born_host=("10.0.0.7", 50123), store_host=("10.0.0.1", 10911)
            )
        )
    return batches


def open_store(root: Path, flush: str) -> MessageStore:
    config = MessageStoreConfig.build({"storePathRootDir": str(root), "flushDiskType": flush})
    return MessageStore(config)


def wait_reserved(store: MessageStore) -> None:
    """Let the allocator reserve the first window, as it would have long before in a running broker."""
    current = store.commit_log.queue.last()
    want = store.config.mapped_file_reserve_ahead_bytes
    deadline = time.monotonic() + 10
    while current is not None and current.reserved < want and time.monotonic() < deadline:
        time.sleep(0.01)


def baseline(root: Path, chunk_sizes: list[int], sync: bool) -> float:
    """Seconds for plain os.write() of chunks of these sizes (fdatasync after each when `sync`)."""
    path = root / "baseline.bin"
    data = os.urandom(max(chunk_sizes))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        start = time.perf_counter()
        for size in chunk_sizes:
            os.write(fd, data[:size])
            if sync:
                os.fdatasync(fd)
        return time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink()


async def warm_up(store: MessageStore, seconds: float) -> None:
    """Untimed appends to another topic: first touches of queue and index pages happen here."""
    deadline = time.perf_counter() + seconds
    batch = make_messages(2000, start=10**9)
    while time.perf_counter() < deadline:
        for msg in batch:
            msg.topic = "WarmUpTopic"
            await store.put_message(msg)


async def run_case(
    name: str, root: Path, seconds: float, max_messages: int, warmup: float
) -> tuple[Outcome, MessageStore | None]:
    sync = name.startswith("sync")
    batch = "batch32" in name
    writers = 64 if name.endswith("64w") else 1
    store = open_store(root, "SYNC_FLUSH" if sync else "ASYNC_FLUSH")
    await store.start()
    store.add_arrival_listener(lambda *args: None)  # long polling's hook is on the path, as in a broker
    wait_reserved(store)
    await warm_up(store, warmup)
    units = max_messages // 32 if batch else max_messages
    work: list[BrokerMessage] | list[BrokerMessageBatch] = (
        make_batches(units) if batch else make_messages(units)
    )
    sizes: list[int] = []
    marks: list[float] = []  # perf_counter at every 8192 messages, for the best-window rate
    next_item = iter(work)
    deadline = time.perf_counter() + seconds

    stop = [False]  # set by whichever writer sees the deadline; every writer checks it each put

    async def writer() -> None:
        if batch:
            put_batch = store.put_messages
            for item in next_item:
                result = await put_batch(item)  # type: ignore[arg-type]
                assert result.is_ok and result.append is not None, result
                sizes.append(result.append.wrote_bytes)
                if len(sizes) & 255 == 0:
                    marks.append(time.perf_counter())
                if stop[0] or time.perf_counter() > deadline:
                    stop[0] = True
                    return
        else:
            put = store.put_message
            add = sizes.append
            for item in next_item:
                append = (await put(item)).append  # type: ignore[arg-type]
                assert append is not None
                add(append.wrote_bytes)
                if stop[0]:
                    return
                if len(sizes) & 8191 == 0:
                    now = time.perf_counter()
                    marks.append(now)
                    if now > deadline:
                        stop[0] = True
                        return
                elif writers > 1 and len(sizes) & 255 == 0 and time.perf_counter() > deadline:
                    stop[0] = True
                    return

    start = time.perf_counter()
    cpu_start = time.thread_time()
    await asyncio.gather(*(writer() for _ in range(writers)))
    elapsed = time.perf_counter() - start
    cpu = time.thread_time() - cpu_start
    messages = len(sizes) * (32 if batch else 1)
    base = baseline(root, sizes, sync)
    note = f"{writers} writer(s); baseline write(){'+fdatasync' if sync else ''} per put"
    gaps = [b - a for a, b in itertools.pairwise(marks)]
    best = 8192 / min(gaps) if gaps and writers == 1 else 0.0
    outcome = Outcome(name, messages, sum(sizes), elapsed, base, note, cpu, best)
    if name == "async-single":
        return outcome, store
    await store.shutdown()
    return outcome, None


def read_back(store: MessageStore, root: Path) -> Outcome:
    calls: list[int] = []
    count = 0
    total = 0
    start = time.perf_counter()
    cpu_start = time.thread_time()
    for queue_id in range(QUEUES):
        offset = 0
        while True:
            got = store.get_message("bench", TOPIC, queue_id, offset, 32)
            if not got.records:
                break
            size = got.body_size
            calls.append(size)
            count += len(got.records)
            total += size
            offset = got.next_begin_offset
    elapsed = time.perf_counter() - start
    cpu = time.thread_time() - cpu_start
    # Baseline: pread the same byte counts from a file of the same size.
    path = root / "readback.bin"
    with open(path, "wb") as fh:
        fh.write(os.urandom(1 << 20) * (total // (1 << 20) + 1))
    fd = os.open(path, os.O_RDONLY)
    try:
        b_start = time.perf_counter()
        pos = 0
        for size in calls:
            os.pread(fd, size, pos)
            pos += size
        b_elapsed = time.perf_counter() - b_start
    finally:
        os.close(fd)
        path.unlink()
    note = "get_message 32 per call; baseline pread per call"
    return Outcome("read-back", count, total, elapsed, b_elapsed, note, cpu)


def dispatch_cost(store: MessageStore, put_seconds_per_msg: float) -> str:
    """What a reput task would add: parse each record back out of the commit log (no CRC)."""
    queue = store.commit_log.queue
    mapped = queue.files[0]
    pos, parsed = 0, 0
    start = time.perf_counter()
    while pos < mapped.wrote_position and parsed < 100_000:
        result = check_record(mapped.mm, pos, mapped.file_size, check_crc=False, parse=True)
        if result.size == 0:
            break
        pos += result.size
        parsed += 1
    per = (time.perf_counter() - start) / max(parsed, 1)
    return (
        f"dispatch: a reput task would parse each record back: {per * 1e6:.2f} us/msg, "
        f"{per / put_seconds_per_msg * 100:.0f}% of the whole inline put ({put_seconds_per_msg * 1e6:.2f} us/msg)"
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="time per case")
    parser.add_argument("--warmup", type=float, default=1.0, help="untimed appends before each case")
    parser.add_argument("--messages", type=int, default=600_000, help="at most this many messages per case")
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated subset of " + ", ".join(CASES)
    )
    parser.add_argument("--dir", default=None, help="directory on the disk to measure")
    parser.add_argument(
        "--loop", choices=("uvloop", "asyncio"), default="uvloop", help="as the broker's eventLoop"
    )
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    for case in cases:
        if case not in CASES:
            parser.error(f"unknown case {case!r}")
    base_dir = Path(tempfile.mkdtemp(prefix="rocketq-bench-store-", dir=args.dir))
    loop_name = type(asyncio.get_running_loop()).__module__.split(".")[0]
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpu, {loop_name} loop, load {os.getloadavg()[0]:.1f}, store under {base_dir}"
    )
    print(
        f"{'case':18s} {'messages':>9s} {'msg/s':>12s} {'MB/s':>9s} {'x write()':>8s} {'cpu us':>8s} {'best msg/s':>12s}"
    )
    rates: dict[str, float] = {}
    best: dict[str, float] = {}
    try:
        for i, case in enumerate(cases):
            root = base_dir / f"{i}-{case}"
            outcome, kept = await run_case(case, root, args.seconds, args.messages, args.warmup)
            rates[case] = outcome.messages / outcome.seconds
            best[case] = outcome.best_window_rate
            print(outcome.row(), flush=True)
            if kept is not None:
                print(read_back(kept, root).row(), flush=True)
                print(dispatch_cost(kept, outcome.cpu_seconds / outcome.messages), flush=True)
                await kept.shutdown()
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(base_dir, ignore_errors=True)
    checks: list[tuple[str, Callable[[], bool]]] = [
        ("async-single >= 150,000 msg/s", lambda: rates["async-single"] >= 150_000),
        ("async-single >= 150,000 msg/s in its best stretch", lambda: best["async-single"] >= 150_000),
        ("async-batch32 >= 150,000 msg/s", lambda: rates["async-batch32"] >= 150_000),
        (
            "sync-single-64w >= 10x sync-single-1w",
            lambda: rates["sync-single-64w"] >= 10 * rates["sync-single-1w"],
        ),
    ]
    for label, check in checks:
        try:
            print(f"target {label}: {'met' if check() else 'NOT met'}")
        except KeyError:
            pass
    return 0


if __name__ == "__main__":
    if "--loop" in sys.argv and sys.argv[sys.argv.index("--loop") + 1 :][:1] == ["asyncio"]:
        sys.exit(asyncio.run(main()))
    try:
        import uvloop
    except ImportError:
        sys.exit(asyncio.run(main()))
    sys.exit(uvloop.run(main()))
