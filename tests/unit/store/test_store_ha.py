"""Replication without sockets: the HA frame codec, and a slave store fed the master's commit-log bytes
in arbitrary chunks (records split between frames) rebuilding queues and index, notifying listeners,
refusing gaps and overlaps, and recovering after a crash."""

from __future__ import annotations

import pytest
from tests.unit.store.conftest import Crash, MessageFactory, ReadAll, StoreFactory

from rocketq.store.ha.codec import (
    FRAME_HEADER_SIZE,
    Frame,
    FrameReader,
    HAProtocolError,
    OffsetReader,
    encode_frame,
    encode_frame_header,
    encode_offset,
)
from rocketq.store.message_store import MessageStore
from rocketq.store.status import PutMessageStatus

pytestmark = pytest.mark.timeout(30)


# -- codec --------------------------------------------------------------------------------------------
def test_offset_reports_are_8_bytes_big_endian_and_the_last_whole_one_counts() -> None:
    assert encode_offset(0x0102030405060708) == bytes(range(1, 9))
    reader = OffsetReader()
    assert reader.feed(encode_offset(5)[:3]) is None
    assert reader.feed(encode_offset(5)[3:] + encode_offset(9) + encode_offset(12)[:4]) == 9
    assert reader.feed(encode_offset(12)[4:]) == 12
    with pytest.raises(HAProtocolError):
        reader.feed(encode_offset(-1))


def test_frames_are_offset_size_body_and_come_out_whole_whatever_the_chunks() -> None:
    assert encode_frame_header(1, 2) == b"\x00" * 7 + b"\x01" + b"\x00\x00\x00\x02"
    assert FRAME_HEADER_SIZE == 12
    stream = encode_frame(100, b"abc") + encode_frame(103, b"") + encode_frame(103, b"x" * 1000)
    for chunk in (1, 5, 12, 13, 4096):
        reader = FrameReader()
        frames: list[Frame] = []
        for at in range(0, len(stream), chunk):
            frames += reader.feed(stream[at : at + chunk])
        assert frames == [Frame(100, b"abc"), Frame(103, b""), Frame(103, b"x" * 1000)]
        assert reader.buffered == 0
    with pytest.raises(HAProtocolError):
        FrameReader(max_body=10).feed(encode_frame_header(0, 11))
    with pytest.raises(HAProtocolError):
        FrameReader().feed(encode_frame_header(0, -1))


# -- a slave store fed by hand ------------------------------------------------------------------------
async def _fill(master: MessageStore, message: MessageFactory, count: int, *, start: int = 0) -> list[bytes]:
    bodies = []
    for i in range(start, start + count):
        body = f"body-{i}-".encode() * (1 + i % 7)
        bodies.append(body)
        result = await master.put_message(
            message("TopicHA", i % 2, body, tags=f"t{i % 3}", keys=f"k{i}", uniq=f"U{i:08d}")
        )
        assert result.status is PutMessageStatus.PUT_OK
    return bodies


def _replicate(master: MessageStore, slave: MessageStore, chunk: int, start: int | None = None) -> int:
    """Copy the master's bytes in frames of `chunk` bytes as the master's connection does; frames sent."""
    at = slave.get_max_phy_offset() if start is None else start
    frames = 0
    while True:
        data = master.read_commit_log(at, chunk)
        if not data:
            return frames
        slave.append_replica(at, bytes(data))
        at += len(data)
        frames += 1


