"""UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201), DELETE_SUBSCRIPTIONGROUP (207).

Port of AdminBrokerProcessor.updateAndCreateSubscriptionGroup / getAllSubscriptionGroup /
deleteSubscriptionGroup (4.9.8; docs/protocol.md 2.12). The create body is a SubscriptionGroupConfig JSON
(missing fields take Java's defaults: retryQueueNums 1, retryMaxTimes 16, ...); a body without a group
name is SYSTEM_ERROR. Deleting may also remove the group's offsets (`removeOffset`). Java's
SubscriptionGroupManager persists subscriptionGroup.json before either request is answered, so a
kill -9 right after the answer keeps the change: both await the write here too.
"""

from __future__ import annotations

import logging

from rocketq.broker.config_file import ConfigFileManager
from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.admin import SubscriptionGroupConfig
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import BodyDecodeError
from rocketq.remoting.protocol.headers.admin import DeleteSubscriptionGroupRequestHeader

log = logging.getLogger("rocketq.broker.admin")


class SubscriptionAdminProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_and_create_subscription_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
        }

    def _not_on_slave(self) -> None:
        if self.ctx.store_config.is_slave:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, "Can't modify topic or subscription group from slave broker."
            )

    async def update_and_create_subscription_group(
        self, conn: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        self._not_on_slave()
        try:
            config = SubscriptionGroupConfig.decode(request.body)
        except BodyDecodeError as exc:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"the SubscriptionGroupConfig does not decode: {exc}"
            ) from None
        if not config.group_name:
            raise RequestError(ResponseCode.SYSTEM_ERROR, "the SubscriptionGroupConfig has no groupName")
        log.info("updateAndCreateSubscriptionGroup %s by %s", config, conn.remote_addr)
        manager = self.ctx.subscription_group_manager
        manager.update_subscription_group_config(config)
        await self._persist(manager, config.group_name)
        return ok(request)

    @staticmethod
    async def _persist(manager: ConfigFileManager, group: str) -> None:
        if not await manager.persist_changes():
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"the subscription group[{group}] could not be persisted (see the broker log)",
            )

    async def get_all_subscription_group(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=fastjson.dumps(self.ctx.subscription_group_manager.encode()))

    async def delete_subscription_group(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        self._not_on_slave()
        h = decode_header(DeleteSubscriptionGroupRequestHeader, request)
        log.info("deleteSubscriptionGroup %s by %s", h.group_name, conn.remote_addr)
        manager = self.ctx.subscription_group_manager
        if manager.delete_subscription_group_config(h.group_name):
            await self._persist(manager, h.group_name)
        if h.remove_offset:
            self.ctx.consumer_offset_manager.remove_offset(h.group_name)
        return ok(request)
