"""Apache RocketMQ's own benchmark tools against rocketq's daemons and Apache's 4.9.7 daemons, in turn.

    make venv java bench-java
    .venv/bin/python bench/apache_benchmark.py --seconds 30 --cap 100000 --threads 16 --size 1024

rocketmq-example's org.apache.rocketmq.example.benchmark.Producer and Consumer (4.7.0: the last 4.x
rocketmq-example on Maven Central, run on its own classpath with its own rocketq-client 4.7.0, from
bench/apache_benchmark/pom.xml) are the load: the same workload against each broker, one after the other on
the same machine, `--rounds` times alternating. Per broker: a NameServer and a broker (rocketq's through
rocketq.testing's LocalCluster, Apache's from the 4.9.7 jars through tests/compat/apache_support.py with
BENCH_JVM_OPTIONS), both with 1 GiB commit-log files and ASYNC_FLUSH, a topic of 8 queues; then the
Producer (-w threads, -s body bytes) until `--cap` messages are stored or `--seconds` passed, then the
Consumer (a new group, from the first message) until it has pulled every stored message or
2 x `--seconds` passed. The tools run forever and print a "Send TPS" / "TPS" line every 10 s over the last
10 s; they are stopped by their pid (SIGTERM, then SIGKILL). The counts come from the broker's own counters
(GET_BROKER_RUNTIME_INFO msgPutTotalTodayNow / msgGetTotalTodayNow, polled every 0.5 s), the CPU from
/proc/<pid>/stat of the daemons' process trees (NameServer + broker) and of the tool's JVM. CPU per message
is the comparable figure on a shared machine; the load average is printed with the table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "compat"))
from apache_support import BENCH_JVM_OPTIONS, OPEN_JAVA_BASE, ApacheCluster, running  # noqa: E402
from interop import create_topic  # noqa: E402

from rocketq.client import Admin  # noqa: E402
from rocketq.testing.cluster import LocalCluster  # noqa: E402
from rocketq.testing.procinfo import tree_cpu_seconds  # noqa: E402

TOOLS_CLASSPATH = ROOT / "bench" / "apache_benchmark" / "target" / "classpath.txt"
# The tools' JVM: Apache's tools.sh asks for a 1 GiB heap, 512 MiB is plenty for a client; its Netty 4.0 needs the opens.
TOOL_JVM_OPTIONS = ["-Xms512m", "-Xmx512m", "-XX:+UseG1GC", *OPEN_JAVA_BASE]
# Not the tools' default BenchmarkTest: a system topic of 1024 queues on Apache's broker, refused by ours.
TOPIC, GROUP = "BenchTopic", "benchmark_consumer"
COMMIT_LOG_FILE_BYTES = 1 << 30  # Java's default, on both
SEND_LINE = re.compile(
    r"Send TPS: (\d+) Max RT: (\d+) Average RT:\s*([\d.]+) Send Failed: (\d+) Response Failed: (\d+)"
)
CONSUME_LINE = re.compile(
    r"TPS: (\d+) FAIL: (\d+) AVG\(B2C\) RT:\s*([\d.]+) AVG\(S2C\) RT:\s*([\d.]+) MAX\(B2C\) RT: (\d+)"
)


@dataclass
class Phase:
    """One tool run against one broker: the broker's count (all, and from the first one seen on over `seconds`),
    CPU, and the tool's own lines."""

    messages: int = 0
    timed_messages: int = 0
    seconds: float = 0.0
    server_cpu_s: float = 0.0
    tool_cpu_s: float = 0.0
    tool_lines: list[str] = field(default_factory=list)

    def rate(self) -> float:
        return self.timed_messages / self.seconds if self.seconds else 0.0

    def per_message_us(self, cpu_s: float) -> float:
        return cpu_s / self.messages * 1e6 if self.messages else float("nan")