@pytest.mark.parametrize("chunk", [7, 100, 1000, 32 * 1024])
async def test_a_slave_rebuilds_queues_and_index_from_bytes_split_anywhere(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll, tmp_path, chunk: int
) -> None:
    master = make_store(root=tmp_path / "master")
    slave = make_store(root=tmp_path / "slave", brokerRole="SLAVE")
    arrivals: list[tuple[str, int, int]] = []
    slave.add_arrival_listener(lambda topic, qid, offset, *_: arrivals.append((topic, qid, offset)))
    await _fill(master, message, 120)  # several 8 KiB commit-log files, with blank records at their ends
    assert len(master.commit_log.queue.files) > 2
    _replicate(master, slave, chunk, start=0)
    assert slave.get_max_phy_offset() == master.get_max_phy_offset()
    assert slave.dispatch_behind_bytes() == 0
    for qid in (0, 1):
        assert (
            slave.get_max_offset_in_queue("TopicHA", qid)
            == master.get_max_offset_in_queue("TopicHA", qid)
            == 60
        )
        assert read_all(slave, "TopicHA", qid) == read_all(master, "TopicHA", qid)
    assert sorted(arrivals) == sorted([("TopicHA", q, o) for q in (0, 1) for o in range(60)])
    found = slave.query_message("TopicHA", "k17", 10, 0, 1 << 62)
    assert len(found.records) == 1 and b"body-17-" in found.records[0]
    assert len(slave.query_message("TopicHA", "U00000042", 10, 0, 1 << 62).records) == 1


