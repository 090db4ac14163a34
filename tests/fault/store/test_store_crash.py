"""kill -9 during a stream of appends, then reopen: every acknowledged message is there, byte for byte,
and nothing half-written is readable. The writer runs in a child process (crash_writer.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from rocketq.common.record.check import RecordCheck, check_record
from rocketq.common.record.codec import decode_record
from rocketq.store.config import MessageStoreConfig
from rocketq.store.message_store import MessageStore
from rocketq.store.status import GetMessageStatus

WRITER = Path(__file__).with_name("crash_writer.py")


def run_and_kill(
    root: Path, flush_type: str, writers: int, kill_after: int, first_seq: int = 0
) -> dict[int, tuple[int, ...]]:
    """Start the writer, SIGKILL it after `kill_after` acknowledgements; returns seq -> ACK fields."""
    child = subprocess.Popen(
        [sys.executable, str(WRITER), str(root), flush_type, str(writers), str(first_seq)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acks: dict[int, tuple[int, ...]] = {}
    deadline = time.monotonic() + 45
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        assert first.strip() == "READY", first + (child.stderr.read() if child.stderr else "")
        for line in child.stdout:
            parts = line.split()
            assert parts[0] == "ACK", line
            acks[int(parts[1])] = tuple(int(p) for p in parts[2:])
            if len(acks) >= kill_after or time.monotonic() > deadline:
                os.kill(child.pid, signal.SIGKILL)
                break
        # Lines already in the pipe were acknowledged before the kill: they count too.
        for line in child.stdout:
            parts = line.split()
            if len(parts) == 7 and parts[0] == "ACK":
                acks[int(parts[1])] = tuple(int(p) for p in parts[2:])
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
    assert child.returncode == -signal.SIGKILL
    return acks


def reopen(root: Path) -> MessageStore:
    config = MessageStoreConfig.build(
        {
            "storePathRootDir": str(root),
            "mappedFileSizeCommitLog": 64 * 1024,
            "mappedFileSizeConsumeQueue": 20 * 64,
            "maxMessageSize": 8192,
            "maxHashSlotNum": 128,
            "maxIndexNum": 1024,
        }
    )
    store = MessageStore(config)
    store.open()
    return store


def check_everything(store: MessageStore, acks: dict[int, tuple[int, ...]]) -> None:
    assert store.recovery is not None and store.recovery.abnormal
    for seq, (offset, size, queue_id, queue_offset, crc) in acks.items():
        record = store.select_one_message_by_offset(offset)
        assert record is not None and len(record) == size, seq
        assert zlib.crc32(record) == crc, f"message {seq} at {offset} differs"
        assert store.get_commit_log_offset_in_queue("CrashTopic", queue_id, queue_offset) == offset
        msg, _ = decode_record(record)
        assert msg.properties["UNIQ_KEY"] == f"U{seq}"
    # Every record the queues point at is whole (CRC-valid), acknowledged or not.
    for queue_id in range(4):
        offset = store.get_min_offset_in_queue("CrashTopic", queue_id)
        while True:
            got = store.get_message("g", "CrashTopic", queue_id, offset, 32)
            for record in got.records:
                assert check_record(record, 0, len(record)).kind is RecordCheck.VALID
            if got.status is not GetMessageStatus.FOUND:
                assert got.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
                break
            offset = got.next_begin_offset
    # And the commit log holds only whole records up to its end.
    phys = store.get_min_phy_offset()
    while phys < store.get_max_phy_offset():
        mapped = store.commit_log.queue.find(phys)
        assert mapped is not None
        checked = check_record(mapped.mm, phys - mapped.file_from_offset, mapped.file_size)
        assert checked.kind in (RecordCheck.VALID, RecordCheck.BLANK), (phys, checked.problem)
        phys += checked.size
    # The store takes new messages where the log ends.
    for seq in list(acks)[:3]:
        assert len(store.query_message("CrashTopic", f"U{seq}", 4, 0, 2**62).records) == 1


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("flush_type", "writers", "kill_after"),
    [("SYNC_FLUSH", 1, 400), ("SYNC_FLUSH", 16, 1500), ("ASYNC_FLUSH", 1, 2500), ("ASYNC_FLUSH", 8, 4000)],
)
def test_kill_9_loses_no_acknowledged_message(
    tmp_path: Path, flush_type: str, writers: int, kill_after: int
) -> None:
    root = tmp_path / "store"
    acks = run_and_kill(root, flush_type, writers, kill_after)
    assert len(acks) >= kill_after
    store = reopen(root)
    try:
        check_everything(store, acks)
    finally:
        store.close()
    # A second kill after recovery: the recovered store recovers again.
    more = run_and_kill(root, flush_type, writers, 200, first_seq=max(acks) + 1000)
    store = reopen(root)
    try:
        check_everything(store, {**acks, **more})
    finally:
        store.close()
