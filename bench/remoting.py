"""Remoting round trips per second, against a bare uvloop echo server measured in the same run.

    .venv/bin/python bench/remoting.py                 # the full table (about a minute)
    .venv/bin/python bench/remoting.py --seconds 1 --loops uvloop --codecs msgpack
    .venv/bin/python bench/remoting.py --selectors 0,2 # compare selector-thread counts

Servers run in their own processes (so client and server do not share a core; `--pin` pins the
client to CPU 0 and the servers to CPU 1). A case is a closed loop of `inflight` concurrent callers,
each awaiting a request with a 1 KiB body answered with the same 1 KiB body, measured for
`--seconds` after a short warm-up. The baseline is a bare length-prefixed echo server on uvloop (an
asyncio.Protocol that cuts frames and writes each back) driven by an equally bare client over the
very same frame bytes. Baseline and rocketq rounds alternate and each keeps its best round, so that
load from other processes hits both alike. Ratio = rocketq / baseline. The CPU columns (client /
server CPU time per round trip, from the process clocks) are steadier than throughput on a busy
machine: use them to judge a change. Targets: uvloop + msgpack >= 0.5x the baseline at 1 in flight
and >= 0.3x at 256 in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import struct
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

BODY = b"x" * 1024
ECHO_CODE = 1000
_LEN = struct.Struct(">i")


# --- servers (run in a child process) -----------------------------------------------------------------
class _EchoServerProtocol(asyncio.Protocol):
    """Cut length-prefixed frames, write each back: the least a frame server can do."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos, end, out = 0, len(buf), []
        while end - pos >= 4:
            (n,) = _LEN.unpack_from(buf, pos)
            if end - pos - 4 < n:
                break
            out.append(bytes(buf[pos : pos + 4 + n]))
            pos += 4 + n
        del buf[:pos]
        for frame in out:
            self.transport.write(frame)


class _EchoProcessor:
    async def process_request(self, conn: Any, request: Any) -> Any:
        return request.make_response(0, body=request.body)


async def _serve(kind: str, selectors: int) -> None:
    loop = asyncio.get_running_loop()
    if kind == "echo":
        server = await loop.create_server(_EchoServerProtocol, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
    else:
        from rocketq.remoting.transport import RemotingServer, ServerConfig

        config = ServerConfig.model_validate({"listen_port": 0, "server_selector_threads": selectors})
        rserver = RemotingServer(config)
        rserver.register_processor(ECHO_CODE, _EchoProcessor())
        await rserver.start()
        port = rserver.port
    print(f"PORT {port}", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin


def _pin(cpu: int) -> None:
    """Keep this process on one CPU (client on 0, servers on 1) so the two never share a core."""
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {cpu})


def serve_main(kind: str, loop_name: str, selectors: int, pin: bool) -> None:
    from rocketq.remoting.transport.loops import run

    if pin:
        _pin(1)
    run(_serve(kind, selectors), loop_name)


class ServerProcess:
    def __init__(self, kind: str, loop_name: str, selectors: int = 0, pin: bool = False) -> None:
        cmd = [
            sys.executable,
            __file__,
            "--serve",
            kind,
            "--serve-loop",
            loop_name,
            "--serve-selectors",
            str(selectors),
        ]
        if pin:
            cmd.append("--pin")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"bench server did not start: {line!r}")
        self.port = int(line.split()[1])

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


