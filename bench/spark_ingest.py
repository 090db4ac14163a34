"""Ingest rate of the rocketq Spark data source: batch (spark.read) and streaming (readStream, AvailableNow).

    .venv/bin/python bench/spark_ingest.py                                  # 100,000 x 1 KiB, 8 queues
    .venv/bin/python bench/spark_ingest.py --messages 20000 --queues 4 --runs 1
    .venv/bin/python bench/spark_ingest.py --namesrv 127.0.0.1:9876 --topic T   # an existing cluster
    .venv/bin/python bench/spark_ingest.py --modes plain,batch --jfr /tmp/read.jfr  # + Spark's JVM profiled

Starts a throw-away NameServer and broker (subprocesses, temporary store) unless --namesrv is given,
fills a topic with --messages messages of --body-size bytes (batch sends), then reads the whole topic
with Spark (local[2] by default) into the `noop` sink, which makes Spark fetch and convert every row
and keep none: batch (`spark.read...write.format("noop")`) and streaming (`readStream`, AvailableNow,
a fresh checkpoint each run). Two warm-up reads (an empty one, then the whole topic) start the Python
workers first, and --warm-up-rounds rounds of every mode (default 1, not counted, their times printed)
let Spark's JVM compile its read and write paths: Spark's JIT compiler threads were measured to take
more CPU than its task threads in a session's first batch read (--phases shows it). The figure is messages / wall-clock second of each job (session start
excluded); the best of --runs rounds, each round running every mode once in turn (plain, Spark batch,
Spark streaming, ...) so that a change of load touches them all alike.

The reference ("plain") reads the same messages with the project's own pull client in plain Python
(one process, rocketq.spark.client.SyncClient.read_range over every queue, no Spark) and reads every
column the Spark source outputs (topic, broker, queue id and offset, msg id, tags, keys, the property
map, the body, both timestamps) into a tuple per message: the same data as a Spark row. "plain-lazy"
only counts the pulled messages (their fields are decoded on first read, so it decodes none): the
bound of the pulls alone. Spark reads with maxPartitions = the cores of a local[N] master (one task
per core: each task costs Spark a fixed ~30 ms of JVM CPU and a start and an end of its own, and one
wave of tasks was faster than two in A/B rounds on a quiet machine, docs/spark.md)
(--max-partitions; 0 = one partition per queue, the Kafka source's layout, shown as batch/queue),
and again with each maxPartitions of --other-partitions (default: 0, batch/queue, and twice the
cores, two tasks per core, the free core taking the next task when the other is held by other work,
which the benchmark read with before). The CPU each mode
costs per row is read from /proc by kind of process (this driver process, Spark's JVM, the Python
processes the JVM starts, the broker); a streaming run also prints Spark's own progress: how long
after start() its first trigger began, each trigger's durationMs and processedRowsPerSecond.

A streaming query's wall time from start() includes its start-up (Spark starts a Python process for
the query's stream reader, which imports pyspark before the first trigger), which a running stream pays
once: "streaming/N" reads the same messages in triggers of N rows (maxOffsetsPerTrigger, AvailableNow;
--rows-per-trigger, a comma list, default a fifth of the messages) and also prints its steady rate, the rows of the
triggers after the first over the time from the second trigger's start to the last one's end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import spark_jfr
from pyspark.sql import SparkSession

from rocketq.client.blocking import Admin, Message, Producer
from rocketq.spark.client import SyncClient
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.procinfo import children_of, process_cpu_seconds


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument("--body-size", type=int, default=1024)
    p.add_argument("--queues", type=int, default=8)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--namesrv", help="use this cluster instead of starting one")
    p.add_argument("--topic", default="SparkIngestBench")
    p.add_argument("--no-fill", action="store_true", help="read what the topic holds, send nothing")
    p.add_argument("--pull-batch-size", default="32")
    p.add_argument(
        "--max-partitions", type=int, help="the source's maxPartitions (default: N of local[N]; 0 = none)"
    )
    p.add_argument(
        "--other-partitions",
        type=lambda v: [int(x) for x in v.split(",") if x],
        help="comma list: batch reads with these maxPartitions too (0 = one partition per queue: batch/queue; "
        "default: 0 and 2N of local[N])",
    )
    p.add_argument(
        "--modes",
        type=lambda v: v.split(","),
        help="comma list: only these modes (plain always runs: the baseline)",
    )
    p.add_argument(
        "--rows-per-trigger",
        type=lambda v: [int(x) for x in v.split(",") if x],
        help="comma list: also a streaming run in triggers of each many rows (maxOffsetsPerTrigger), shown as "
        "streaming/N with its steady rate: the triggers after the first (default: a fifth of the messages; 0 = none)",
    )
    p.add_argument(
        "--warm-up-rounds",
        type=int,
        default=1,
        help="rounds of every mode before the measured ones (not counted; their times are printed)",
    )
    p.add_argument(
        "--jvm-options",
        default="",
        help="more options for Spark's JVM, e.g. -XX:TieredStopAtLevel=1 (C1 only: less JIT CPU in a short session)",
    )
    p.add_argument(
        "--jfr",
        metavar="FILE",
        help="record Spark's JVM over the counted rounds with the JDK Flight Recorder into FILE and print "
        "where its executor task threads spent their samples, the JIT's and GC's work (bench/spark_jfr.py)",
    )
    p.add_argument(
        "--phases",
        action="store_true",
        help="log Spark's events and print where each Spark run's wall time went (planning, tasks, after)",
    )
    return p.parse_args()


def fill(namesrv: str, topic: str, count: int, body_size: int, queues: int) -> None:
    with Admin(namesrv_addr=namesrv) as admin:
        admin.create_topic(topic, read_queues=queues, write_queues=queues)
    body = b"x" * body_size
    started = time.monotonic()
    with Producer("spark-bench-producer", namesrv_addr=namesrv) as producer:
        for first in range(0, count, 32):
            producer.send_batch(
                [
                    Message(topic, body, tags="bench", keys=f"k{i}")
                    for i in range(first, min(first + 32, count))
                ]
            )
    print(f"filled {topic}: {count} x {body_size} B in {time.monotonic() - started:.1f} s", file=sys.stderr)


def session(master: str, event_log: str | None = None, jvm_options: str = "") -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder
    if event_log:  # --phases: Spark's own record of each job and task (SparkListener events as JSON lines)
        builder = builder.config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", event_log)
        builder = builder.config("spark.eventLog.compress", "false")  # (Spark 4 compresses by default)
    spark = (
        builder.master(master)
        .appName("rocketq-spark-ingest-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", f"-XX:+UseSerialGC {jvm_options}".strip())
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def reader(
    spark: SparkSession,
    args: argparse.Namespace,
    streaming: bool,
    *,
    max_partitions: int | None = None,
    rows_per_trigger: int = 0,
) -> Any:
    source = spark.readStream if streaming else spark.read
    source = source.format("rocketq").option("namesrv", args.namesrv).option("topic", args.topic)
    packed = args.max_partitions if max_partitions is None else max_partitions
    if packed:
        source = source.option("maxPartitions", str(packed))
    if rows_per_trigger:
        source = source.option("maxOffsetsPerTrigger", str(rows_per_trigger))
    return source.option("pullBatchSize", args.pull_batch_size).load()


KINDS = ("driver", "python", "jvm", "broker")


def cpu_by_kind() -> dict[str, float]:
    """CPU seconds used so far by kind of process: this one (the driver's Python side, and the plain
    reads), Spark's JVM, the Python processes the JVM starts (executor workers, the stream reader's
    runner; those already gone through their parent's reaped time) and the daemons started here.

    A worker forked by PySpark's daemon that ends (Spark stops workers idle for a minute) is counted
    nowhere once gone: the daemon ignores SIGCHLD, so the kernel adds no child time to it. A mode
    during which such a worker ends shows its whole past CPU as a negative Python figure."""
    me = os.getpid()
    out = dict.fromkeys(KINDS, 0.0)
    out["driver"] = process_cpu_seconds(me)[0]
    children = children_of()
    todo = [(pid, "") for pid in children.get(me, [])]
    while todo:
        pid, kind = todo.pop()
        try:
            own, reaped = process_cpu_seconds(pid)
            java = Path(f"/proc/{pid}/comm").read_text().strip() == "java"
        except OSError:
            continue  # ended while we looked: its parent's reaped time has it next time
        if not kind:  # a child of this process: Spark's JVM or a daemon of the cluster
            kind = "jvm" if java else "broker"
        if kind == "jvm":
            out["jvm"] += own
            out["python"] += reaped
            kind = "python"  # what the JVM starts
        else:
            out[kind] += own + reaped
        todo.extend((child, kind) for child in children.get(pid, []))
    return out


# Each streaming run's mode, Spark progress reports, and its start -> first trigger -> end times (s).
STREAM_PROGRESS: list[tuple[str, list[dict[str, Any]], float, float]] = []


def batch_run(spark: SparkSession, args: argparse.Namespace) -> float:
    started = time.monotonic()
    reader(spark, args, False).write.format("noop").mode("overwrite").save()
    return time.monotonic() - started


def batch_partitions_run(max_partitions: int) -> Callable[[SparkSession, argparse.Namespace], float]:
    """A batch read with another maxPartitions (0: one partition per queue, the Kafka source's layout)."""

    def run(spark: SparkSession, args: argparse.Namespace) -> float:
        started = time.monotonic()
        reader(spark, args, False, max_partitions=max_partitions).write.format("noop").mode(
            "overwrite"
        ).save()
        return time.monotonic() - started

    return run


def stream_run(spark: SparkSession, args: argparse.Namespace, rows_per_trigger: int = 0) -> float:
    with tempfile.TemporaryDirectory() as checkpoint:
        started = time.time()
        query = (
            reader(spark, args, True, rows_per_trigger=rows_per_trigger)
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        elapsed = time.time() - started
        progress = [p for p in query.recentProgress if p["numInputRows"]]
        rows = sum(p["numInputRows"] for p in progress)
    if rows != args.messages:
        raise SystemExit(f"the streaming run read {rows} rows, expected {args.messages}")
    # Spark's own account of the query (what its UI and lastProgress show a streaming user): each
    # trigger's durationMs and processedRowsPerSecond, and when the first trigger began after start().
    first = _epoch(progress[0])
    mode = f"streaming/{rows_per_trigger}" if rows_per_trigger else "streaming"
    STREAM_PROGRESS.append((mode, progress, first - started, elapsed))
    return elapsed


def triggers_run(rows_per_trigger: int) -> Callable[[SparkSession, argparse.Namespace], float]:
    """A streaming run in triggers of `rows_per_trigger` rows (maxOffsetsPerTrigger with AvailableNow)."""

    def run(spark: SparkSession, args: argparse.Namespace) -> float:
        return stream_run(spark, args, rows_per_trigger)

    return run


def _epoch(progress: dict[str, Any]) -> float:
    """When a trigger began (its progress report's timestamp), in seconds since the epoch."""
    return datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()


def stream_progress_lines(baseline: float) -> list[str]:
    """Per streaming run: the time before the first trigger, the triggers (Spark's processedRowsPerSecond
    over them, as a ratio of the plain read), the time after them, and each trigger's phases."""
    lines = []
    for i, (mode, progress, before, elapsed) in enumerate(STREAM_PROGRESS):
        rows = sum(p["numInputRows"] for p in progress)
        trigger_s = sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000
        rate = rows / trigger_s
        spark_rates = ", ".join(f"{p['processedRowsPerSecond']:,.0f}" for p in progress)
        lines.append(
            f"{mode} run {i + 1}: start() -> first trigger {before:.2f} s, {len(progress)} trigger(s) "
            f"{trigger_s:.2f} s = {rate:,.0f} rows/s (Spark's processedRowsPerSecond "
            f"{spark_rates}) = {rate / baseline:.2f}x plain, "
            f"then {elapsed - before - trigger_s:.2f} s to the end of awaitTermination(); wall {elapsed:.2f} s"
        )
        if len(progress) > 1:
            # The steady rate: the rows of the triggers after the first over the time from the second
            # trigger's start to the last one's end (the gaps between triggers included), what a running
            # stream sees once its start-up (the query's Python process, the first plan) is paid.
            rest = progress[1:]
            span = _epoch(rest[-1]) + rest[-1]["durationMs"]["triggerExecution"] / 1000 - _epoch(rest[0])
            steady = sum(p["numInputRows"] for p in rest) / span
            lines.append(
                f"  steady (triggers 2-{len(progress)}): {sum(p['numInputRows'] for p in rest)} rows in "
                f"{span:.2f} s = {steady:,.0f} rows/s = {steady / baseline:.2f}x plain"
            )
        lines.extend(f"  trigger {p['batchId']} durationMs: {p['durationMs']}" for p in progress)
    return lines


def plain_run(spark: SparkSession, args: argparse.Namespace, *, columns: bool = True) -> float:
    """The reference: every queue read with the pull client in this process, every column of each
    message read into a tuple (columns=False: the messages only counted, no field decoded)."""
    started = time.monotonic()
    rows = 0
    with SyncClient(args.namesrv) as client:
        routes = client.routes(args.topic)
        for route, (low, high) in zip(routes, client.bounds(routes), strict=True):
            for msgs in client.read_range(route, low, high, batch=int(args.pull_batch_size)):
                if columns:
                    for m in msgs:
                        props = m.properties
                        row = (m.topic, m.broker_name, m.queue_id, m.queue_offset, m.msg_id, props.get("TAGS"),
                               props.get("KEYS"), props, m.body, m.born_timestamp, m.store_timestamp)  # fmt: skip
                        rows += len(row) > 0
                else:
                    rows += len(msgs)
    if rows != args.messages:
        raise SystemExit(f"the plain pull read {rows} rows, expected {args.messages}")
    return time.monotonic() - started


def plain_lazy_run(spark: SparkSession, args: argparse.Namespace) -> float:
    return plain_run(spark, args, columns=False)


def partitions_of(mode: str, default: int) -> str:
    """The maxPartitions a mode reads with, for its line of output."""
    if mode == "batch" or mode.startswith("streaming"):
        return str(default or "-")
    return mode.removeprefix("batch/") if mode.startswith("batch/") and mode != "batch/queue" else "-"


def measure(args: argparse.Namespace) -> None:
    cores = args.master.removeprefix("local[").removesuffix("]")
    if args.max_partitions is None:
        args.max_partitions = int(cores) if cores.isdigit() else 0
    if args.other_partitions is None:
        args.other_partitions = [0, 2 * int(cores)] if cores.isdigit() else [0]
    if not args.no_fill:
        fill(args.namesrv, args.topic, args.messages, args.body_size, args.queues)
    args.event_log = tempfile.mkdtemp(prefix="spark-events-") if args.phases else None
    settings = spark_jfr.jfc_file() if args.jfr else None
    jvm_options = f"{args.jvm_options} {spark_jfr.jvm_option(settings)}" if settings else args.jvm_options
    spark = session(args.master, args.event_log, jvm_options)
    if settings:
        settings.unlink()  # (read at the JVM's start)
    try:
        warm = spark.read.format("rocketq").option("namesrv", args.namesrv).option("topic", args.topic)
        warm.option("endingOffsets", "0").load().count()  # starts the Python workers, no rows
        count = reader(spark, args, False).count()
        if count != args.messages and not args.no_fill:
            raise SystemExit(f"the topic holds {count} messages, expected {args.messages}")
        args.messages = count
        modes: list[tuple[str, Callable[[SparkSession, argparse.Namespace], float]]] = [
            ("plain", plain_run),
            ("plain-lazy", plain_lazy_run),
            ("batch", batch_run),
        ]
        for other in args.other_partitions:
            if other != args.max_partitions:
                modes.append(("batch/queue" if other == 0 else f"batch/{other}", batch_partitions_run(other)))
        modes.append(("streaming", stream_run))
        if args.rows_per_trigger is None:
            args.rows_per_trigger = [-(-args.messages // 5)]
        modes.extend((f"streaming/{n}", triggers_run(n)) for n in args.rows_per_trigger if n)
        if args.modes:
            modes = [(name, run) for name, run in modes if name in args.modes or name == "plain"]
        times: dict[str, list[float]] = {name: [] for name, _run in modes}
        cpu: dict[str, list[dict[str, float]]] = {name: [] for name, _run in modes}
        for _round in range(args.warm_up_rounds):
            warm_up = [f"{name} {run(spark, args):.2f} s" for name, run in modes]
            print("warm-up round (not counted): " + ", ".join(warm_up))
        STREAM_PROGRESS.clear()
        counted_from = time.time()
        loads = [os.getloadavg()]
        for _round in range(args.runs):
            for name, run in modes:
                before = cpu_by_kind()
                threads = jvm_threads_cpu() if args.event_log else {}
                started = time.time()
                times[name].append(run(spark, args))
                WINDOWS.append((name, started * 1000, time.time() * 1000))
                if args.event_log:
                    JVM_THREADS.append((name, diff(jvm_threads_cpu(), threads)))
                after = cpu_by_kind()
                cpu[name].append({k: after[k] - before[k] for k in KINDS})
            loads.append(os.getloadavg())
        counted = (counted_from, time.time())
        if args.jfr:
            spark_jfr.dump(spark_jvm_pid(), args.jfr, *counted)
        baseline = args.messages / min(times["plain"])
        for name, _run in modes:
            best = min(times[name])
            rate = args.messages / best
            print(
                f"{name:11s} {args.messages} msgs x {args.body_size} B, {args.queues} queues, {args.master}, "
                f"maxPartitions {partitions_of(name, args.max_partitions)}: "
                f"best {rate:,.0f} msg/s = {rate / baseline:.2f}x plain ({best:.2f} s; "
                f"runs {', '.join(f'{t:.2f}' for t in times[name])} s)"
            )
        print("CPU us per row by process kind, median of the runs (driver = this process: Spark's driver")
        print("side and the plain reads; python = executor workers and the stream reader's runner):")
        for name, _run in modes:
            med = {k: statistics.median(c[k] for c in cpu[name]) * 1e6 / args.messages for k in KINDS}
            print(
                f"  {name:11s} "
                + ", ".join(f"{k} {med[k]:.1f}" for k in KINDS)
                + f", total {sum(med.values()):.1f}"
            )
        for line in stream_progress_lines(baseline):
            print(line)
        print(
            "load average (1, 5, 15 min) at the start and after each round: "
            + "; ".join(f"{a:.2f} {b:.2f} {c:.2f}" for a, b, c in loads)
        )
    finally:
        spark.stop()
    if args.event_log:
        for line in phase_lines(args.event_log):
            print(line)
        shutil.rmtree(args.event_log)
    if args.jfr:
        for line in spark_jfr.summary(args.jfr, *counted):
            print(line)


# Each run of a mode: its name and its start and end (epoch ms), for --phases.
WINDOWS: list[tuple[str, float, float]] = []
# Each run of a mode: its name and the CPU seconds of Spark's JVM by kind of thread, for --phases.
JVM_THREADS: list[tuple[str, dict[str, float]]] = []


def spark_jvm_pid() -> int:
    """Spark's JVM: the java child of this process."""
    for pid in children_of().get(os.getpid(), []):
        if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
            return pid
    raise SystemExit("no java child process: is Spark's session running?")


def jvm_threads_cpu() -> dict[str, float]:
    """CPU seconds of Spark's JVM (the java child of this process) by thread name, digits dropped (a task's
    thread is "Executor task launch worker for task 3.0 in stage 7.0": one kind for every task)."""
    out: dict[str, float] = {}
    for pid in [spark_jvm_pid()]:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                name = (task / "comm").read_text().strip()
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended while we looked
            kind = "".join(c for c in name if not c.isdigit()).strip(" -#.")
            out[kind] = out.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def diff(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}


def phase_lines(event_log: str) -> list[str]:
    """Where each Spark run's wall time went, from Spark's event log: before its first job was
    submitted (the query's analysis and planning, which for a Python data source includes its Python
    planner's calls), its jobs (first submission to last completion) and what followed them; and the
    tasks' own metrics summed (launch to finish, executorRunTime, executorCpuTime, deserialisation, GC)."""
    # Spark 4 writes an event log as a directory of parts (eventlog_v2_<app>/events_<n>_<app>).
    files = sorted(f for f in Path(event_log).rglob("events*") if f.is_file())
    events = [json.loads(line) for f in files for line in f.open()]
    jobs = [(e["Submission Time"], "start") for e in events if e["Event"] == "SparkListenerJobStart"]
    jobs += [(e["Completion Time"], "end") for e in events if e["Event"] == "SparkListenerJobEnd"]
    tasks = [(e["Task Info"], e["Task Metrics"]) for e in events if e["Event"] == "SparkListenerTaskEnd"]
    lines = ["Spark's event log per run (ms): before the first job | jobs | after | tasks: n, launch-to-finish, "
             "run, cpu, deserialize, gc (summed over tasks)"]  # fmt: skip
    for name, start, end in WINDOWS:
        if name.startswith("plain"):
            continue
        mine = sorted(t for t, _kind in jobs if start <= t <= end)
        if not mine:
            continue
        ts = [(i, m) for i, m in tasks if start <= i["Launch Time"] <= end and m]
        total = {k: sum(m.get(k, 0) for _i, m in ts) for k in
                 ("Executor Run Time", "Executor CPU Time", "Executor Deserialize Time", "JVM GC Time")}  # fmt: skip
        lines.append(
            f"  {name:11s} {mine[0] - start:6.0f} | {mine[-1] - mine[0]:6.0f} | {end - mine[-1]:5.0f} | "
            f"tasks {len(ts)}, {sum(i['Finish Time'] - i['Launch Time'] for i, _m in ts)}, "
            f"{total['Executor Run Time']}, {total['Executor CPU Time'] / 1e6:.0f}, "
            f"{total['Executor Deserialize Time']}, {total['JVM GC Time']}"
        )
    lines.append("Spark's JVM CPU per run by thread (ms; threads of ended tasks are not counted):")
    for name, threads in JVM_THREADS:
        if not name.startswith("plain"):
            top = sorted(threads.items(), key=lambda kv: -kv[1])[:6]
            lines.append(f"  {name:11s} " + ", ".join(f"{k} {v * 1000:.0f}" for k, v in top))
    return lines


def main() -> None:
    args = parse_args()
    if args.namesrv:
        measure(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(Path(tmp))
        asyncio.run(cluster.start())
        try:
            args.namesrv = cluster.namesrv_addr
            measure(args)
        finally:
            asyncio.run(cluster.close())


if __name__ == "__main__":
    main()
