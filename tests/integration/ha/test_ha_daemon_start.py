"""`rocketq broker` with its replication port taken exits 1 with one line naming haListenPort."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from rocketq.testing.ports import hold_port


@pytest.mark.timeout(60)
async def test_an_ha_port_in_use_exits_1_naming_it(tmp_path: Path) -> None:
    with hold_port() as taken:
        port = taken.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "rocketq", "broker", "--listen-port", "0", "--haListenPort", str(port),
            "--store-path-root-dir", str(tmp_path / "store"), "--mappedFileSizeCommitLog", str(1 << 20),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 45)
    assert proc.returncode == 1 and b"READY" not in out
    last = err.decode().strip().splitlines()[-1]
    assert last.startswith(f"rocketq broker: cannot listen for slaves on 127.0.0.1:{port} (haListenPort)"), (
        last
    )
