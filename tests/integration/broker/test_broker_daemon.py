"""`rocketq broker` as a user starts it: config errors, a port in use, -p, clean SIGTERM, log file."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

from broker_client import SMALL_STORE, BrokerTestClient

from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.waiting import wait_for


async def run_broker(*args: str, timeout_s: float = 30) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rocketq",
        "broker",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_bad_key_and_bad_value_exit_2_naming_it(tmp_path: Path) -> None:
    code, out, err = await run_broker("--store-path-root-dir", str(tmp_path), "--brokerNmae", "x")
    assert code == 2 and "brokerNmae" in err and len(err.strip().splitlines()) == 1 and out == ""
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\nlistenPort=not-a-port\n")
    code, _, err = await run_broker("-c", str(conf))
    assert code == 2 and "listenPort" in err and len(err.strip().splitlines()) == 1
    code, _, err = await run_broker("-c", str(tmp_path / "missing.toml"))
    assert code == 2 and "missing.toml" in err


async def test_port_in_use_exits_1_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = await run_broker(
            "--listen-port",
            str(port),
            "--store-path-root-dir",
            str(tmp_path / "store"),
            *[a for k, v in SMALL_STORE.items() for a in (f"--{k}", str(v))],
        )
    assert code == 1 and "READY" not in out
    # stderr also carries the log; the operator's line is the last one, and the only one of its kind
    assert (
        err.strip().splitlines()[-1]
        == f"rocketq broker: cannot listen on 127.0.0.1:{port}: the port is already in use"
    )
    assert err.count("rocketq broker:") == 1


async def test_print_config(tmp_path: Path) -> None:
    code, out, _ = await run_broker("-p", "--broker-name", "broker-z", "--store-path-root-dir", str(tmp_path))
    assert code == 0 and "brokerName=broker-z" in out and "flushDiskType=ASYNC_FLUSH" in out


async def test_sigterm_shuts_down_cleanly_and_persists(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_overrides=SMALL_STORE)
    proc = cluster.brokers[0]
    async with BrokerTestClient(proc.addr) as broker:
        assert (await broker.send("Persisted", b"x", queue_id=0)).code == 0
        await broker.commit_offset("cg", "Persisted", 0, 1)
    assert await proc.stop() == 0
    config_dir = proc.store_dir / "config"
    assert "Persisted@cg" in (config_dir / "consumerOffset.json").read_text()
    assert '"Persisted"' in (config_dir / "topics.json").read_text()
    assert (proc.store_dir / "logs" / "broker.log").read_text().count("boot success") == 1


async def test_a_store_in_use_exits_1_and_is_left_alone(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_overrides=SMALL_STORE)
    running = cluster.brokers[0]
    topics_json = running.store_dir / "config" / "topics.json"
    # The built-in topics are written by the config group commit, which may come just after READY.
    await wait_for(topics_json.exists, timeout_s=10, what="config/topics.json written")
    topics = topics_json.read_bytes()
    code, out, err = await run_broker("--listen-port", "0", "--store-path-root-dir", str(running.store_dir))
    assert code == 1 and "READY" not in out
    assert "in use by another process" in err.strip().splitlines()[-1]
    assert (running.store_dir / "config" / "topics.json").read_bytes() == topics
    async with BrokerTestClient(running.addr) as broker:  # the first broker is unharmed
        assert (await broker.send("StillHere", b"x", queue_id=-1)).code == 0
