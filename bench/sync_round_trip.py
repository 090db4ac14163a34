"""What one sync send (one message in flight) costs each process beyond the work: CPU, context switches
per thread, and (with --strace) system calls, per message.

    .venv/bin/python bench/sync_round_trip.py                       # throw-away NameServer + broker, 3000 sends
    .venv/bin/python bench/sync_round_trip.py --flush SYNC_FLUSH
    .venv/bin/python bench/sync_round_trip.py --perf                # system calls and wake-ups per message
    .venv/bin/python bench/sync_round_trip.py --strace broker       # strace -c -f on the broker (or client)
    ROCKETQ_NO_EXTENSIONS=1 .venv/bin/python bench/sync_round_trip.py

The producer awaits each Producer.send before the next (what the peers harness' sync phase does). CPU is
read per thread from /proc/<pid>/task/<tid>/schedstat (nanoseconds on a CPU, not 10 ms ticks), context
switches from each thread's status; both are differences over the measured sends, divided by their count.
A thread that does not wake per message shows ~0 switches; one that does shows ~1 or more. `--perf`
counts system calls, context switches and wake-ups of both processes with `perf stat` on kernel trace
points, which costs the processes next to nothing; `--strace` gives every system call but stops the
traced process at each one: its CPU and msg/s figures are then inflated, read only its counts.
The floor to compare with is bench/remoting.py's bare uvloop echo pair at one in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from rocketq.client import Admin, Message, Producer
from rocketq.remoting.transport.loops import loop_factory
from rocketq.testing.cluster import LocalCluster

TOPIC = "bench_sync_round_trip"
PERF_EVENTS = [
    "syscalls:sys_enter_read", "syscalls:sys_enter_write", "syscalls:sys_enter_epoll_pwait",
    "syscalls:sys_enter_epoll_wait", "syscalls:sys_enter_futex", "syscalls:sys_enter_getpid",
    "syscalls:sys_enter_msync", "syscalls:sys_enter_fdatasync", "raw_syscalls:sys_enter",
    "sched:sched_switch", "sched:sched_wakeup",
]  # fmt: skip


def threads(pid: int) -> dict[int, tuple[str, int, int, int]]:
    """tid -> (name, ns on a CPU, voluntary switches, involuntary switches) of every thread of `pid`."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            run_ns = int((task / "schedstat").read_text().split()[0])
            vol = invol = 0
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    vol = int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    invol = int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended while we read
        out[int(task.name)] = (name, run_ns, vol, invol)
    return out


def report(what: str, before: dict, after: dict, count: int) -> None:
    total_ns = total_vol = total_invol = 0
    rows = []
    for tid, (name, ns, vol, invol) in after.items():
        _, ns0, vol0, invol0 = before.get(tid, (name, 0, 0, 0))
        d_ns, d_vol, d_invol = ns - ns0, vol - vol0, invol - invol0
        total_ns, total_vol, total_invol = total_ns + d_ns, total_vol + d_vol, total_invol + d_invol
        if d_ns or d_vol or d_invol:
            rows.append((d_ns, f"  {name:<20} tid {tid:<8} cpu {d_ns / count / 1e3:7.2f} us  "
                               f"vol {d_vol / count:6.3f}  invol {d_invol / count:6.3f}"))  # fmt: skip
    print(f"{what}: cpu {total_ns / count / 1e3:.2f} us/msg, voluntary switches {total_vol / count:.3f}/msg, "
          f"involuntary {total_invol / count:.3f}/msg")  # fmt: skip
    for _, row in sorted(rows, reverse=True):
        print(row)