# --- clients -------------------------------------------------------------------------------------------
class _EchoClientProtocol(asyncio.Protocol):
    """Bare client: frames out, frames back in order, one future per frame."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.waiters: deque[asyncio.Future[bytes]] = deque()
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos, end = 0, len(buf)
        while end - pos >= 4:
            (n,) = _LEN.unpack_from(buf, pos)
            if end - pos - 4 < n:
                break
            self.waiters.popleft().set_result(bytes(buf[pos + 4 : pos + 4 + n]))
            pos += 4 + n
        del buf[:pos]

    def call(self, frame: bytes) -> asyncio.Future[bytes]:
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        self.transport.write(frame)
        return fut


def _cpu_seconds(pid: int) -> float:
    """The server's CPU time in seconds, from its threads' run time in ns (schedstat, not 10 ms ticks)."""
    from rocketq.testing.procinfo import cpu_ns

    return cpu_ns(pid) / 1e9


@dataclass
class Sample:
    rps: float
    client_us: float  # client CPU per round trip
    server_us: float  # server CPU per round trip


async def _closed_loop(call: Any, inflight: int, seconds: float, server_pid: int) -> Sample:
    """`inflight` callers looping on `call()` for `seconds` (after a warm-up)."""
    loop = asyncio.get_running_loop()
    count = 0
    stop_at = 0.0

    async def caller() -> None:
        nonlocal count
        while loop.time() < stop_at:
            await call()
            count += 1

    stop_at = loop.time() + min(0.3, seconds / 3)  # warm-up
    await asyncio.gather(*(caller() for _ in range(inflight)))
    count = 0
    started = loop.time()
    cpu0, server_cpu0 = time.process_time(), _cpu_seconds(server_pid)
    stop_at = started + seconds
    await asyncio.gather(*(caller() for _ in range(inflight)))
    elapsed = loop.time() - started
    cpu, server_cpu = time.process_time() - cpu0, _cpu_seconds(server_pid) - server_cpu0
    return Sample(count / elapsed, cpu / count * 1e6, server_cpu / count * 1e6)


async def _bench_echo(server: ServerProcess, frame: bytes, inflight: int, seconds: float) -> Sample:
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_connection(_EchoClientProtocol, "127.0.0.1", server.port)
    try:
        return await _closed_loop(lambda: proto.call(frame), inflight, seconds, server.proc.pid)
    finally:
        transport.close()


async def _bench_rocketq(server: ServerProcess, serialize_type: int, inflight: int, seconds: float) -> Sample:
    from rocketq.remoting.protocol.command import RemotingCommand
    from rocketq.remoting.transport import RemotingClient

    client = RemotingClient()
    addr = f"127.0.0.1:{server.port}"

    def call() -> Any:
        cmd = RemotingCommand.request(
            ECHO_CODE, {"topic": "BenchmarkTest"}, BODY, serialize_type=serialize_type
        )
        return client.invoke_sync(addr, cmd, 10_000)

    try:
        await call()
        return await _closed_loop(call, inflight, seconds, server.proc.pid)
    finally:
        await client.shutdown()


def _request_frame(serialize_type: int) -> bytes:
    from rocketq.remoting.protocol.command import RemotingCommand
    from rocketq.remoting.protocol.frame import encode_frame

    cmd = RemotingCommand.request(ECHO_CODE, {"topic": "BenchmarkTest"}, BODY, serialize_type=serialize_type)
    return encode_frame(cmd)


def _run_client(coro_fn: Any, loop_name: str, *args: Any) -> Sample:
    from rocketq.remoting.transport.loops import run

    return run(coro_fn(*args), loop_name)


@dataclass
class Row:
    label: str
    inflight: int
    sample: Sample
    baseline: Sample


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="measured time per round (default 1)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds per case, best kept (default 3)"
    )
    parser.add_argument("--loops", default="uvloop,asyncio", help="loop implementations for rocketq")
    parser.add_argument("--codecs", default="msgpack,json", help="header codecs: msgpack, json, rocketmq")
    parser.add_argument("--inflight", default="1,256", help="concurrent callers")
    parser.add_argument("--selectors", default="0", help="server selector-thread counts to compare")
    parser.add_argument("--pin", action="store_true", help="pin the client to CPU 0 and servers to CPU 1")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--serve-loop", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--serve-selectors", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve_main(args.serve, args.serve_loop, args.serve_selectors, args.pin)
        return 0

    from rocketq.remoting.protocol.codes import SerializeType
    from rocketq.remoting.protocol.header_codec import HEADER_CODECS
    from rocketq.remoting.transport.loops import uvloop_available

    if args.pin:
        _pin(0)
    seconds = min(max(args.seconds, 0.2), 30.0)
    inflights = [int(x) for x in args.inflight.split(",")]
    loops = [x for x in args.loops.split(",") if x]
    if "uvloop" in loops and not uvloop_available():
        print("uvloop is not installed: skipping the uvloop rows; the baseline runs on asyncio")
        loops.remove("uvloop")
    baseline_loop = "uvloop" if uvloop_available() else "asyncio"
    codecs = []
    for name in args.codecs.split(","):
        st = SerializeType[name.upper()]
        if st not in HEADER_CODECS:
            print(f"header codec {name} is not available yet: skipped")
            continue
        codecs.append(st)

    selector_counts = [int(x) for x in args.selectors.split(",")]
    rounds = max(1, args.rounds)
    servers: dict[str, ServerProcess] = {}
    rows: list[Row] = []
    try:
        servers["baseline"] = ServerProcess("echo", baseline_loop, pin=args.pin)
        for loop_name in loops:
            for selectors in selector_counts:
                sel = f" sel={selectors}" if len(selector_counts) > 1 else ""
                servers[f"{loop_name}{sel}"] = ServerProcess("rocketq", loop_name, selectors, args.pin)
        for st in codecs:
            frame = _request_frame(st)
            for inflight in inflights:
                # Rounds alternate baseline and rocketq, and each keeps its best round, so that load
                # from other processes on the machine hits both alike instead of skewing the ratio.
                best: dict[str, Sample] = {}
                for _ in range(rounds):
                    for key, server in servers.items():
                        if key == "baseline":
                            sample = _run_client(_bench_echo, baseline_loop, server, frame, inflight, seconds)
                        else:
                            sample = _run_client(
                                _bench_rocketq, key.split()[0], server, st, inflight, seconds
                            )
                        if key not in best or sample.rps > best[key].rps:
                            best[key] = sample
                for key in servers:
                    if key != "baseline":
                        rows.append(Row(f"{key:7} {st.name.lower()}", inflight, best[key], best["baseline"]))
    finally:
        for server in servers.values():
            server.stop()
    _print_table(rows, baseline_loop, seconds, rounds)
    return 0


def _print_table(rows: list[Row], baseline_loop: str, seconds: float, rounds: int) -> None:
    print(
        f"\nremoting round trips/s, 1 KiB body each way, best of {rounds} x {seconds:g}s, cpus={os.cpu_count()}"
    )
    print(f"baseline: bare {baseline_loop} length-prefixed echo (client and server), same frames")
    print("cpu us/rt: CPU time per round trip in the client / server process (baseline in brackets)\n")
    print(
        f"{'loop    codec':22} {'inflight':>8} {'rocketq rt/s':>13} {'baseline rt/s':>14} {'ratio':>6}   cpu us/rt"
    )
    for r in rows:
        s, b = r.sample, r.baseline
        cpu = f"{s.client_us:5.1f} / {s.server_us:5.1f}  [{b.client_us:4.1f} / {b.server_us:4.1f}]"
        print(f"{r.label:22} {r.inflight:8d} {s.rps:13,.0f} {b.rps:14,.0f} {s.rps / b.rps:6.2f}   {cpu}")


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    if not any(a.startswith("--serve") for a in sys.argv):
        print(f"\n(total {time.monotonic() - started:.0f}s)")
    sys.exit(code)
