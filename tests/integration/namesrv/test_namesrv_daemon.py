"""The `rocketq namesrv` daemon contract and the LocalCluster harness that starts it."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.testing.cluster import DaemonStartError, NamesrvProcess
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.namesrv_client import NamesrvTestClient
from rocketq.testing.ports import hold_port
from rocketq.testing.waiting import wait_for


async def test_sigterm_is_a_clean_exit(tmp_path: Path) -> None:
    namesrv = await NamesrvProcess("ns", tmp_path).start()
    try:
        assert namesrv.stdout_text().splitlines() == [f"READY namesrv {namesrv.addr}"]
        assert await namesrv.stop() == 0
        assert "the Name Server stopped" in namesrv.log_text()
        assert "the Name Server stopped" in (tmp_path / "logs" / "namesrv.log").read_text()
    finally:
        await namesrv.stop()


async def test_bad_key_exits_2_naming_it(tmp_path: Path) -> None:
    namesrv = NamesrvProcess("ns", tmp_path, {"noSuchKey": "1"})
    with pytest.raises(DaemonStartError, match="exited before it was ready"):
        await namesrv.start()
    assert namesrv.returncode == 2
    last = namesrv.log_text().strip().splitlines()[-1]
    assert last == "rocketq namesrv: command line: unknown key 'noSuchKey' for NamesrvConfig"


async def test_bad_value_in_a_config_file_names_key_and_file(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text("# a RocketMQ properties file\nlistenPort=0\nbrokerChannelExpiredTime=soon\n")
    namesrv = NamesrvProcess("ns", tmp_path, {"c": str(conf)})
    with pytest.raises(DaemonStartError):
        await namesrv.start()
    assert namesrv.returncode == 2
    last = namesrv.log_text().strip().splitlines()[-1]
    assert "brokerChannelExpiredTime" in last and str(conf) in last


async def test_toml_config_file_is_read(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.toml"
    conf.write_text("listenPort = 0\norderMessageEnable = true\n")
    namesrv = await NamesrvProcess("ns", tmp_path, {"c": str(conf)}).start()
    try:
        async with NamesrvTestClient(namesrv.addr) as ns:
            text = (await ns.call(RequestCode.GET_NAMESRV_CONFIG)).body.decode()
        assert "orderMessageEnable=true\n" in text
    finally:
        assert await namesrv.stop() == 0


async def test_port_taken_is_one_clear_line(tmp_path: Path) -> None:
    with hold_port() as sock:
        port = sock.getsockname()[1]
        namesrv = NamesrvProcess("ns", tmp_path, {"listenPort": port})
        with pytest.raises(DaemonStartError) as info:
            await namesrv.start()
    assert namesrv.returncode not in (0, None)
    last = namesrv.log_text().strip().splitlines()[-1]
    assert last == f"rocketq namesrv: cannot listen on 127.0.0.1:{port}: the port is already in use"
    assert last in str(info.value)


async def test_harness_kill_pause_and_restart(cluster_factory: ClusterFactory) -> None:
    cluster = await cluster_factory(broker_count=0)
    namesrv = cluster.namesrvs[0]
    namesrv.pause()
    async with NamesrvTestClient(namesrv.addr, timeout_ms=300) as ns:
        with pytest.raises(Exception, match="timeout"):
            await ns.call(RequestCode.GET_BROKER_CLUSTER_INFO)
    namesrv.resume()
    namesrv.kill()
    assert await namesrv.wait_exit(10) == -9
    await namesrv.restart()
    async with NamesrvTestClient(namesrv.addr) as ns:
        assert (await ns.call(RequestCode.GET_BROKER_CLUSTER_INFO)).code == ResponseCode.SUCCESS
    assert namesrv.log_text().count("READY") == 0  # READY goes to stdout, logs to stderr
    assert cluster.log_tails().startswith("==== namesrv namesrv-0")


def _run_launcher(work: Path) -> tuple[str, int, str, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rocketq",
            "cluster",
            "up",
            "--brokers",
            "0",
            "--namesrv-port",
            "0",
            "--dir",
            str(work),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline().strip()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return ready, proc.returncode, out, err


async def test_cluster_launcher_runs_and_stops(tmp_path: Path) -> None:
    ready, code, out, err = await asyncio.to_thread(_run_launcher, tmp_path)
    assert ready.startswith("READY cluster namesrv=127.0.0.1:"), err
    assert code == 0, err
    assert "the Name Server stopped" in (tmp_path / "namesrv-0" / "namesrv.stderr.log").read_text()
    # The daemons' last lines reach the launcher's output once they have exited.
    assert "the Name Server stopped" in out.splitlines()[-1], out[-500:]


_ORPHAN_SCRIPT = """
import asyncio, os, sys
from pathlib import Path
from rocketq.testing.cluster import NamesrvProcess

async def main():
    namesrv = await NamesrvProcess("ns", Path(sys.argv[1])).start()
    print(namesrv.pid, flush=True)
    os._exit(1)  # a harness killed hard: no teardown runs

asyncio.run(main())
"""


async def test_daemons_stop_when_the_harness_dies(tmp_path: Path) -> None:
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", _ORPHAN_SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    pid = int(done.stdout.strip())
    log = tmp_path / "logs" / "namesrv.log"

    def stopped() -> bool:
        return log.exists() and "the Name Server stopped" in log.read_text()

    await wait_for(stopped, timeout_s=10, what=f"orphaned namesrv {pid} to stop")
