"""Transactions as the controller sees them: one object to build, start (after the store) and stop.

Java builds TransactionalMessageService, its check listener and TransactionalMessageCheckService in
BrokerController.initialTransaction and starts the check service on a master only
(startProcessorByHa); so do we. Start rebuilds which half messages are settled from the op messages
(before the server takes requests), then starts checking.
"""

from __future__ import annotations

import logging

from rocketq.broker.context import BrokerContext
from rocketq.broker.transaction.check import SendOneway, TransactionalMessageCheckService
from rocketq.broker.transaction.service import TransactionalMessageService

log = logging.getLogger("rocketq.broker.transaction")


class Transactions:
    def __init__(self, ctx: BrokerContext, send_oneway: SendOneway | None) -> None:
        self.ctx = ctx
        self.service = TransactionalMessageService(ctx)
        self.check_service = TransactionalMessageCheckService(ctx, self.service, send_oneway)
        ctx.transaction_service = self.service
        self._checking = False

    async def start(self) -> None:
        await self.service.load()
        if self.ctx.broker_config.is_master and not self.ctx.store_config.is_slave:
            await self.check_service.start()
            self._checking = True

    async def shutdown(self) -> None:
        if self._checking:
            self._checking = False
            await self.check_service.shutdown()