def start_tracers(
    args: argparse.Namespace, broker_pid: int, tmp: Path
) -> list[tuple[str, subprocess.Popen[bytes], Path]]:
    """perf stat on both processes (--perf), strace -c on one (--strace): (what, process, output file)."""
    tracers = []
    if args.perf:
        for side, pid in (("broker", broker_pid), ("client", os.getpid())):
            out = tmp / f"perf-{side}.csv"
            command = ["perf", "stat", "-x,", "-o", str(out), "-e", ",".join(PERF_EVENTS), "-p", str(pid)]
            tracers.append((f"perf {side}", subprocess.Popen(command), out))  # fmt: skip
    if args.strace:
        pid = broker_pid if args.strace == "broker" else os.getpid()
        out = tmp / "strace.txt"
        command = ["strace", "-c", "-f", "-p", str(pid), "-o", str(out)]
        tracers.append((f"strace {args.strace}", subprocess.Popen(command), out))
    return tracers


def print_counts(what: str, text: str, count: int) -> None:
    if what.startswith("strace"):
        print(f"{what} -c -f (calls over {count} sends and ~1 s idle before them):")
        print(text)
        return
    print(f"{what}, per message (perf stat over the sends and ~1 s idle before them):")
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[0].strip().isdigit():
            print(f"  {fields[2]:<32} {int(fields[0]) / count:8.3f}")


async def main(args: argparse.Namespace) -> None:
    overrides = {"flushDiskType": args.flush}
    with tempfile.TemporaryDirectory(prefix="rocketq-bench-") as tmp:
        async with LocalCluster(tmp, broker_overrides=overrides) as cluster:
            broker_pid = cluster.brokers[0].pid
            print(f"broker pid {broker_pid}, client pid {os.getpid()}", flush=True)  # for py-spy / perf
            async with Admin(namesrv_addr=cluster.namesrv_addr) as admin:
                await admin.create_topic(TOPIC, read_queues=4, write_queues=4)
            async with Producer("bench_sync_round_trip", namesrv_addr=cluster.namesrv_addr) as producer:
                body = b"x" * args.size
                for _ in range(args.warmup):
                    await producer.send(Message(TOPIC, body))
                me = os.getpid()
                i0 = threads(broker_pid)
                await asyncio.sleep(args.idle)  # what the broker spends without any request
                i1 = threads(broker_pid)
                idle_ns = sum(t[1] for t in i1.values()) - sum(t[1] for t in i0.values())
                idle_us = idle_ns / 1e3 / args.idle if args.idle else 0.0
                tracers = start_tracers(args, broker_pid, Path(tmp))
                if tracers:
                    await asyncio.sleep(1.0)  # attached to every thread
                b0, c0 = threads(broker_pid), threads(me)
                started = time.perf_counter()
                for _ in range(args.count):
                    await producer.send(Message(TOPIC, body))
                elapsed = time.perf_counter() - started
                b1, c1 = threads(broker_pid), threads(me)
                for _what, proc, _out in tracers:
                    proc.send_signal(signal.SIGINT)  # both print their counts when interrupted
                    proc.wait(30)
                print(f"{args.count} sync sends, {args.count / elapsed:,.0f} msg/s, flush {args.flush}, "
                      f"extensions {'off' if os.environ.get('ROCKETQ_NO_EXTENSIONS') else 'on'}, "
                      f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
                print(f"broker idle: cpu {idle_us:.0f} us per second over {args.idle} s without requests, "
                      f"{idle_us * elapsed / args.count:.2f} us per message at this rate")  # fmt: skip
                report("broker", b0, b1, args.count)
                report("client", c0, c1, args.count)
                for what, _proc, out in tracers:
                    print_counts(what, out.read_text(), args.count)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=3000, help="measured sends")
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--size", type=int, default=1024, help="body bytes")
    p.add_argument("--flush", choices=["ASYNC_FLUSH", "SYNC_FLUSH"], default="ASYNC_FLUSH")
    p.add_argument("--idle", type=float, default=2.0, help="seconds of the broker's idle CPU measured first")
    p.add_argument("--perf", action="store_true", help="count system calls and wake-ups with perf stat")
    p.add_argument("--strace", choices=["broker", "client"], help="count system calls of one side")
    p.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    args = p.parse_args()
    with asyncio.Runner(loop_factory=loop_factory(args.loop)) as runner:
        runner.run(main(args))
