"""The HA wire protocol on loopback, each side against a hand-written peer (RocketMQ 4.9.8 HAConnection /
HAClient): what the master sends a slave that reports 0 or an offset, frame sizes, heartbeats, acks
releasing SYNC_MASTER waits; what the slave reports, and that a frame at the wrong offset makes it
reconnect."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.store.config import MessageStoreConfig
from rocketq.store.ha.codec import FRAME_HEADER, OFFSET, encode_frame
from rocketq.store.ha.master import HAService
from rocketq.store.ha.slave import HAClient
from rocketq.store.message import BrokerMessage
from rocketq.store.message_store import MessageStore
from rocketq.store.status import PutMessageStatus
from rocketq.testing.waiting import wait_for

pytestmark = pytest.mark.timeout(60)

FILE = 64 * 1024
BATCH = 4096


def _config(root: Path, **extra: Any) -> MessageStoreConfig:
    return MessageStoreConfig.build(
        {
            "storePathRootDir": str(root), "mappedFileSizeCommitLog": FILE, "mappedFileSizeConsumeQueue": 20 * 1000,
            "mappedFileReserveAhead": 0, "haTransferBatchSize": BATCH, "haSendHeartbeatInterval": 200,
            "haHousekeepingInterval": 3000, "maxHashSlotNum": 64, "maxIndexNum": 1024, **extra,
        }
    )  # fmt: skip


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[list[MessageStore]]:
    opened: list[MessageStore] = []
    yield opened
    for store in opened:
        await store.shutdown()


async def _store(stores: list[MessageStore], root: Path, **extra: Any) -> MessageStore:
    store = MessageStore(_config(root, **extra))
    await store.start()
    stores.append(store)
    return store


async def _fill(store: MessageStore, count: int, size: int = 900) -> None:
    for i in range(count):
        msg = BrokerMessage("WireTopic", i % 2, bytes([i % 251]) * size, properties={"KEYS": f"w{i}"})
        assert (await store.put_message(msg)).status is PutMessageStatus.PUT_OK


class FakeSlave:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, port: int) -> FakeSlave:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    def report(self, offset: int) -> None:
        self.writer.write(OFFSET.pack(offset))

    async def frame(self) -> tuple[int, bytes]:
        offset, size = FRAME_HEADER.unpack(await asyncio.wait_for(self.reader.readexactly(12), 10))
        return offset, await asyncio.wait_for(self.reader.readexactly(size), 10)

    async def close(self) -> None:
        self.writer.close()


async def test_the_master_streams_from_the_last_file_to_an_empty_slave_in_batches(
    stores: list[MessageStore], tmp_path: Path
) -> None:
    master = await _store(stores, tmp_path / "m")
    await _fill(master, 150)  # > 2 files of 64 KiB
    end = master.get_max_phy_offset()
    ha = HAService(master, port=0)
    await ha.start()
    slave = await FakeSlave.connect(ha.port)
    try:
        slave.report(0)
        offset, body = await slave.frame()
        assert offset == end - end % FILE and 0 < len(body) <= BATCH
        at, got = offset, bytearray(body)
        while at + len(got) < end:
            offset, body = await slave.frame()
            assert offset == at + len(got) and len(body) <= BATCH
            got += body
        assert bytes(got) == master.read_commit_log(at, FILE)
        offset, body = await slave.frame()  # idle: a heartbeat naming where the next data starts
        assert (offset, body) == (end, b"")
        waiter = asyncio.ensure_future(ha.wait_for_slave(end, 5000))
        await asyncio.sleep(0)
        assert not waiter.done()
        slave.report(end)  # the ack releases a SYNC_MASTER put waiting for `end`
        assert await asyncio.wait_for(waiter, 5) is True and ha.push2slave_max_offset == end
        assert not await ha.wait_for_slave(end + 1, 100)  # nobody acks past the end: FLUSH_SLAVE_TIMEOUT
        assert ha.is_slave_ok(end + 1)
    finally:
        await slave.close()
        await ha.shutdown()


async def test_the_master_streams_from_the_offset_a_slave_reports(
    stores: list[MessageStore], tmp_path: Path
) -> None:
    master = await _store(stores, tmp_path / "m")
    await _fill(master, 20)
    ha = HAService(master, port=0)
    await ha.start()
    slave = await FakeSlave.connect(ha.port)
    try:
        slave.report(1000)
        offset, body = await slave.frame()
        assert offset == 1000 and body == master.read_commit_log(1000, BATCH)
        await _fill(master, 1)  # new data is sent without waiting for the poll
        got = bytearray(body)
        while 1000 + len(got) < master.get_max_phy_offset():
            offset, body = await slave.frame()
            got += body
        assert bytes(got) == master.read_commit_log(1000, FILE)
        slave.report(master.get_max_phy_offset() + 1)  # an ack past the end: the master closes
        await asyncio.wait_for(slave.reader.read(), 10)  # to the end: heartbeats, then the close
        assert slave.reader.at_eof()
        await wait_for(lambda: ha.connection_count == 0, timeout_s=10, what="the connection dropped")
    finally:
        await slave.close()
        await ha.shutdown()


async def test_the_slave_reports_appends_and_reconnects_on_a_wrong_offset(
    stores: list[MessageStore], tmp_path: Path
) -> None:
    master = await _store(stores, tmp_path / "m")
    await _fill(master, 10)
    data = master.read_commit_log(0, FILE) or b""
    slave_store = await _store(stores, tmp_path / "s", brokerRole="SLAVE")
    sessions: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await sessions.put((reader, writer))

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    client = HAClient(slave_store, f"127.0.0.1:{server.sockets[0].getsockname()[1]}")
    await client.start()
    try:
        reader, writer = await asyncio.wait_for(sessions.get(), 10)
        (first,) = struct.unpack(">q", await asyncio.wait_for(reader.readexactly(8), 10))
        assert first == 0  # an empty slave
        writer.write(encode_frame(0, data[:100]) + encode_frame(100, data[100:]))
        while True:  # reports until it has it all
            (reported,) = struct.unpack(">q", await asyncio.wait_for(reader.readexactly(8), 10))
            if reported == len(data):
                break
        assert slave_store.get_max_offset_in_queue("WireTopic", 0) == 5
        (heartbeat,) = struct.unpack(">q", await asyncio.wait_for(reader.readexactly(8), 10))
        assert heartbeat == len(data)  # every haSendHeartbeatInterval
        writer.write(encode_frame(len(data) + 8, b"gap"))  # not where the slave's log ends
        assert await asyncio.wait_for(reader.read(), 10) == b""  # the slave closed ...
        reader2, writer2 = await asyncio.wait_for(sessions.get(), 10)  # ... and came back
        (again,) = struct.unpack(">q", await asyncio.wait_for(reader2.readexactly(8), 10))
        assert again == len(data) and slave_store.get_max_phy_offset() == len(data)
        writer2.close()
        writer.close()
    finally:
        await client.shutdown()
        server.close()
