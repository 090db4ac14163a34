"""The broker's pipelined send path over a real socket: CPU of the serving process per SEND_MESSAGE_V2.

    .venv/bin/python bench/send_pipeline.py                      # runs on, then off, alternating
    .venv/bin/python bench/send_pipeline.py --flush SYNC_FLUSH   # group commit
    .venv/bin/python bench/send_pipeline.py --store warmMappedFileEnable=false
    ROCKETQ_NO_EXTENSIONS=1 .venv/bin/python bench/send_pipeline.py
    .venv/bin/python bench/send_pipeline.py --mode runs --threads  # runs only, each thread's CPU too

What bench/send_path.py leaves out is measured here too: the read, the frame decoder, the dispatcher
(with its runs: consecutive sends of one read taken together, rocketq.remoting.transport.dispatch) and
the write. This process serves a RemotingServer with the broker's SendMessageProcessor over a real
MessageStore (a real broker's, built but not started on a temporary store: bench/inprocess_broker.py);
a client subprocess writes prebuilt msgpack-headed SEND_MESSAGE_V2 frames (1 KiB bodies) with
--inflight unanswered and counts the answers. The figure is this process's CPU (every thread: the
loop, the flush and the allocator) per message, per round; rounds alternate runs on and off (off: the
registry's batchable codes emptied, every request dispatched alone), median of each.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from typing import Any

BODY = b"x" * 1024


def frames(count: int) -> bytes:
    from send_path import send_header

    from rocketq.remoting.protocol.codes import SerializeType
    from rocketq.remoting.protocol.command import RemotingCommand
    from rocketq.remoting.protocol.frame import encode_frame

    out = []
    for i in range(count):
        cmd = RemotingCommand.request(310, send_header(i), BODY, serialize_type=SerializeType.MSGPACK)
        cmd.opaque = i + 1
        out.append(encode_frame(cmd))
    return b"".join(out)


def client(port: int, count: int, inflight: int) -> None:
    """Send `count` frames with at most `inflight` unanswered, each round when told (a line on stdin)."""
    data = frames(count)
    offsets = [0]
    pos = 0
    while pos < len(data):
        pos += 4 + struct.unpack_from(">i", data, pos)[0]
        offsets.append(pos)
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _line in sys.stdin:
        sent = answered = 0
        buf = bytearray()
        while answered < count:
            if sent < count and sent - answered < inflight:
                upto = min(count, answered + inflight)
                sock.sendall(memoryview(data)[offsets[sent] : offsets[upto]])
                sent = upto
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise SystemExit("the server closed the connection")
            buf += chunk
            at = 0
            while len(buf) - at >= 4:
                length = struct.unpack_from(">i", buf, at)[0]
                if len(buf) - at < 4 + length:
                    break
                at += 4 + length
                answered += 1
            del buf[:at]
        print("done", flush=True)


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def thread_cpu_s() -> dict[str, float]:
    """CPU seconds of each live Python thread by name (the loop, the flush thread, the allocator...)."""
    out: dict[str, float] = {}
    for thread in threading.enumerate():
        try:
            clock = time.pthread_getcpuclockid(thread.ident or 0)
            out[thread.name] = out.get(thread.name, 0.0) + time.clock_gettime(clock)
        except (OSError, ValueError):
            continue  # ended meanwhile
    return out


async def serve(args: argparse.Namespace) -> None:
    from inprocess_broker import unstarted_broker

    settings = {"flushDiskType": args.flush}
    settings.update(item.split("=", 1) for item in args.store)
    async with unstarted_broker(settings) as broker:
        await measure(args, broker.processors["send"])


async def measure(args: argparse.Namespace, processor: Any) -> None:
    from rocketq.remoting.protocol.codes import RequestCode
    from rocketq.remoting.transport import Executor, RemotingServer, ServerConfig

    server = RemotingServer(ServerConfig.model_validate({"listenPort": 0, "bindAddress": "127.0.0.1"}))
    executor = Executor("send", 256, 10_000)
    for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
        server.register_processor(code, processor, executor)
    batchable = dict(server.registry.batchable)
    await server.start()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--client", str(server.port), "--count", str(args.count),
        "--inflight", str(args.inflight),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    figures: dict[str, list[float]] = {"runs": [], "alone": []}
    try:
        modes = ("alone", "runs") if args.mode == "both" else (args.mode,)
        for i in range(args.rounds * len(modes) + 1):
            mode = modes[i % len(modes)] if len(modes) == 1 else ("runs" if i % 2 else "alone")
            server.registry.batchable.clear()
            if mode == "runs":
                server.registry.batchable.update(batchable)
            t0, c0, threads0 = time.perf_counter(), cpu_s(), thread_cpu_s()
            proc.stdin.write(b"go\n")
            await proc.stdin.drain()
            line = await proc.stdout.readline()
            if line.strip() != b"done":
                raise SystemExit(f"the client failed: {line!r}")
            if i:  # the first round warms up (the allocator's first windows, the caches)
                figures[mode].append(1e6 * (cpu_s() - c0) / args.count)
                wall = time.perf_counter() - t0
                print(f"{mode:5}: {figures[mode][-1]:6.2f} us CPU per send, {args.count / wall:8.0f} msg/s")
                if args.threads:
                    spent = {n: c - threads0.get(n, 0.0) for n, c in thread_cpu_s().items()}
                    print("       " + ", ".join(
                        f"{n} {1e6 * c / args.count:.2f}" for n, c in sorted(spent.items(), key=lambda kv: -kv[1]) if c > 0
                    ))  # fmt: skip
    finally:
        proc.stdin.close()
        await proc.wait()
        await server.shutdown()
    load = os.getloadavg()[0]
    for mode, values in figures.items():
        if not values:
            continue
        print(
            f"{mode}: median {statistics.median(values):.2f} us CPU per send ({args.flush}, load {load:.1f})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20000, help="sends per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each mode")
    parser.add_argument("--inflight", type=int, default=256)
    parser.add_argument("--flush", default="ASYNC_FLUSH", choices=("ASYNC_FLUSH", "SYNC_FLUSH"))
    parser.add_argument(
        "--store", action="append", default=[], help="a store setting, key=value (repeatable)"
    )
    parser.add_argument("--threads", action="store_true", help="also each thread's CPU per send")
    parser.add_argument(
        "--mode",
        choices=("both", "runs", "alone"),
        default="both",
        help="rounds of one mode only (callgrind)",
    )
    parser.add_argument("--client", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client(args.client, args.count, args.inflight)
    else:
        try:
            import uvloop

            uvloop.run(serve(args))
        except ImportError:
            asyncio.run(serve(args))
