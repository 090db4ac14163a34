"""ProducerManager and ConsumerManager: which client connections belong to which group.

Ports of org.apache.rocketmq.broker.client.{ClientChannelInfo, ProducerManager, ConsumerManager,
ConsumerGroupInfo, DefaultConsumerIdsChangeListener, ClientHousekeepingService} (4.9.8). A connection
is identified by the transport's `conn.id`. Heartbeats register and refresh; a closed connection, an
UNREGISTER_CLIENT or 120 s of silence (scan every 10 s) remove. When a consumer group's membership or
its subscribed topics change, `on_consumer_ids_changed(group, conns)` is called with the group's
remaining connections: the controller sends each one NOTIFY_CONSUMER_IDS_CHANGED, so they rebalance
at once. Time comes from an injected Clock (monotonic ms).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from typing import Any

from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.remoting.protocol.bodies.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)

log = logging.getLogger("rocketq.broker.clients")

CHANNEL_EXPIRED_TIMEOUT_MS = 120_000

IdsChangedListener = Callable[[str, list[Any]], None]


class ClientChannelInfo:
    """One client connection as a group member: its id, language, version and last heartbeat."""

    __slots__ = ("client_id", "conn", "language", "last_update_ms", "version")

    def __init__(self, conn: Any, client_id: str, language: Any, version: int, now_ms: int) -> None:
        self.conn = conn
        self.client_id = client_id
        self.language = language
        self.version = version
        self.last_update_ms = now_ms

    @property
    def key(self) -> Any:
        return self.conn.id

    def __repr__(self) -> str:
        return f"ClientChannelInfo({self.client_id} @ {self.conn.remote_addr})"


class ConsumerGroupInfo:
    """A consumer group on this broker: its member connections and its subscription table."""

    def __init__(
        self,
        group: str,
        consume_type: ConsumeType,
        message_model: MessageModel,
        consume_from_where: ConsumeFromWhere,
        now_ms: int,
    ) -> None:
        self.group_name = group
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.subscription_table: dict[str, SubscriptionData] = {}
        self.channel_info_table: dict[Any, ClientChannelInfo] = {}
        self.last_update_ms = now_ms

    def all_client_ids(self) -> list[str]:
        return [info.client_id for info in self.channel_info_table.values()]

    def all_connections(self) -> list[Any]:
        return [info.conn for info in self.channel_info_table.values()]

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        return next((i for i in self.channel_info_table.values() if i.client_id == client_id), None)

    def find_subscription_data(self, topic: str) -> SubscriptionData | None:
        return self.subscription_table.get(topic)

    def update_channel(
        self,
        info: ClientChannelInfo,
        consume_type: ConsumeType,
        message_model: MessageModel,
        consume_from_where: ConsumeFromWhere,
        now_ms: int,
    ) -> bool:
        """Register or refresh a member; True when it is new to the group."""
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        old = self.channel_info_table.get(info.key)
        added = old is None
        if old is None or old.client_id != info.client_id:
            if old is not None:
                log.error(
                    "connection %s of group %s changed client id %s -> %s",
                    info.conn,
                    self.group_name,
                    old.client_id,
                    info.client_id,
                )
            else:
                log.info(
                    "new consumer of group %s (%s, %s): %s",
                    self.group_name,
                    consume_type,
                    message_model,
                    info,
                )
            self.channel_info_table[info.key] = info
            old = info
        self.last_update_ms = now_ms
        old.last_update_ms = now_ms
        return added

    def update_subscription(self, subs: Iterable[SubscriptionData], now_ms: int) -> bool:
        """Apply a heartbeat's subscriptions; True when a topic was added or removed.

        A topic already present is replaced only by a newer subVersion; topics the heartbeat does not
        carry are removed (the table follows the last heartbeat, Java ConsumerGroupInfo.updateSubscription).
        """
        changed = False
        topics: set[str] = set()
        for sub in subs:
            topics.add(sub.topic)
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                changed = True
                log.info("group %s subscribes %s: %s", self.group_name, sub.topic, sub.sub_string)
            elif sub.sub_version > old.sub_version:
                if old.sub_string != sub.sub_string:
                    log.info(
                        "group %s changes its subscription of %s: %s -> %s",
                        self.group_name,
                        sub.topic,
                        old.sub_string,
                        sub.sub_string,
                    )
                self.subscription_table[sub.topic] = sub
        for topic in [t for t in self.subscription_table if t not in topics]:
            log.warning("group %s no longer subscribes %s", self.group_name, topic)
            del self.subscription_table[topic]
            changed = True
        self.last_update_ms = now_ms
        return changed

    def remove_channel(self, key: Any) -> ClientChannelInfo | None:
        return self.channel_info_table.pop(key, None)


class ConsumerManager:
    def __init__(
        self,
        on_consumer_ids_changed: IdsChangedListener | None = None,
        clock: Clock = SYSTEM_CLOCK,
        channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS,
    ) -> None:
        self.consumer_table: dict[str, ConsumerGroupInfo] = {}
        self.on_consumer_ids_changed = on_consumer_ids_changed
        self._clock = clock
        self._expiry_ms = channel_expired_timeout_ms

    def get_consumer_group_info(self, group: str) -> ConsumerGroupInfo | None:
        return self.consumer_table.get(group)

    def find_subscription_data(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumer_table.get(group)
        return info.find_subscription_data(topic) if info is not None else None

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        info = self.consumer_table.get(group)
        return info.find_channel(client_id) if info is not None else None

    def _changed(self, group: str, info: ConsumerGroupInfo, notify: bool) -> None:
        if notify and self.on_consumer_ids_changed is not None:
            self.on_consumer_ids_changed(group, info.all_connections())

    def register_consumer(
        self,
        group: str,
        channel: ClientChannelInfo,
        consume_type: ConsumeType,
        message_model: MessageModel,
        consume_from_where: ConsumeFromWhere,
        subs: Iterable[SubscriptionData],
        notify: bool = True,
    ) -> bool:
        now = self._clock.monotonic_ms()
        info = self.consumer_table.get(group)
        if info is None:
            info = self.consumer_table[group] = ConsumerGroupInfo(
                group, consume_type, message_model, consume_from_where, now
            )
        added = info.update_channel(channel, consume_type, message_model, consume_from_where, now)
        resubscribed = info.update_subscription(subs, now)
        if added or resubscribed:
            self._changed(group, info, notify)
        return added or resubscribed

    def unregister_consumer(self, group: str, key: Any, notify: bool = True) -> None:
        info = self.consumer_table.get(group)
        if info is None:
            return
        removed = info.remove_channel(key)
        if removed is not None:
            log.info("consumer %s left group %s", removed, group)
        if not info.channel_info_table:
            del self.consumer_table[group]
            log.info("consumer group %s has no member left", group)
        self._changed(group, info, notify)

    def do_channel_close_event(self, key: Any, notify_for: Callable[[str], bool] = lambda _g: True) -> None:
        """A connection closed: drop it from every group and tell the remaining members."""
        for group, info in list(self.consumer_table.items()):
            removed = info.remove_channel(key)
            if removed is None:
                continue
            log.info("consumer connection %s of group %s closed", removed, group)
            if not info.channel_info_table:
                del self.consumer_table[group]
                log.info("consumer group %s has no member left", group)
            self._changed(group, info, notify_for(group))

    def scan_not_active_channel(self) -> list[Any]:
        """Drop members silent past the expiry; returns their connections (the caller closes them)."""
        now = self._clock.monotonic_ms()
        expired: list[Any] = []
        for group, info in list(self.consumer_table.items()):
            for key, channel in list(info.channel_info_table.items()):
                if now - channel.last_update_ms > self._expiry_ms:
                    log.warning(
                        "consumer %s of group %s silent for %d ms: removed",
                        channel,
                        group,
                        now - channel.last_update_ms,
                    )
                    del info.channel_info_table[key]
                    expired.append(channel.conn)
            if not info.channel_info_table:
                del self.consumer_table[group]
                log.warning("consumer group %s has no member left after the scan", group)
        return expired

    def query_topic_consume_by_who(self, topic: str) -> set[str]:
        return {group for group, info in self.consumer_table.items() if topic in info.subscription_table}


class ProducerManager:
    def __init__(
        self, clock: Clock = SYSTEM_CLOCK, channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS
    ) -> None:
        self.group_channel_table: dict[str, dict[Any, ClientChannelInfo]] = {}
        self._client_channel_table: dict[str, Any] = {}
        self._clock = clock
        self._expiry_ms = channel_expired_timeout_ms
        self._counter = itertools.count()

    def register_producer(self, group: str, channel: ClientChannelInfo) -> None:
        table = self.group_channel_table.setdefault(group, {})
        existing = table.get(channel.key)
        if existing is None:
            table[channel.key] = channel
            self._client_channel_table[channel.client_id] = channel.conn
            log.info("new producer of group %s: %s", group, channel)
        else:
            existing.last_update_ms = self._clock.monotonic_ms()

    def unregister_producer(self, group: str, key: Any) -> None:
        table = self.group_channel_table.get(group)
        if not table:
            return
        old = table.pop(key, None)
        if old is not None:
            self._client_channel_table.pop(old.client_id, None)
            log.info("producer %s left group %s", old, group)
        if not table:
            del self.group_channel_table[group]

    def do_channel_close_event(self, key: Any) -> None:
        for group, table in list(self.group_channel_table.items()):
            old = table.pop(key, None)
            if old is not None:
                self._client_channel_table.pop(old.client_id, None)
                log.info("producer connection %s of group %s closed", old, group)
            if not table:
                del self.group_channel_table[group]

    def scan_not_active_channel(self) -> list[Any]:
        now = self._clock.monotonic_ms()
        expired: list[Any] = []
        for group, table in list(self.group_channel_table.items()):
            for key, channel in list(table.items()):
                if now - channel.last_update_ms > self._expiry_ms:
                    log.warning(
                        "producer %s of group %s silent for %d ms: removed",
                        channel,
                        group,
                        now - channel.last_update_ms,
                    )
                    del table[key]
                    self._client_channel_table.pop(channel.client_id, None)
                    expired.append(channel.conn)
            if not table:
                del self.group_channel_table[group]
        return expired

    def get_available_channel(self, group: str) -> Any | None:
        """A live connection of the group, round robin (transaction checks, reply messages)."""
        table = self.group_channel_table.get(group)
        if not table:
            return None
        conns = [c.conn for c in table.values()]
        start = next(self._counter) % len(conns)
        for i in range(len(conns)):
            conn = conns[(start + i) % len(conns)]
            if conn.is_active:
                return conn
        return None

    def find_channel(self, client_id: str) -> Any | None:
        return self._client_channel_table.get(client_id)