class Tool:
    """One of Apache's benchmark tools as a JVM subprocess; its stdout read by a thread, stopped by its pid."""

    def __init__(self, main_class: str, args: list[str], log_path: Path) -> None:
        java = shutil.which("java")
        if java is None or not TOOLS_CLASSPATH.is_file():
            raise SystemExit(
                "needs java and the benchmark tools' jars: run `make bench-java` (bench/apache_benchmark/pom.xml)"
            )
        self.lines: list[str] = []
        home = f"-Duser.home={log_path.parent}"  # the client's own log goes under <user.home>/logs
        argv = [
            java,
            *TOOL_JVM_OPTIONS,
            home,
            "-cp",
            TOOLS_CLASSPATH.read_text(encoding="utf-8").strip(),
            main_class,
            *args,
        ]
        self.command = " ".join(
            [
                "java",
                *TOOL_JVM_OPTIONS,
                "-cp",
                "<bench/apache_benchmark/target/classpath.txt>",
                main_class,
                *args,
            ]
        )
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=log_path.parent,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, args=(log_path,), daemon=True)
        self._reader.start()

    def _read(self, log_path: Path) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout, open(log_path, "w", encoding="utf-8") as log:
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", errors="replace").rstrip()
                self.lines.append(line)
                log.write(line + "\n")

    def cpu_seconds(self) -> float:
        return tree_cpu_seconds(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._reader.join(timeout=5)


@dataclass
class Broker:
    """A running cluster: its NameServer address, broker address and daemon pids."""

    kind: str
    namesrv_addr: str
    broker_addr: str
    pids: list[int]

    def cpu_seconds(self) -> float:
        return sum(tree_cpu_seconds(pid) for pid in self.pids)


@contextlib.asynccontextmanager
async def started(kind: str, work: Path) -> AsyncIterator[Broker]:
    overrides = {"mappedFileSizeCommitLog": COMMIT_LOG_FILE_BYTES, "flushDiskType": "ASYNC_FLUSH"}
    if kind == "rocketq":
        async with LocalCluster(work, broker_overrides=overrides) as ours:
            yield Broker(kind, ours.namesrv_addr, ours.brokers[0].addr, [d.pid for d in ours.daemons])
        return
    cluster = ApacheCluster(work / "apache", work / "store", jvm_options=BENCH_JVM_OPTIONS, **overrides)
    async with running(cluster) as apache:
        assert apache.namesrv is not None and apache.broker is not None
        yield Broker(
            kind, apache.namesrv_addr, apache.broker_addr, [apache.namesrv.proc.pid, apache.broker.proc.pid]
        )


async def counter(admin: Admin, broker: Broker, key: str) -> int:
    return int((await admin.broker_status(broker.broker_addr)).get(key, "0"))


async def run_tool(
    admin: Admin, broker: Broker, tool: Tool, key: str, done: Callable[[int, float], bool]
) -> Phase:
    """Until `done(count, elapsed)`: the broker's `key` counter from the tool's first message on."""
    base = await counter(admin, broker, key)
    cpu0, started_at = broker.cpu_seconds(), time.monotonic()
    first: tuple[float, int] | None = None
    count = 0
    try:
        while not done(count, time.monotonic() - started_at):
            if tool.proc.poll() is not None:
                raise RuntimeError(
                    f"{tool.command} exited with {tool.proc.returncode}:\n" + "\n".join(tool.lines[-30:])
                )
            await asyncio.sleep(0.5)
            count = await counter(admin, broker, key) - base
            if first is None and count > 0:
                first = (time.monotonic(), count)
        tool_cpu = tool.cpu_seconds()
    finally:
        tool.stop()
    ended_at, server_cpu = time.monotonic(), broker.cpu_seconds() - cpu0
    count = await counter(admin, broker, key) - base
    if first is None:
        return Phase(tool_lines=list(tool.lines))
    return Phase(count, count - first[1], ended_at - first[0], server_cpu, tool_cpu, list(tool.lines))


async def bench_one(kind: str, args: argparse.Namespace, work: Path) -> tuple[Phase, Phase, list[str]]:
    async with started(kind, work) as broker, Admin(namesrv_addr=broker.namesrv_addr) as admin:
        await create_topic(broker.namesrv_addr, TOPIC, queues=8)
        common = ["-n", broker.namesrv_addr, "-t", TOPIC]
        producer = Tool(
            "org.apache.rocketmq.example.benchmark.Producer",
            [*common, "-w", str(args.threads), "-s", str(args.size)],
            work / "producer.log",
        )
        produced = await run_tool(
            admin, broker, producer, "msgPutTotalTodayNow", lambda n, t: n >= args.cap or t >= args.seconds
        )
        stored = await counter(admin, broker, "msgPutTotalTodayNow")
        consumer = Tool(
            "org.apache.rocketmq.example.benchmark.Consumer",
            [*common, "-g", GROUP, "-p", "false"],
            work / "consumer.log",
        )
        consumed = await run_tool(
            admin, broker, consumer, "msgGetTotalTodayNow", lambda n, t: n >= stored or t >= 2 * args.seconds
        )
        return produced, consumed, [producer.command, consumer.command]


def tool_figures(phase: Phase, pattern: re.Pattern[str]) -> str:
    """The tool's own windows: best TPS and the RT figures printed with it."""
    found = [m.groups() for m in map(pattern.search, phase.tool_lines) if m]
    if not found:
        return "-"
    best = max(found, key=lambda g: int(g[0]))
    if pattern is SEND_LINE:
        return f"{int(best[0]):,} TPS, avg RT {float(best[2]):.2f} ms, max {best[1]} ms, failed {best[3]}/{best[4]}"
    return f"{int(best[0]):,} TPS, avg B2C {float(best[2]):.0f} ms, S2C {float(best[3]):.0f} ms"


async def main(args: argparse.Namespace) -> None:
    results: dict[str, list[tuple[Phase, Phase]]] = {}
    commands: list[str] = []
    load_before = [f"{x:.2f}" for x in os.getloadavg()]
    for round_no in range(args.rounds):
        for kind in args.order if round_no % 2 == 0 else list(reversed(args.order)):
            with tempfile.TemporaryDirectory(prefix=f"apache-bench-{kind}-") as tmp:
                produced, consumed, commands = await bench_one(kind, args, Path(tmp))
            results.setdefault(kind, []).append((produced, consumed))
            print(
                f"round {round_no + 1} {kind}: produced {produced.messages} in {produced.seconds:.1f} s, "
                f"consumed {consumed.messages} in {consumed.seconds:.1f} s",
                flush=True,
            )
    load_after = [f"{x:.2f}" for x in os.getloadavg()]
    print(
        f"\nload average before {' '.join(load_before)}, after {' '.join(load_after)}; {os.cpu_count()} cores"
    )
    print("commands:", *commands, sep="\n  ")
    print(
        "\n| broker | round | send msg/s (broker count) | Producer's best line | server CPU us/msg send | Producer JVM CPU us/msg "
        "| consume msg/s (broker count) | Consumer's best line | server CPU us/msg consume | Consumer JVM CPU us/msg |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, rounds in results.items():
        for i, (p, c) in enumerate(rounds, 1):
            print(
                f"| {kind} | {i} | {p.rate():,.0f} ({p.messages:,} in {p.seconds:.1f} s) | {tool_figures(p, SEND_LINE)} "
                f"| {p.per_message_us(p.server_cpu_s):.0f} | {p.per_message_us(p.tool_cpu_s):.0f} "
                f"| {c.rate():,.0f} ({c.messages:,} in {c.seconds:.1f} s) | {tool_figures(c, CONSUME_LINE)} "
                f"| {c.per_message_us(c.server_cpu_s):.0f} | {c.per_message_us(c.tool_cpu_s):.0f} |"
            )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seconds", type=float, default=30.0, help="producer time bound (consumer: twice that)"
    )
    parser.add_argument(
        "--cap", type=int, default=100_000, help="producer stops once the broker stored this many"
    )
    parser.add_argument("--threads", type=int, default=16, help="the Producer's -w (sending threads)")
    parser.add_argument("--size", type=int, default=1024, help="the Producer's -s (body bytes)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds, alternating the order of the brokers")
    parser.add_argument("--order", nargs="+", default=["rocketq", "apache"], choices=["rocketq", "apache"])
    args = parser.parse_args()
    if not 1 <= args.rounds <= 4 or not 5 <= args.seconds <= 300 or not 1 <= args.cap <= 2_000_000:
        parser.error("bounded runs only: --rounds 1..4, --seconds 5..300, --cap 1..2000000")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
