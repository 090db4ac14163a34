"""Power loss: the broker's store on a FUSE layer that, on command, drops every write not made durable.

kill -9 keeps the page cache, so a write the broker never synced survives it; a power loss does not.
power_loss_fs.py (beside this file) is a pass-through FUSE file system that keeps the old bytes of
every page written since its file's last fsync/fdatasync and, when it "loses power", writes them back
(LazyFS's model; its limits are in its docstring and docs/fault-tests.md). Each cycle: sends stream to
the broker, the broker is killed with SIGKILL, the layer loses power (writes from now on are ignored,
the mount is unmounted, so whatever the kernel still had dirty is lost, and the unsynced writes are
undone), the file system is mounted again and the broker restarted on it. Then every queue is read
from its start and compared with what was acknowledged.

- SYNC_FLUSH: every acknowledged message is there, byte for byte, after every cycle.
- ASYNC_FLUSH: what is lost is reported (printed); it must be a tail of each queue (no holes, nothing
  older than a message that survived), at most what the last flush interval had not flushed yet.
- config files: a topic, a subscription group and a consumer offset, once their files are synced,
  survive the power loss.

CI: a few cycles per flush mode; soak (ROCKETQ_SOAK=1): many more. Skips, with the reason, where
/dev/fuse or libfuse is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rocketq.client import Admin
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.headers.offset import UpdateConsumerOffsetRequestHeader
from rocketq.store.config import FlushDiskType
from rocketq.testing.broker_probe import BrokerProbe
from rocketq.testing.cluster import BrokerProcess
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.raw_sender import RawSender
from rocketq.testing.waiting import wait_for
from rocketq.testing.wire import RawConnection

FS_SCRIPT = Path(__file__).with_name("power_loss_fs.py")
TOPIC = "PowerLoss"
QUEUES = 4


def _fuse_problem() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine: the power-loss file system cannot be mounted"
    if os.geteuid() != 0:
        return "mounting the power-loss file system needs root here"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:
        return f"mfusepy cannot load libfuse (install fuse3): {exc}"
    return None


class PowerLossMount:
    """One power_loss_fs.py process at a time on `mountpoint`, over `backing`."""

    def __init__(self, backing: Path, mountpoint: Path, log: Path) -> None:
        self.backing = backing
        self.mountpoint = mountpoint
        self.log = log
        self._proc: subprocess.Popen[str] | None = None
        self._lines: list[str] = []
        self._new_line = threading.Condition()
        backing.mkdir(parents=True, exist_ok=True)
        mountpoint.mkdir(parents=True, exist_ok=True)

    def mount(self) -> None:
        with open(self.log, "a") as stderr:
            self._proc = subprocess.Popen(
                [sys.executable, str(FS_SCRIPT), str(self.backing), str(self.mountpoint)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self._lines = []
        threading.Thread(target=self._read, args=(self._proc,), daemon=True).start()
        self._expect("MOUNTED", 30)

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._new_line:
                self._lines.append(line.strip())
                self._new_line.notify_all()

    def _expect(self, prefix: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        with self._new_line:
            while True:
                for index, line in enumerate(self._lines):
                    if line.startswith(prefix):
                        del self._lines[: index + 1]
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"power_loss_fs said no {prefix} within {timeout_s}s; see {self.log}"
                    )
                self._new_line.wait(left)

    def _command(self, command: str, answer: str) -> str:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(command + "\n")
        self._proc.stdin.flush()
        return self._expect(answer, 10)

    def unsynced_pages(self, prefix: str) -> int:
        return int(self._command(f"unsynced {prefix}", "UNSYNCED").split()[1])

    def lose_power(self) -> tuple[int, int]:
        """Drop every unsynced write; returns (files, pages) undone. The mount is gone afterwards."""
        self._command("lose-power", "LOST")
        self.unmount()
        undone = [line for line in self._lines if line.startswith("UNDONE")]
        if not undone:
            return 0, 0
        _word, files, pages = undone[-1].split()
        return int(files), int(pages)

    def unmount(self) -> None:
        proc = self._proc
        if proc is None:
            return
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            if subprocess.run(["umount", str(self.mountpoint)], capture_output=True).returncode != 0:
                time.sleep(0.05)  # still busy (a file of the killed broker being released)
                continue
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                break
        if proc.poll() is None:
            subprocess.run(["umount", "-l", str(self.mountpoint)], capture_output=True)
            proc.kill()
            proc.wait(10)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self._proc = None


@pytest.fixture
async def power_fs(tmp_path: Path) -> AsyncIterator[PowerLossMount]:
    problem = _fuse_problem()
    if problem is not None:
        pytest.skip(problem)
    mount = PowerLossMount(tmp_path / "backing", tmp_path / "mnt", tmp_path / "power_loss_fs.log")
    mount.mount()
    try:
        yield mount
    finally:
        mount.unmount()


@pytest.mark.timeout(60)
async def test_the_layer_drops_unsynced_writes_and_keeps_synced_ones(power_fs: PowerLossMount) -> None:
    """The layer itself: write/fsync, write without fsync, a shared mapping with and without msync."""
    import mmap

    mnt = power_fs.mountpoint

    def write(name: str, data: bytes, sync: bool) -> None:
        fd = os.open(mnt / name, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, data, 0)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def mapped(name: str, data: bytes, sync: bool) -> None:
        fd = os.open(mnt / name, os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(fd, 3 * 4096)
        with mmap.mmap(fd, 3 * 4096) as mm:
            mm[4096 : 4096 + len(data)] = data
            if sync:
                mm.flush()  # msync(MS_SYNC)
        os.close(fd)

    write("synced", b"kept", sync=True)
    write("unsynced", b"lost", sync=False)
    mapped("mm-synced", b"kept", sync=True)
    mapped("mm-unsynced", b"lost", sync=False)
    write("grown", b"a" * 4096, sync=True)
    fd = os.open(mnt / "grown", os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"b" * 4096)  # the file grows, unsynced
    os.close(fd)
    files, pages = power_fs.lose_power()
    power_fs.mount()
    assert (mnt / "synced").read_bytes() == b"kept"
    assert (mnt / "unsynced").read_bytes() == b""  # created (metadata is durable), its data is not
    assert (mnt / "mm-synced").read_bytes()[4096:4100] == b"kept"
    assert (mnt / "mm-unsynced").read_bytes() == bytes(3 * 4096)
    assert (mnt / "grown").read_bytes() == b"a" * 4096
    assert files >= 3 and pages >= 3


# -- the broker on it ---------------------------------------------------------------------------------
@dataclass
class CycleFigures:
    acked: int = 0
    lost: int = 0
    lost_window_s: float = 0.0  # from the oldest lost acknowledgement to the kill
    undone_pages: int = 0
    ready_s: float = 0.0


@dataclass
class PowerRun:
    flush: FlushDiskType
    cycles: int
    acks_per_cycle: int
    figures: list[CycleFigures] = field(default_factory=list)

    def table(self) -> str:
        rows = [f"  cycle {i:>3}: acked {f.acked:>6}  lost {f.lost:>5} (acked in the last {f.lost_window_s:5.2f}s)  "
                f"unsynced pages undone {f.undone_pages:>6}  restart to READY {f.ready_s:5.2f}s"
                for i, f in enumerate(self.figures)]  # fmt: skip
        return "\n".join(rows)


def _broker_overrides(mnt: Path, flush: FlushDiskType) -> dict[str, object]:
    return {
        "storePathRootDir": str(mnt / "store"),
        "flushDiskType": flush.value,
        "mappedFileSizeCommitLog": 4 << 20,  # several roll-overs a run
        "mappedFileSizeConsumeQueue": 6000,
        "mappedFileReserveAhead": 1 << 20,
        "warmMappedFileEnable": False,  # faulting pages in ahead would write them back through FUSE too
    }


async def _read_all(addr: str) -> dict[tuple[int, int], bytes]:
    probe = await BrokerProbe.open(addr, timeout_s=30)
    try:
        out: dict[tuple[int, int], bytes] = {}
        for queue_id in range(QUEUES):
            for message in await probe.pull_all(TOPIC, queue_id):
                out[(queue_id, message.queue_offset)] = message.body
        return out
    finally:
        await probe.close()


async def _kill_and_lose_power(broker: BrokerProcess, power_fs: PowerLossMount) -> tuple[int, float]:
    """kill -9, power off (unsynced writes undone), power on, restart; returns (pages undone, READY s)."""
    broker.kill()
    assert await broker.wait_exit(10) is not None, "the broker survived SIGKILL"
    _files, pages = power_fs.lose_power()
    power_fs.mount()
    started = time.monotonic()
    await broker.restart()
    return pages, time.monotonic() - started


async def power_loss_cycles(
    power_fs: PowerLossMount, cluster_factory: ClusterFactory, run: PowerRun, seed: int
) -> None:
    rng = random.Random(seed)
    cluster = await cluster_factory(broker_overrides=_broker_overrides(power_fs.mountpoint, run.flush))
    try:
        await _cycles(cluster.brokers[0], power_fs, run, rng)
    finally:
        await cluster.close()  # before the file system goes
    print(
        f"\npower loss, {run.flush.value}: {run.cycles} cycles of sends, kill -9 and the loss of every unsynced "
        f"write; {sum(f.acked for f in run.figures)} acknowledged, {sum(f.lost for f in run.figures)} of them lost\n"
        f"{run.table()}"
    )


async def _cycles(broker: BrokerProcess, power_fs: PowerLossMount, run: PowerRun, rng: random.Random) -> None:
    probe = await BrokerProbe.open(broker.addr)
    await probe.create_topic(TOPIC, QUEUES)
    await probe.close()
    acked: dict[tuple[int, int], bytes] = {}
    for cycle in range(run.cycles):
        conn = await RawConnection.open(broker.addr, 30)
        sender = RawSender(conn, TOPIC, QUEUES, body_size=rng.choice((300, 1200, 5000)), keyed=True)
        sender.seq = (cycle + 1) * 10_000_000  # bodies never repeat across cycles
        stream = asyncio.create_task(sender.send(200_000, window=8, timeout_s=90))
        acks = sender.acked
        await wait_for(lambda: len(acks) >= run.acks_per_cycle, timeout_s=60, what="acknowledgements")  # noqa: B023
        await asyncio.sleep(rng.uniform(0.0, 0.3))  # the power goes anywhere in the stream
        killed_at = time.monotonic()
        pages, ready_s = await _kill_and_lose_power(broker, power_fs)
        with contextlib.suppress(Exception):
            await stream  # its connection died with the broker
        with contextlib.suppress(Exception):
            await conn.close()
        acked.update(sender.acked)
        stored = await _read_all(broker.addr)
        lost = sorted(key for key, body in acked.items() if stored.get(key) != body)
        oldest = min((sender.acked_at[key] for key in lost if key in sender.acked_at), default=killed_at)
        run.figures.append(CycleFigures(len(sender.acked), len(lost), killed_at - oldest, pages, ready_s))
        if run.flush is FlushDiskType.SYNC_FLUSH:
            assert not lost, f"cycle {cycle}: {len(lost)} acknowledged messages lost, first {lost[:5]}"
        for queue_id, offset in lost:  # ASYNC_FLUSH: a tail of the queue, never a hole
            kept_after = [o for (q, o) in acked if q == queue_id and o > offset and (q, o) not in lost]
            assert not kept_after, f"queue {queue_id}: offset {offset} lost but later {kept_after[:3]} kept"
        for key in lost:  # their offsets are taken by the next messages
            del acked[key]


@pytest.mark.timeout(300)
async def test_power_loss_sync_flush_loses_nothing_acknowledged(
    power_fs: PowerLossMount, cluster_factory: ClusterFactory
) -> None:
    await power_loss_cycles(
        power_fs, cluster_factory, PowerRun(FlushDiskType.SYNC_FLUSH, cycles=4, acks_per_cycle=300), 1
    )


@pytest.mark.timeout(300)
async def test_power_loss_async_flush_loses_only_a_tail(
    power_fs: PowerLossMount, cluster_factory: ClusterFactory
) -> None:
    await power_loss_cycles(
        power_fs, cluster_factory, PowerRun(FlushDiskType.ASYNC_FLUSH, cycles=4, acks_per_cycle=2000), 2
    )


@pytest.mark.soak
@pytest.mark.timeout(1800)
async def test_power_loss_sync_flush_soak(power_fs: PowerLossMount, cluster_factory: ClusterFactory) -> None:
    await power_loss_cycles(
        power_fs, cluster_factory, PowerRun(FlushDiskType.SYNC_FLUSH, cycles=40, acks_per_cycle=1500), 11
    )


@pytest.mark.soak
@pytest.mark.timeout(1800)
async def test_power_loss_async_flush_soak(power_fs: PowerLossMount, cluster_factory: ClusterFactory) -> None:
    await power_loss_cycles(
        power_fs, cluster_factory, PowerRun(FlushDiskType.ASYNC_FLUSH, cycles=40, acks_per_cycle=1500), 12
    )


# -- config files -------------------------------------------------------------------------------------
def _config(power_fs: PowerLossMount, name: str) -> dict[str, object]:
    path = power_fs.mountpoint / "store" / "config" / name
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _has(power_fs: PowerLossMount, name: str, needle: str) -> bool:
    return needle in json.dumps(_config(power_fs, name))


@pytest.mark.timeout(180)
async def test_power_loss_keeps_synced_topics_groups_and_offsets(
    power_fs: PowerLossMount, cluster_factory: ClusterFactory
) -> None:
    cluster = await cluster_factory(
        broker_overrides=_broker_overrides(power_fs.mountpoint, FlushDiskType.SYNC_FLUSH)
    )
    broker = cluster.brokers[0]
    started = time.monotonic()
    probe = await BrokerProbe.open(broker.addr)
    await probe.create_topic(TOPIC, QUEUES)
    sent = await probe.send(TOPIC, b"offset target", queue_id=1)
    async with Admin(namesrv_addr=cluster.namesrv_addr, instance_name="power-loss-admin") as admin:
        await admin.update_subscription_group("PowerLossGroup", broker_addr=broker.addr)
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group="PowerLossGroup", topic=TOPIC, queue_id=1, commit_offset=sent.queue_offset + 1
    )
    response = await probe.conn.call(RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext_fields())
    assert response.code == ResponseCode.SUCCESS, response.remark
    await probe.close()
    persisted: dict[str, float] = {}

    def synced(name: str, needle: str) -> bool:
        if (
            name not in persisted
            and _has(power_fs, name, needle)
            and power_fs.unsynced_pages("/store/config") == 0
        ):
            persisted[name] = time.monotonic() - started
        return name in persisted

    await wait_for(
        lambda: synced("topics.json", TOPIC), timeout_s=30, what="topics.json with the topic, synced"
    )
    await wait_for(
        lambda: synced("subscriptionGroup.json", "PowerLossGroup"), timeout_s=30, what="the group, synced"
    )
    await wait_for(
        lambda: synced("consumerOffset.json", f"{TOPIC}@PowerLossGroup"),
        timeout_s=30,
        what="the offset, synced",
    )
    pages, _ready_s = await _kill_and_lose_power(broker, power_fs)
    assert _has(power_fs, "topics.json", TOPIC)
    assert _has(power_fs, "subscriptionGroup.json", "PowerLossGroup")
    offsets = _config(power_fs, "consumerOffset.json").get("offsetTable", {})
    assert (
        isinstance(offsets, dict)
        and offsets.get(f"{TOPIC}@PowerLossGroup", {}).get("1") == sent.queue_offset + 1
    )
    assert await _read_all(broker.addr) == {(1, sent.queue_offset): b"offset target"}
    print(
        "\npower loss, config files: synced after "
        + ", ".join(f"{name} {seconds:.1f}s" for name, seconds in persisted.items())
        + f" (from the admin calls); all three survived, {pages} unsynced pages undone"
    )
