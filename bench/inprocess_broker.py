"""What the in-process benchmarks share: a real broker that is built but not started, and the little of
a client connection the processors read.

The broker is a BrokerController on a temporary store (no sockets, no NameServer): its processors,
context and metrics are the daemon's, so a benchmark measures what ships, not a test double. Only the
store is started (its flush, allocator and dispatch threads are part of every send's cost).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from rocketq.broker.config import BrokerConfig
from rocketq.broker.controller import BrokerController
from rocketq.store.config import MessageStoreConfig


class Connection:
    """What the send processor reads of a client's connection; the transport is left out (no socket)."""

    def __init__(self, remote_addr: str = "10.0.0.5:4321") -> None:
        self.remote_addr = remote_addr
        self.local_addr = "127.0.0.1:10911"
        self.is_active = True
        self.attributes: dict[str, Any] = {}


@asynccontextmanager
async def unstarted_broker(
    store_settings: Mapping[str, str] | None = None, **broker_settings: Any
) -> AsyncIterator[BrokerController]:
    """A BrokerController (broker settings by Java name, e.g. metricsExporterType="PROM") whose store runs
    in a temporary directory (ASYNC_FLUSH unless `store_settings` say otherwise), removed afterwards."""
    root = tempfile.mkdtemp(prefix="rocketq-bench-")
    settings = {"storePathRootDir": root, "flushDiskType": "ASYNC_FLUSH", **(store_settings or {})}
    broker = BrokerController(BrokerConfig(**broker_settings), MessageStoreConfig.build(settings))
    await broker.store.start()
    broker.store.add_arrival_listener(lambda *args: None)
    try:
        yield broker
    finally:
        await broker.store.shutdown()
        shutil.rmtree(root, ignore_errors=True)
