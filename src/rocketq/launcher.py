"""`rocketq cluster up [-c FILE] [--namesrvs N] [--brokers N] [--dir DIR] [--namesrv-port P]`.

Runs a local cluster (LocalCluster: real daemons as subprocesses) in the foreground until Ctrl-C or
SIGTERM, then stops the brokers and the NameServers cleanly. FILE is TOML:

    namesrvs = 1
    dir = "run-data/cluster"
    [namesrv]                # options of every NameServer (RocketMQ key names)
    listenPort = 9876
    [[broker]]               # one table per broker
    brokerName = "broker-a"
    [[broker]]
    brokerName = "broker-b"

Command-line options win over the file. Every daemon's log lines are printed as they come, each
prefixed with the daemon's name (`[broker-a] ...`); they also stay in files under the cluster directory. NameServers listen on `--namesrv-port` (default 9876) and the
following ports; 0 lets each pick a free port. Prints `READY cluster namesrv=<addr> brokers=<addrs>`.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tomllib
from pathlib import Path
from typing import Any

from rocketq.cluster import DaemonStartError, LocalCluster
from rocketq.common.constants import DEFAULT_NAMESRV_PORT


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocketq cluster", description="run a local rocketq cluster")
    parser.add_argument("action", choices=["up"], help="start the cluster and run until interrupted")
    parser.add_argument("-c", "--config", help="TOML file describing the cluster")
    parser.add_argument("--namesrvs", type=int, help="number of NameServers (default 1)")
    parser.add_argument("--brokers", type=int, help="number of brokers (default 1, or one per [[broker]])")
    parser.add_argument("--dir", help="where daemons keep their stores and logs (default run-data/cluster)")
    parser.add_argument(
        "--namesrv-port", type=int, help=f"first NameServer port (default {DEFAULT_NAMESRV_PORT})"
    )
    return parser


def _read_file(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SystemExit(f"rocketq cluster: cannot read {path}: {exc}") from None


def build_cluster(args: argparse.Namespace) -> LocalCluster:
    spec = _read_file(args.config)
    namesrvs = args.namesrvs if args.namesrvs is not None else int(spec.get("namesrvs", 1))
    brokers_spec: list[dict[str, Any]] = list(spec.get("broker", []))
    if args.brokers is not None:
        brokers = args.brokers
    elif brokers_spec:
        brokers = len(brokers_spec)
    else:
        brokers = int(spec.get("brokers", 1))
    base_port = args.namesrv_port if args.namesrv_port is not None else DEFAULT_NAMESRV_PORT
    namesrv_common = dict(spec.get("namesrv", {}))
    namesrv_overrides = []
    for index in range(namesrvs):
        port = {"listenPort": base_port + index if base_port else 0}
        # the file's [namesrv] options win over the default port, the command line over both
        merged = {**namesrv_common, **port} if args.namesrv_port is not None else {**port, **namesrv_common}
        namesrv_overrides.append(merged)
    directory = Path(args.dir or spec.get("dir", "run-data/cluster")).resolve()
    return LocalCluster(directory, namesrvs, brokers, brokers_spec or None, namesrv_overrides)


async def run(cluster: LocalCluster) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await cluster.start()
    except DaemonStartError as exc:
        print(f"rocketq cluster: {exc}", file=sys.stderr)
        return 1
    brokers = ",".join(f"{b.name}={b.addr}" for b in cluster.brokers)
    print(f"READY cluster namesrv={cluster.namesrv_addr} brokers={brokers}", flush=True)
    print(f"logs and stores under {cluster.tmp_dir}; Ctrl-C stops the cluster", file=sys.stderr, flush=True)
    positions: dict[Path, int] = {}
    follower = asyncio.ensure_future(follow_logs(cluster, positions))
    exited = asyncio.ensure_future(_first_exit(cluster))
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({exited, stopped}, return_when=asyncio.FIRST_COMPLETED)
    for task in (exited, stopped):
        task.cancel()
    code = 0
    if exited.done() and not exited.cancelled() and exited.result() is not None:
        print(f"rocketq cluster: {exited.result()} exited; stopping the cluster", file=sys.stderr)
        code = 1
    await cluster.close()
    follower.cancel()
    await asyncio.gather(follower, return_exceptions=True)
    print_new_lines(cluster, positions)  # the daemons have exited: their shutdown lines are all written
    return code


def _read_from(path: Path, offset: int) -> bytes:
    """Bytes of `path` from `offset` (a small local log file: read in place, between loop turns)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read()
    except FileNotFoundError:
        return b""


def print_new_lines(cluster: LocalCluster, positions: dict[Path, int]) -> None:
    """Print the whole log lines written since `positions` (per log file), each prefixed `[name] `."""
    for daemon in cluster.daemons:
        path = daemon.stderr_path
        chunk = _read_from(path, positions.get(path, 0))
        complete = chunk[: chunk.rfind(b"\n") + 1]  # whole lines only; the rest next round
        positions[path] = positions.get(path, 0) + len(complete)
        for line in complete.decode("utf-8", "replace").splitlines():
            print(f"[{daemon.name}] {line}", flush=True)


async def follow_logs(cluster: LocalCluster, positions: dict[Path, int], interval_s: float = 0.2) -> None:
    """Print every daemon's log lines to stdout as they are written (a file tail: polled)."""
    while True:
        print_new_lines(cluster, positions)
        await asyncio.sleep(interval_s)


async def _first_exit(cluster: LocalCluster) -> str:
    """Waits until some daemon exits on its own; names it."""
    while True:
        for daemon in cluster.daemons:
            if not daemon.running:
                return f"{daemon.role} {daemon.name}"
        await asyncio.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    return asyncio.run(run(build_cluster(args)))
