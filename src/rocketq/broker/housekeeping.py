"""Client housekeeping: connection events and the silent-client scan, and broker -> client notices.

Ports of org.apache.rocketmq.broker.client.ClientHousekeepingService (a closed, failed or idle
connection leaves every producer and consumer group at once; a scan every 10 s drops clients silent
for 120 s and closes their connections) and of Broker2Client.notifyConsumerIdsChanged (a oneway
NOTIFY_CONSUMER_IDS_CHANGED to each member of a group whose membership changed).
"""

from __future__ import annotations

import logging
from typing import Any

from rocketq.broker.clients import ConsumerManager, ProducerManager
from rocketq.broker.subscription_group import SubscriptionGroupManager
from rocketq.common.errors import RocketQError
from rocketq.common.service import spawn
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.client import NotifyConsumerIdsChangedRequestHeader
from rocketq.remoting.transport import ConnectionListener, RemotingServer

log = logging.getLogger("rocketq.broker.clients")


class ClientHousekeepingService(ConnectionListener):
    def __init__(
        self, producers: ProducerManager, consumers: ConsumerManager, groups: SubscriptionGroupManager
    ) -> None:
        self._producers = producers
        self._consumers = consumers
        self._groups = groups

    def _notify_for(self, group: str) -> bool:
        config = self._groups.subscription_group_table.get(group)
        return config is None or config.notify_consumer_ids_changed_enable

    def _gone(self, conn: Any) -> None:
        self._producers.do_channel_close_event(conn.id)
        self._consumers.do_channel_close_event(conn.id, self._notify_for)

    def on_close(self, conn: Any) -> None:
        self._gone(conn)

    def on_exception(self, conn: Any) -> None:
        self._gone(conn)

    def on_idle(self, conn: Any) -> None:
        self._gone(conn)

    async def scan_not_active_channels(self) -> None:
        for conn in self._producers.scan_not_active_channel() + self._consumers.scan_not_active_channel():
            try:
                conn.close("client silent past the expiry")
            except Exception:  # a connection already gone is fine
                log.debug("closing an expired client connection failed", exc_info=True)


class Broker2Client:
    """Requests the broker sends to clients over their own connections."""

    def __init__(self, server: RemotingServer, enabled: bool = True) -> None:
        self._server = server
        self.enabled = enabled

    async def call_client(self, conn: Any, request: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        """A request answered by the client (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY)."""
        return await self._server.invoke_sync(conn, request, timeout_ms)

    async def tell_client(self, conn: Any, request: RemotingCommand) -> None:
        """A oneway request to the client (RESET_CONSUMER_CLIENT_OFFSET); 5 s to write it, as Java."""
        await self._server.invoke_oneway(conn, request, 5000)

    def notify_consumer_ids_changed(self, group: str, conns: list[Any]) -> None:
        if not self.enabled:
            return
        header = NotifyConsumerIdsChangedRequestHeader(consumer_group=group).to_ext_fields()
        for conn in conns:
            if conn.is_active:
                spawn(f"notify-{group}", self._notify(conn, group, header))

    async def _notify(self, conn: Any, group: str, header: dict[str, str]) -> None:
        request = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, dict(header), oneway=True)
        try:
            await self._server.invoke_oneway(conn, request)
        except RocketQError as exc:
            log.info("notifying %s of a change in group %s failed: %s", conn, group, exc)