async def test_a_split_record_waits_for_its_rest(
    make_store: StoreFactory, message: MessageFactory, tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    master = make_store(root=tmp_path / "master")
    slave = make_store(root=tmp_path / "slave", brokerRole="SLAVE")
    await _fill(master, message, 1)
    data = bytes(master.read_commit_log(0, 1 << 20) or b"")
    slave.append_replica(0, data[:2])  # not even the record's size yet
    slave.append_replica(2, data[2:50])
    assert slave.get_max_offset_in_queue("TopicHA", 0) == 0 and slave.dispatch_behind_bytes() == 50
    slave.append_replica(50, data[50:])
    assert slave.get_max_offset_in_queue("TopicHA", 0) == 1 and slave.dispatch_behind_bytes() == 0
    assert not [r for r in caplog.records if r.levelname == "ERROR"], "a record on its way is not damage"


async def test_gaps_and_overlaps_are_refused(
    make_store: StoreFactory, message: MessageFactory, tmp_path
) -> None:
    master = make_store(root=tmp_path / "master")
    slave = make_store(root=tmp_path / "slave", brokerRole="SLAVE")
    await _fill(master, message, 3)
    data = bytes(master.read_commit_log(0, 1 << 20) or b"")
    slave.append_replica(0, data[:100])
    with pytest.raises(ValueError, match="ends at 100"):
        slave.append_replica(90, data[90:])  # overlap
    with pytest.raises(ValueError, match="ends at 100"):
        slave.append_replica(120, data[120:])  # gap
    with pytest.raises(ValueError, match="does not fit"):
        slave.append_replica(100, b"\0" * 9000)  # past the file's end
    assert slave.get_max_phy_offset() == 100


async def test_an_empty_slave_starts_at_the_masters_last_file(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll, tmp_path
) -> None:
    master = make_store(root=tmp_path / "master")
    await _fill(master, message, 120)
    end = master.get_max_phy_offset()
    last_file = end - end % master.config.mapped_file_size_commit_log_bytes
    slave = make_store(root=tmp_path / "slave", brokerRole="SLAVE")
    with pytest.raises(ValueError, match="file start"):
        slave.append_replica(last_file + 8, b"x")
    _replicate(master, slave, 1000, start=last_file)
    assert slave.get_min_phy_offset() == last_file and slave.get_max_phy_offset() == end
    tail = master.get_max_offset_in_queue("TopicHA", 0)
    assert slave.get_max_offset_in_queue("TopicHA", 0) == tail
    got = read_all(slave, "TopicHA", 0, slave.get_min_offset_in_queue("TopicHA", 0))
    assert got and got == read_all(master, "TopicHA", 0)[-len(got) :]
    slave.close()  # and it opens again from that file on
    again = make_store(root=tmp_path / "slave", brokerRole="SLAVE")
    assert again.get_min_phy_offset() == last_file and again.get_max_phy_offset() == end


async def test_a_crashed_slave_recovers_and_goes_on_where_it_ends(
    make_store: StoreFactory, message: MessageFactory, read_all: ReadAll, crash: Crash, tmp_path
) -> None:
    master = make_store(root=tmp_path / "master")
    slave = make_store(root=tmp_path / "slave", brokerRole="SLAVE")
    await _fill(master, message, 20)
    data = bytes(master.read_commit_log(0, 1 << 20) or b"")
    slave.append_replica(0, data[: len(data) - 100])  # the last record cut short in its body
    slave.flush()
    crash(slave)
    slave = make_store(root=tmp_path / "slave", brokerRole="SLAVE")
    assert slave.recovery is not None and slave.recovery.truncated_tail
    assert slave.get_max_offset_in_queue("TopicHA", 1) == 9  # the torn 20th record (queue 1) is gone
    _replicate(master, slave, 333)
    await _fill(master, message, 10, start=20)
    _replicate(master, slave, 333)
    assert slave.get_max_phy_offset() == master.get_max_phy_offset()
    for qid in (0, 1):
        assert read_all(slave, "TopicHA", qid) == read_all(master, "TopicHA", qid)


async def test_a_slave_refuses_puts_and_a_sync_master_without_slave_says_so(
    make_store: StoreFactory, message: MessageFactory, tmp_path
) -> None:
    slave = make_store(root=tmp_path / "slave", brokerRole="SLAVE")
    assert (await slave.put_message(message())).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    sync = make_store(root=tmp_path / "sync", brokerRole="SYNC_MASTER")
    assert (await sync.put_message(message())).status is PutMessageStatus.SLAVE_NOT_AVAILABLE
    no_wait = message(WAIT="false")
    assert (await sync.put_message(no_wait)).status is PutMessageStatus.PUT_OK


class _Acks:
    def __init__(self, ok: bool, acked: bool) -> None:
        self.ok, self.acked = ok, acked
        self.asked: list[int] = []

    def is_slave_ok(self, master_put_where: int) -> bool:
        return self.ok

    async def wait_for_slave(self, offset: int, timeout_ms: int) -> bool:
        self.asked.append(offset)
        return self.acked


async def test_a_sync_master_put_waits_for_the_slaves_ack(
    make_store: StoreFactory, message: MessageFactory, tmp_path
) -> None:
    sync = make_store(root=tmp_path / "sync", brokerRole="SYNC_MASTER", slaveTimeout=50)
    sync.ha = acks = _Acks(ok=True, acked=True)
    result = await sync.put_message(message())
    assert result.status is PutMessageStatus.PUT_OK and acks.asked == [sync.get_max_phy_offset()]
    acks.acked = False
    assert (await sync.put_message(message())).status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
    acks.ok = False
    assert (await sync.put_message(message())).status is PutMessageStatus.SLAVE_NOT_AVAILABLE


class _AckedUpTo(_Acks):
    """A slave that acknowledged everything below `upto` and nothing more arrives."""

    def __init__(self, upto: int) -> None:
        super().__init__(ok=True, acked=False)
        self.upto = upto

    async def wait_for_slave(self, offset: int, timeout_ms: int) -> bool:
        self.asked.append(offset)
        return offset <= self.upto


async def test_a_sync_master_list_of_puts_waits_once_and_answers_each_by_its_own_end(
    make_store: StoreFactory, message: MessageFactory, tmp_path
) -> None:
    sync = make_store(root=tmp_path / "sync", brokerRole="SYNC_MASTER", slaveTimeout=50)
    sync.ha = acks = _Acks(ok=True, acked=True)
    results = await sync.put_message_list([message(), message(), message(WAIT="false")])
    assert [r.status for r in results] == [PutMessageStatus.PUT_OK] * 3
    assert acks.asked == [results[1].append.wrote_offset + results[1].append.wrote_bytes]  # one wait
    # The slave has the first record of the next list only: the second times out, the first does not.
    size = results[0].append.wrote_bytes  # every message here makes a record of this size
    sync.ha = _AckedUpTo(sync.get_max_phy_offset() + size)
    first, second = await sync.put_message_list([message(), message()])
    assert (first.status, second.status) == (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
    sync.ha = None
    (alone,) = await sync.put_message_list([message()])
    assert alone.status is PutMessageStatus.SLAVE_NOT_AVAILABLE
