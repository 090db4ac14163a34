"""After kill -9, recovery starts near the end of the commit log, not at its start.

The checkpoint's consume-queue offset (how far every unit is durable) advances every queue flush round
(flushIntervalConsumeQueue, 1 s), to the record of the first unit not yet flushed, instead of only on
the thorough flush every flushConsumeQueueThoroughInterval (60 s): a broker killed within its first
minute used to re-dispatch every record from offset 0. The test waits until the checkpoint file says
the queues are durable past most of what was sent, kills the broker, and reads the recovery report
the restarted broker logs: the records re-dispatched are the few sent after that point.

Soak (ROCKETQ_SOAK=1): the time from kill -9 to READY with a 1 GiB commit log (printed; a measurement).
"""

from __future__ import annotations

import re
import struct
import time
from pathlib import Path

import pytest

from rocketq.testing.broker_probe import BrokerProbe
from rocketq.testing.cluster import BrokerProcess
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.raw_sender import RawSender
from rocketq.testing.waiting import wait_for
from rocketq.testing.wire import RawConnection

TOPIC = "RecoveryStart"
QUEUES = 4
# A round flushes a queue only once flushConsumeQueueLeastPages (2) pages of it are dirty, so each queue
# may hold the checkpoint back by up to 2 pages of units (409 units), records of the other queues between.
UNITS_HELD_BACK = QUEUES * 2 * 4096 // 20
_CHECKPOINT = struct.Struct(">qqqqqq")  # 3 Java timestamps, then commit-log, queue and index offsets
_REPORT = re.compile(r"recovered after a crash: RecoveryReport\((.*?)\)$", re.M)


def checkpoint_offsets(store_dir: Path) -> tuple[int, int, int]:
    """(commit log, consume queues, index) durable offsets from the store's checkpoint file."""
    raw = (store_dir / "checkpoint").read_bytes()[: _CHECKPOINT.size]
    _pts, _lts, _its, physic, logics, index = _CHECKPOINT.unpack(raw)
    return physic, logics, index


def last_recovery(broker: BrokerProcess) -> dict[str, str]:
    found = _REPORT.findall(broker.log_text())
    assert found, "the restarted broker logged no recovery after a crash"
    return dict(part.split("=", 1) for part in found[-1].split(", "))


async def _sent_and_killed(broker: BrokerProcess, count: int, body_size: int, timeout_s: float) -> int:
    """Send `count` messages, wait until the checkpoint vouches for three quarters of the log, kill -9;
    returns the commit-log end before the kill."""
    probe = await BrokerProbe.open(broker.addr)
    await probe.create_topic(TOPIC, QUEUES)
    await probe.close()
    conn = await RawConnection.open(broker.addr, 30)
    sender = RawSender(conn, TOPIC, QUEUES, body_size=body_size)
    sent = await sender.send(count, window=64, timeout_s=timeout_s)
    await conn.close()
    assert len(sender.acked) == sent == count, f"{len(sender.acked)} of {sent} sends acknowledged"
    # The commit log holds at least the bodies; wait until its flushed offset covers them all, so that `end`
    # is the end of the log (a flush still on its way would make it a point early in the log).
    bodies = count * body_size
    await wait_for(
        lambda: checkpoint_offsets(broker.store_dir)[0] >= bodies, timeout_s=15, what="the whole log flushed"
    )
    end = checkpoint_offsets(broker.store_dir)[0]
    await wait_for(
        lambda: min(checkpoint_offsets(broker.store_dir)) >= 0.75 * end,
        timeout_s=20,
        what="the checkpoint's queue and index offsets near the end of the commit log",
    )
    broker.kill()
    assert await broker.wait_exit(10) is not None
    return end


@pytest.mark.timeout(120)
async def test_recovery_after_kill_9_starts_near_the_end(cluster_factory: ClusterFactory) -> None:
    count = 12_000  # 2 KiB bodies: about 25 MB, two 16 MiB commit-log files
    cluster = await cluster_factory()
    broker = cluster.brokers[0]
    await _sent_and_killed(broker, count, 2048, timeout_s=60)
    await broker.restart()
    report = last_recovery(broker)
    redispatched, scanned = int(report["records_redispatched"]), int(report["records_scanned"])
    print(
        f"\nkill -9 after {count} sends: recovery scanned {scanned} records from offset "
        f"{report['scanned_from']} and re-dispatched {redispatched}"
    )
    assert redispatched <= 2 * UNITS_HELD_BACK, f"recovery re-dispatched {redispatched} of {count} records"
    assert scanned < count, f"recovery scanned {scanned} records, the whole log"


@pytest.mark.soak
@pytest.mark.timeout(600)
async def test_time_to_ready_after_kill_9_with_a_1_gib_commit_log(cluster_factory: ClusterFactory) -> None:
    count = 65_536  # 16 KiB bodies: 1 GiB
    cluster = await cluster_factory(broker_overrides={"mappedFileSizeCommitLog": 1 << 30})
    broker = cluster.brokers[0]
    end = await _sent_and_killed(broker, count, 16384, timeout_s=400)
    started = time.monotonic()
    await broker.restart()
    ready_s = time.monotonic() - started
    report = last_recovery(broker)
    print(
        f"\nkill -9 with a {end / (1 << 30):.2f} GiB commit log ({count} records of 16 KiB, 1 GiB files): "
        f"READY {ready_s:.2f}s after the restart; recovery scanned {report['records_scanned']} records, "
        f"re-dispatched {report['records_redispatched']}"
    )
