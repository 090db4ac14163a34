"""`make run` runs rocketq.demo: it must start both daemons, exchange messages and stop them cleanly."""

import subprocess
import sys
from pathlib import Path

import pytest

from rocketq.testing.ports import free_port


@pytest.mark.timeout(120)
def test_demo_exchanges_messages_and_stops_daemons(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "rocketq.demo",
        "--count",
        "6",
        "--data-dir",
        str(tmp_path / "run-data"),
        "--namesrv-port",
        str(free_port()),
        "--broker-port",
        str(free_port()),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=110)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("  sent ") == 6
    assert out.stdout.count("  received ") == 6
    assert "all 6 messages consumed" in out.stdout
    assert "exit codes [0, 0]" in out.stdout
    # Everything the daemons wrote is under the data directory (`make clean` removes run-data/).
    data = tmp_path / "run-data"
    assert (data / "store" / "commitlog").is_dir()
    assert (data / "logs" / "namesrv.log").is_file() and (data / "store" / "logs" / "broker.log").is_file()
