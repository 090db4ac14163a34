"""SlaveSynchronize: a slave copies its master's tables every 10 s (first 3 s after start).

Port of org.apache.rocketmq.broker.slave.SlaveSynchronize (4.9.8): GET_ALL_TOPIC_CONFIG and
GET_ALL_SUBSCRIPTIONGROUP_CONFIG replace the local table when the master's data version differs;
GET_ALL_CONSUMER_OFFSET is merged over the local offsets (the master's win); GET_ALL_DELAY_OFFSET
becomes the local delay progress. Each is persisted. The master's address comes from the NameServer's
registration answer (none while the master is down: nothing is synchronized then). A failed call is
logged and the next one still runs.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.common.errors import RocketQError
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.register import DataVersion
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport import RemotingClient

log = logging.getLogger("rocketq.broker.slave")

SYNC_INTERVAL_S = 10.0
FIRST_SYNC_DELAY_S = 3.0
TIMEOUT_MS = 3000


class SlaveSynchronize:
    def __init__(self, ctx: BrokerContext, client: RemotingClient) -> None:
        self.ctx = ctx
        self.client = client
        self.master_addr: str | None = None
        self.rounds = 0  # complete rounds so far (tests wait on it)

    async def sync_all(self) -> None:
        addr = self.master_addr
        if not addr or addr == self.ctx.broker_addr:
            return
        for what, step in (
            ("topic configs", self._sync_topic_config),
            ("consumer offsets", self._sync_consumer_offset),
            ("delay offsets", self._sync_delay_offset),
            ("subscription groups", self._sync_subscription_group),
        ):
            try:
                await step(addr)
            except (RocketQError, ValueError, TypeError, AttributeError) as exc:
                log.warning("copying the %s of master %s failed: %s", what, addr, exc)
        self.rounds += 1

    async def _fetch(self, addr: str, code: int) -> Any:
        response = await self.client.invoke_sync(addr, RemotingCommand.request(code, {}), TIMEOUT_MS)
        if response.code != ResponseCode.SUCCESS:
            raise ValueError(f"request {code} answered {response.code} {response.remark}")
        return fastjson.loads(response.body) if response.body else None

    async def _sync_topic_config(self, addr: str) -> None:
        manager = self.ctx.topic_config_manager
        await self._sync_versioned(
            addr, RequestCode.GET_ALL_TOPIC_CONFIG, manager, manager.topic_config_table, "topic configs"
        )

    async def _sync_consumer_offset(self, addr: str) -> None:
        data = await self._fetch(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        manager = self.ctx.consumer_offset_manager
        if data is None:
            return
        merged = dict(manager.offset_table)
        manager.decode(data)  # the master's table, parsed
        merged.update(manager.offset_table)
        manager.offset_table = merged
        manager.mark_dirty(urgent=False)

    async def _sync_delay_offset(self, addr: str) -> None:
        data = await self._fetch(addr, RequestCode.GET_ALL_DELAY_OFFSET)
        service = self.ctx.schedule_service
        if data is None or service is None:
            return
        service.offsets = {int(k): int(v) for k, v in (data.get("offsetTable") or {}).items()}
        service.persist()

    async def _sync_subscription_group(self, addr: str) -> None:
        manager = self.ctx.subscription_group_manager
        table = manager.subscription_group_table
        await self._sync_versioned(
            addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, manager, table, "subscription groups"
        )

    async def _sync_versioned(
        self, addr: str, code: int, manager: Any, table: dict[str, Any], what: str
    ) -> None:
        """A versioned table: replaced by the master's when the data versions differ (Java: clear, putAll)."""
        data = await self._fetch(addr, code)
        if data is None or DataVersion.from_json(data.get("dataVersion")) == manager.data_version:
            return
        table.clear()
        manager.decode(data)
        manager.mark_dirty(urgent=False)
        log.info("copied the %s of master %s", what, addr)
