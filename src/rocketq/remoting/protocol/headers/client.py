"""Typed headers of client management: unregister, group membership, membership change notices.

Ports of org.apache.rocketmq.common.protocol.header.{UnregisterClientRequestHeader,
UnregisterClientResponseHeader, GetConsumerListByGroupRequestHeader,
GetConsumerListByGroupResponseHeader, NotifyConsumerIdsChangedRequestHeader} (4.9.8; docs/protocol.md 2.5).
HEART_BEAT (34) and CHECK_CLIENT_CONFIG (46) carry no header, only bodies (bodies/heartbeat.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.headers.base import CommandHeader, jfield


@dataclass(frozen=True, slots=True)
class UnregisterClientRequestHeader(CommandHeader):
    """UNREGISTER_CLIENT (35), once per producer or consumer group at client shutdown."""

    client_id: str = jfield("clientID")
    producer_group: str | None = jfield("producerGroup", None)
    consumer_group: str | None = jfield("consumerGroup", None)


@dataclass(frozen=True, slots=True)
class UnregisterClientResponseHeader(CommandHeader):
    """Empty."""


@dataclass(frozen=True, slots=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    """GET_CONSUMER_LIST_BY_GROUP (38); the answer body is GetConsumerListByGroupResponseBody."""

    consumer_group: str = jfield("consumerGroup")


@dataclass(frozen=True, slots=True)
class GetConsumerListByGroupResponseHeader(CommandHeader):
    """Empty."""


@dataclass(frozen=True, slots=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED (40), broker -> client, oneway: rebalance now."""

    consumer_group: str = jfield("consumerGroup")
