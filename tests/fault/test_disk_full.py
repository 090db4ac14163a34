"""A broker whose disk fills up: it refuses writes with Java's answer, keeps serving reads, takes writes
again once there is room, and starts (serving reads) on a disk that is already full. Never SIGBUS.

The store root is a small tmpfs mounted by the test (root only; the test skips with the reason when the
mount is refused). tmpfs is the harsh case: a write into a hole of a shared mapping on a full tmpfs is
SIGBUS, and so is a read fault in a hole (tmpfs allocates a page for it), which is how a broker used to
die both while taking 4 KiB keyed sends with the index on and while loading on the full disk.
Figures (printed, `pytest -s`): messages acknowledged before the disk was full, how full it was then.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.store.disk_space import SERVICE_NOT_AVAILABLE_REMARK
from rocketq.testing.broker_probe import BrokerProbe
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.raw_sender import RawSender
from rocketq.testing.waiting import wait_for
from rocketq.testing.wire import RawConnection

TOPIC = "DiskFull"
QUEUES = 4
BODY_SIZE = 4096
MAX_SENDS = 40_000  # 160 MB of bodies: far more than the disk holds
SEND_WINDOW = 32  # sends in flight
JAVA_PREFIX = SERVICE_NOT_AVAILABLE_REMARK.split("{util}")[0]


@contextlib.contextmanager
def mounted_tmpfs(directory: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` at `directory` for the block (skips the test when it cannot be mounted)."""
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield directory
    finally:
        if subprocess.run(["umount", str(directory)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(directory)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs (unmounted after the broker of the test has stopped)."""
    with mounted_tmpfs(tmp_path / "disk", "64m") as directory:
        yield directory


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs: too small for one 16 MiB commit-log file."""
    with mounted_tmpfs(tmp_path / "tiny", "8m") as directory:
        yield directory


def _fill(path: Path, limit: int = 1 << 30) -> int:
    """Write zeros to `path` until the file system is full (or `limit` bytes); returns the bytes written."""
    chunk = bytes(1 << 20)
    written = 0
    with open(path, "wb", buffering=0) as fh:
        while written < limit:
            try:
                written += fh.write(chunk[: min(len(chunk), limit - written)])
            except OSError:
                chunk = chunk[:4096]
                try:
                    written += fh.write(chunk)
                except OSError:
                    break
    return written


def _used_pct(path: Path) -> float:
    usage = shutil.disk_usage(path)
    return 100 * (usage.total - usage.free) / usage.total


class Sender(RawSender):
    """Keyed 4 KiB sends to the test topic."""

    def __init__(self, conn: RawConnection) -> None:
        super().__init__(conn, TOPIC, QUEUES, body_size=BODY_SIZE)

    async def until_refused(self) -> None:
        sent = await self.send(MAX_SENDS, window=SEND_WINDOW, until_refused=True)
        assert self.refusals, f"{sent} sends of {BODY_SIZE} bytes were all accepted by a 64 MiB disk"


def _assert_disk_full_answer(response: RemotingCommand) -> None:
    assert response.code == ResponseCode.SERVICE_NOT_AVAILABLE, f"{response.code} {response.remark}"
    remark = response.remark or ""
    assert remark.startswith(JAVA_PREFIX) and "the broker's disk is full [CL: " in remark, remark


async def _assert_reads(addr: str, acked: dict[tuple[int, int], bytes]) -> None:
    """Every acknowledged message pulls back at its queue and offset, byte for byte."""
    probe = await BrokerProbe.open(addr, timeout_s=30)
    try:
        for queue_id in range(QUEUES):
            got = {m.queue_offset: m.body for m in await probe.pull_all(TOPIC, queue_id)}
            for (q, offset), body in acked.items():
                if q == queue_id:
                    assert got.get(offset) == body, f"{TOPIC}/{q}@{offset} did not come back intact"
    finally:
        await probe.close()


@pytest.mark.timeout(240)
async def test_a_full_disk_refuses_writes_serves_reads_and_recovers(
    small_disk: Path, cluster_factory: ClusterFactory
) -> None:
    ballast = small_disk / "ballast"
    _fill(ballast, 20 << 20)  # freed later: room for one more 16 MiB commit-log file
    # Java's forcible cleaning (on by default) would delete the oldest unexpired commit-log files of a
    # disk over diskSpaceCleanForciblyRatio; off, so that every acknowledged message must stay readable.
    overrides = {"storePathRootDir": str(small_disk / "store"), "cleanFileForciblyEnable": False}
    cluster = await cluster_factory(broker_overrides=overrides)
    broker = cluster.brokers[0]
    try:
        probe = await BrokerProbe.open(broker.addr)
        await probe.create_topic(TOPIC, QUEUES)
        await probe.close()
        conn = await RawConnection.open(broker.addr, 30)
        sender = Sender(conn)
        await sender.until_refused()
        full_pct = _used_pct(small_disk)
        assert broker.running, f"the broker died (exit {broker.returncode}) when the disk filled"
        _assert_disk_full_answer(sender.refusals[0])
        _assert_disk_full_answer(await sender.send_one())  # still refused, still alive
        await _assert_reads(broker.addr, sender.acked)
        acked_first = len(sender.acked)

        ballast.unlink()  # space comes back: writes are accepted again
        await wait_for(
            lambda: _accepted(sender), timeout_s=15, what="a send accepted after the disk got room again"
        )
        sender.refusals.clear()
        await sender.until_refused()
        _assert_disk_full_answer(sender.refusals[-1])
        await conn.close()

        # Whatever room is left goes too, then the broker crashes and starts again on the full disk.
        _fill(small_disk / "ballast-2")
        broker.kill()
        assert await broker.wait_exit(10) is not None
        await broker.restart()
        assert broker.running
        await _assert_reads(broker.addr, sender.acked)
        conn = await RawConnection.open(broker.addr, 30)
        _assert_disk_full_answer(await Sender(conn).send_one())
        await conn.close()
        print(
            f"\ndisk full on a 64 MiB tmpfs, index on, {BODY_SIZE}-byte keyed sends: {acked_first} acknowledged "
            f"before the first refusal at {full_pct:.1f}% used; {len(sender.acked)} after space was freed once; "
            f"restarted after kill -9 on the full disk: every acknowledged message read back, sends refused"
        )
    finally:
        await cluster.close()


async def _accepted(sender: Sender) -> bool:
    response = await sender.send_one()
    return response.code == ResponseCode.SUCCESS


@pytest.mark.timeout(120)
async def test_a_store_too_small_for_a_commit_log_file_starts_and_refuses_writes(
    tiny_disk: Path, cluster_factory: ClusterFactory
) -> None:
    cluster = await cluster_factory(broker_overrides={"storePathRootDir": str(tiny_disk / "store")})
    broker = cluster.brokers[0]
    try:
        probe = await BrokerProbe.open(broker.addr)
        await probe.create_topic(TOPIC, QUEUES)  # metadata still fits
        await probe.close()
        conn = await RawConnection.open(broker.addr, 30)
        _assert_disk_full_answer(await Sender(conn).send_one())
        await conn.close()
        assert broker.running
    finally:
        await cluster.close()
