"""Typed headers of the NameServer requests: registration, routes, KV config, write permissions.

Ports of org.apache.rocketmq.common.protocol.header.namesrv.* (4.9.8) plus
GetTopicsByClusterRequestHeader (docs/protocol.md 2.2, 2.3, 2.13). A field without a default is
@CFNotNull in Java; primitive Java fields (`compressed`) always travel, so they default here.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.headers.base import CommandHeader, jfield


# -- broker registration (103, 104, 322) ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER (103). `body_crc32` is CRC32 & 0x7FFFFFFF of the body; 0 disables the check."""

    broker_name: str = jfield("brokerName")
    broker_addr: str = jfield("brokerAddr")
    cluster_name: str = jfield("clusterName")
    ha_server_addr: str = jfield("haServerAddr")
    broker_id: int = jfield("brokerId")
    compressed: bool = jfield("compressed", False)
    body_crc32: int = jfield("bodyCrc32", 0)


@dataclass(frozen=True, slots=True)
class RegisterBrokerResponseHeader(CommandHeader):
    """Answer to REGISTER_BROKER: for a slave, its live master's address and HA address."""

    ha_server_addr: str | None = jfield("haServerAddr", None)
    master_addr: str | None = jfield("masterAddr", None)


@dataclass(frozen=True, slots=True)
class UnRegisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER (104), sent by a broker at shutdown."""

    broker_name: str = jfield("brokerName")
    broker_addr: str = jfield("brokerAddr")
    cluster_name: str = jfield("clusterName")
    broker_id: int = jfield("brokerId")


@dataclass(frozen=True, slots=True)
class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION (322); the body is the broker's DataVersion JSON."""

    broker_name: str = jfield("brokerName")
    broker_addr: str = jfield("brokerAddr")
    cluster_name: str = jfield("clusterName")
    broker_id: int = jfield("brokerId")


@dataclass(frozen=True, slots=True)
class QueryDataVersionResponseHeader(CommandHeader):
    """`changed` is true when the NameServer holds no or another DataVersion for that broker."""

    changed: bool = jfield("changed")


# -- routes (105, 216, 224) -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GetRouteInfoRequestHeader(CommandHeader):
    """GET_ROUTEINFO_BY_TOPIC (105). `acceptStandardJsonOnly` (4.9.4+) asks for quoted map keys."""

    topic: str = jfield("topic")
    accept_standard_json_only: bool | None = jfield("acceptStandardJsonOnly", None)


@dataclass(frozen=True, slots=True)
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_NAMESRV (216); with `clusterName` only that cluster's brokers lose the topic."""

    topic: str = jfield("topic")
    cluster_name: str | None = jfield("clusterName", None)


@dataclass(frozen=True, slots=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    """GET_TOPICS_BY_CLUSTER (224)."""

    cluster: str = jfield("cluster")


# -- KV config (100, 101, 102, 219) ---------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str = jfield("namespace")
    key: str = jfield("key")
    value: str = jfield("value")


@dataclass(frozen=True, slots=True)
class GetKVConfigRequestHeader(CommandHeader):
    namespace: str = jfield("namespace")
    key: str = jfield("key")


@dataclass(frozen=True, slots=True)
class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = jfield("value", None)


@dataclass(frozen=True, slots=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    namespace: str = jfield("namespace")
    key: str = jfield("key")


@dataclass(frozen=True, slots=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str = jfield("namespace")


# -- write permission of a broker (205, 327) ------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str = jfield("brokerName")


@dataclass(frozen=True, slots=True)
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    wipe_topic_count: int = jfield("wipeTopicCount")


@dataclass(frozen=True, slots=True)
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str = jfield("brokerName")


@dataclass(frozen=True, slots=True)
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    add_topic_count: int = jfield("addTopicCount")


# -- order topic registration (defined in Java, unused by 4.9.8 servers) --------------------------
@dataclass(frozen=True, slots=True)
class RegisterOrderTopicRequestHeader(CommandHeader):
    topic: str = jfield("topic")
    order_topic_string: str = jfield("orderTopicString")


__all__ = [
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "DeleteKVConfigRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "GetKVListByNamespaceRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "PutKVConfigRequestHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "RegisterOrderTopicRequestHeader",
    "UnRegisterBrokerRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
]
