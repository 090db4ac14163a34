"""Torn and corrupt store tails written by hand, then a broker restart on the same store (docs/fault-tests.md).

Messages are written through a live broker, which is then stopped (SIGTERM, or kill -9) and its
files damaged by hand: the last commit-log record torn in the middle (zeros from mid-record, what a
write cut short leaves in a preallocated file) or corrupted (one body byte changed, so its CRC
fails); the last consume-queue unit torn (size and tags never written) or overwritten (pointing into
the middle of another record). The broker must start on that store, serve every message before the
damage as the very same record bytes, and deliver nothing corrupt: every pull body must split into
whole records whose body CRC holds. New messages then go where the surviving ones end.

Damage that cannot be a torn tail (a commit-log file cut shorter than its mapped size; a damaged
record with valid records after it) must stop the start-up with one line naming the file, as the
store refuses to drop acknowledged messages (tests/unit/store covers the same rules without a daemon).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocketq.common.message import MessageExt
from rocketq.common.record.codec import decode_record
from rocketq.common.record.layout import MESSAGE_MAGIC_CODE, body_crc
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.store.consume_queue import CQ_UNIT
from rocketq.testing.broker_probe import SMALL_STORE_OVERRIDES, BrokerProbe
from rocketq.testing.cluster import BrokerProcess, DaemonStartError
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.waiting import wait_for

TOPIC = "Damaged"
QUEUES = 2
MESSAGES = 40
COMMIT_LOG_FILE_SIZE = int(SMALL_STORE_OVERRIDES["mappedFileSizeCommitLog"])  # type: ignore[call-overload]
CQ_UNIT_SIZE = CQ_UNIT.size


@dataclass(frozen=True)
class Stored:
    """One message as the broker served it before the damage."""

    queue_id: int
    queue_offset: int
    phys_offset: int
    size: int
    record: bytes  # the stored record, byte for byte
    body_at: int  # where the body starts in the record


def split_records(body: bytes) -> list[tuple[MessageExt, bytes]]:
    """Every record of a pull body; AssertionError if any byte of it is not part of a sound record."""
    out = []
    pos = 0
    while pos < len(body):
        assert len(body) - pos >= 8, f"{len(body) - pos} stray bytes at the end of a pull body"
        size = int.from_bytes(body[pos : pos + 4], "big", signed=True)
        magic = int.from_bytes(body[pos + 4 : pos + 8], "big", signed=True)
        assert magic == MESSAGE_MAGIC_CODE and 0 < size <= len(body) - pos, f"not a record at {pos}"
        msg, end = decode_record(body, pos)
        assert end == pos + size, f"record at {pos} says {size} bytes but decodes to {end - pos}"
        assert body_crc(msg.body) == msg.body_crc, f"record at {pos} fails its body CRC"
        out.append((msg, body[pos:end]))
        pos = end
    return out


async def served(probe: BrokerProbe, queue_id: int) -> list[tuple[MessageExt, bytes]]:
    """Everything a consumer gets from the queue, each pull body checked record by record."""
    records: list[tuple[MessageExt, bytes]] = []
    offset = 0
    for _ in range(1000):
        response = await probe.pull(TOPIC, queue_id, offset)
        if response.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_OFFSET_MOVED):
            return records
        assert response.code == ResponseCode.SUCCESS, (
            f"pull {queue_id}@{offset}: {response.code} {response.remark}"
        )
        records.extend(split_records(response.body))
        offset = int((response.ext_fields or {})["nextBeginOffset"])
    raise AssertionError("the queue never ended")


async def write_messages(broker: BrokerProcess) -> list[Stored]:
    rng = random.Random(2)
    probe = await BrokerProbe.open(broker.addr, topic="Bystander")
    await probe.create_topic(TOPIC, QUEUES)
    for i in range(MESSAGES):
        body = b"%04d:" % i + rng.randbytes(rng.randrange(50, 1500))
        await probe.send(TOPIC, body, {"KEYS": f"k{i}", "TAGS": "TagA"}, queue_id=i % QUEUES)
    stored = []
    for queue_id in range(QUEUES):
        for msg, raw in await served(probe, queue_id):
            body_at = raw.index(msg.body)
            stored.append(
                Stored(queue_id, msg.queue_offset, msg.commit_log_offset, msg.store_size, raw, body_at)
            )
    await probe.close()
    assert len(stored) == MESSAGES
    # The topic must be on disk before a kill -9 (its loss is a separate finding: test_crash_config.py).
    topics = broker.store_dir / "config" / "topics.json"
    await wait_for(lambda: TOPIC in topics.read_text(), what=f"{TOPIC} in {topics}")
    return sorted(stored, key=lambda s: s.phys_offset)


def patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(position)
        fh.write(data)


def commit_log_file(broker: BrokerProcess, phys_offset: int) -> tuple[Path, int]:
    start = phys_offset - phys_offset % COMMIT_LOG_FILE_SIZE
    return broker.store_dir / "commitlog" / f"{start:020d}", phys_offset - start


def consume_queue_file(broker: BrokerProcess, queue_id: int) -> Path:
    files = sorted((broker.store_dir / "consumequeue" / TOPIC / str(queue_id)).iterdir())
    return files[-1]


def damage(broker: BrokerProcess, kind: str, stored: list[Stored]) -> Stored:
    """Damage the store; returns the message whose record or unit was damaged."""
    last = stored[-1]
    if kind.startswith("commitlog"):
        path, pos = commit_log_file(broker, last.phys_offset)
        if kind == "commitlog-torn":
            middle = last.size // 2
            patch(path, pos + middle, bytes(last.size - middle))
        else:  # commitlog-crc: one byte in the middle of the body changed, nothing else
            at = last.body_at + 20
            patch(path, pos + at, bytes([last.record[at] ^ 0x5A]))
        return last
    victim = max((s for s in stored if s.queue_id == 1), key=lambda s: s.queue_offset)
    unit_pos = victim.queue_offset * CQ_UNIT_SIZE
    path = consume_queue_file(broker, 1)
    if kind == "cq-torn":  # the physical offset reached the disk, size and tags did not
        patch(path, unit_pos + 8, bytes(CQ_UNIT_SIZE - 8))
    else:  # cq-garbage: the unit points into the middle of another record, same size
        other = stored[len(stored) // 2]
        patch(path, unit_pos, (other.phys_offset + 17).to_bytes(8, "big"))
    return victim


async def stop(broker: BrokerProcess, how: str) -> None:
    if how == "sigterm":
        assert await broker.stop() == 0
    else:
        broker.kill()
        assert await broker.wait_exit(10) is not None


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
@pytest.mark.parametrize("kind", ["commitlog-torn", "commitlog-crc", "cq-torn", "cq-garbage"])
async def test_a_damaged_tail_is_cut_and_everything_before_it_is_served(
    cluster_factory: ClusterFactory, how: str, kind: str
) -> None:
    cluster = await cluster_factory(namesrv_count=0, broker_overrides=SMALL_STORE_OVERRIDES)
    broker = cluster.brokers[0]
    stored = await write_messages(broker)
    await stop(broker, how)
    victim = damage(broker, kind, stored)
    await broker.start()  # same store, same options

    probe = await BrokerProbe.open(broker.addr, topic="Bystander")
    try:
        for queue_id in range(QUEUES):
            got = await served(probe, queue_id)
            expected = [s for s in stored if s.queue_id == queue_id]
            before = [
                s for s in expected if (s.queue_id, s.queue_offset) < (victim.queue_id, victim.queue_offset)
            ]
            if queue_id != victim.queue_id:
                before = expected
            records = [raw for _, raw in got]
            assert records[: len(before)] == [s.record for s in before], (
                f"queue {queue_id} lost or changed messages"
            )
            rest = records[len(before) :]
            if queue_id == victim.queue_id:
                # the damaged message is gone, or (a queue rebuilt from the log) served intact
                assert rest in ([], [victim.record]), (
                    f"queue {queue_id} served {len(rest)} unexpected records"
                )
            else:
                assert rest == []
        # the broker goes on where the surviving messages end
        survivors = await probe.max_offset(TOPIC, victim.queue_id)
        assert survivors in (victim.queue_offset, victim.queue_offset + 1)
        sent = await probe.send(TOPIC, b"after the damage", queue_id=victim.queue_id)
        assert sent.queue_offset == survivors
        after = await served(probe, victim.queue_id)
        assert after[-1][0].body == b"after the damage"
        await probe.roundtrip()
    finally:
        await probe.close()


@pytest.mark.parametrize("kind", ["file-cut-short", "damage-with-valid-records-after"])
async def test_damage_that_is_not_a_torn_tail_stops_the_start_with_one_line(
    cluster_factory: ClusterFactory, kind: str
) -> None:
    cluster = await cluster_factory(namesrv_count=0, broker_overrides=SMALL_STORE_OVERRIDES)
    broker = cluster.brokers[0]
    stored = await write_messages(broker)
    assert await broker.stop() == 0
    path, pos = commit_log_file(broker, stored[-1].phys_offset)
    if kind == "file-cut-short":
        os.truncate(path, pos + stored[-1].size // 2)  # a torn write that also lost the file's length
    else:
        middle = stored[len(stored) // 2]
        _, middle_pos = commit_log_file(broker, middle.phys_offset)
        at = middle.body_at + 20
        patch(path, middle_pos + at, bytes([middle.record[at] ^ 0xFF]))
    with pytest.raises(DaemonStartError) as info:
        await broker.start()
    assert broker.returncode not in (0, None)
    last_line = broker.log_text().strip().splitlines()[-1]
    assert last_line.startswith("rocketq broker:") and path.name in last_line, last_line
    assert "Traceback" not in broker.log_text()
    assert path.name in str(info.value)
