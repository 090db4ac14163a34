"""RouteInfoManager: the NameServer's route registry over its five tables (pure: no I/O, injected clock).

Port of org.apache.rocketmq.namesrv.routeinfo.RouteInfoManager (4.9.8; docs/protocol.md 2.2, 2.3).
Deviations: no lock (every call runs on the NameServer's one event loop); liveness uses the
clock's monotonic milliseconds; the expiry (Java's fixed 120 s) is configurable; route answers
list brokers sorted by name instead of in hash order; an expired broker's connection is handed
back to the caller to close instead of being closed here.

Removal rule (Java's, kept exactly): an address leaves the live table and its BrokerData; only a
BrokerData left with no address removes the broker name from its cluster and its QueueData from
every topic, so a dead master with a live slave stays routable for reading.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import NamedTuple

from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.constants import MASTER_ID
from rocketq.namesrv.route.broker_table import AddrRemoval, BrokerTable
from rocketq.namesrv.route.cluster_table import ClusterTable
from rocketq.namesrv.route.filter_server_table import FilterServerTable
from rocketq.namesrv.route.live_table import BrokerLiveInfo, LiveTable
from rocketq.namesrv.route.topic_table import TOPIC_SYS_FLAG_UNIT, TOPIC_SYS_FLAG_UNIT_SUB, TopicTable
from rocketq.remoting.protocol.bodies.register import DataVersion, TopicConfigSerializeWrapper
from rocketq.remoting.protocol.bodies.route import ClusterInfo, TopicRouteData

log = logging.getLogger("rocketq.namesrv")

DEFAULT_BROKER_CHANNEL_EXPIRED_MS = 120_000


class RegisterBrokerResult(NamedTuple):
    """For a slave whose master is live: the master's HA address and address; else both None."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


class ExpiredBroker(NamedTuple):
    broker_addr: str
    connection: object | None


class RouteInfoManager:
    """Registers brokers and their topics, answers routes, expires silent brokers.

    Args:
        clock: time source; liveness uses `clock.monotonic_ms()`.
        broker_channel_expired_ms: a broker silent for longer than this is removed by the scan.
    """

    def __init__(
        self,
        clock: Clock = SYSTEM_CLOCK,
        broker_channel_expired_ms: int = DEFAULT_BROKER_CHANNEL_EXPIRED_MS,
    ) -> None:
        self.clock = clock
        self.broker_channel_expired_ms = broker_channel_expired_ms
        self.topics = TopicTable()
        self.brokers = BrokerTable()
        self.clusters = ClusterTable()
        self.live = LiveTable()
        self.filter_servers = FilterServerTable()

    # -- registration ---------------------------------------------------------------------------
    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: TopicConfigSerializeWrapper,
        filter_server_list: list[str] | None = None,
        connection: object | None = None,
    ) -> RegisterBrokerResult:
        """REGISTER_BROKER: record the broker, its topics (masters only, on a new DataVersion), liveness."""
        self.clusters.add(cluster_name, broker_name)
        first = self.brokers.put_addr(cluster_name, broker_name, broker_id, broker_addr)
        if broker_id == MASTER_ID:
            if first:
                log.info(
                    "cluster [%s] brokerName [%s] master address is %s",
                    cluster_name,
                    broker_name,
                    broker_addr,
                )
            version = topic_config_wrapper.data_version
            if first or self.live.is_changed(broker_addr, version):
                self._update_topics(broker_name, topic_config_wrapper)
        info = BrokerLiveInfo(
            last_update_ms=self.clock.monotonic_ms(),
            data_version=topic_config_wrapper.data_version.copy(),
            connection=connection,
            ha_server_addr=ha_server_addr,
        )
        if self.live.put(broker_addr, info) is None:
            log.info("new broker registered, %s HAServer: %s", broker_addr, ha_server_addr)
        self.filter_servers.update(broker_addr, filter_server_list)
        if broker_id == MASTER_ID:
            return RegisterBrokerResult()
        return self._master_of(broker_name)

    def _update_topics(self, broker_name: str, wrapper: TopicConfigSerializeWrapper) -> None:
        for config in wrapper.topic_config_table.values():
            is_new = config.topic_name not in self.topics
            if self.topics.upsert(broker_name, config):
                log.info("%s topic %s on %s", "new" if is_new else "changed", config.topic_name, broker_name)

    def _master_of(self, broker_name: str) -> RegisterBrokerResult:
        data = self.brokers.get(broker_name)
        master_addr = data.master_addr if data is not None else None
        if master_addr is None:
            return RegisterBrokerResult()
        master = self.live.get(master_addr)
        if master is None:
            return RegisterBrokerResult()
        return RegisterBrokerResult(ha_server_addr=master.ha_server_addr, master_addr=master_addr)

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """UNREGISTER_BROKER: drop the address; the broker name and its queues when it was the last one."""
        removed = self.live.remove(broker_addr)
        log.info(
            "unregisterBroker, remove from brokerLiveTable %s, %s", "OK" if removed else "Failed", broker_addr
        )
        self.filter_servers.remove(broker_addr)
        result = self.brokers.remove_id(broker_name, broker_id)
        if result.name_removed:
            self.clusters.remove(broker_name, cluster_name)
            self._drop_broker_topics(broker_name)

    # -- data version ---------------------------------------------------------------------------
    def is_broker_topic_config_changed(self, broker_addr: str, version: DataVersion) -> bool:
        return self.live.is_changed(broker_addr, version)

    def query_broker_topic_config(self, broker_addr: str) -> DataVersion | None:
        info = self.live.get(broker_addr)
        return None if info is None else info.data_version.copy()

    def update_broker_info_update_timestamp(self, broker_addr: str) -> None:
        self.live.touch(broker_addr, self.clock.monotonic_ms())

    # -- liveness -------------------------------------------------------------------------------
    def scan_inactive_brokers(self, now_ms: int | None = None) -> list[ExpiredBroker]:
        """Remove every broker silent for more than the expiry; returns them (their connections to close)."""
        now = self.clock.monotonic_ms() if now_ms is None else now_ms
        expired = []
        for addr, info in self.live.expired(now, self.broker_channel_expired_ms):
            log.warning("The broker channel expired, %s %dms", addr, self.broker_channel_expired_ms)
            self._remove_broker_addr(addr)
            expired.append(ExpiredBroker(addr, info.connection))
        return expired

    def on_connection_closed(self, remote_addr: str, connection: object | None = None) -> str | None:
        """A connection closed: the broker registered over it (else at `remote_addr`) goes at once."""
        addr = self.live.addr_of_connection(connection) if connection is not None else None
        if addr is None:
            addr = remote_addr
        else:
            log.info("the broker's channel destroyed, %s, clean its data structure at once", addr)
        if not addr:
            return None
        if addr not in self.live and not self.brokers.has_addr(addr):
            return None  # a client's connection: nothing registered there
        self._remove_broker_addr(addr)
        return addr

    def _remove_broker_addr(self, broker_addr: str) -> AddrRemoval:
        self.live.remove(broker_addr)
        self.filter_servers.remove(broker_addr)
        removal = self.brokers.remove_addr(broker_addr)
        if removal.broker_name is not None and removal.name_removed:
            log.info(
                "remove brokerName[%s] from brokerAddrTable, because channel destroyed", removal.broker_name
            )
            self.clusters.remove(removal.broker_name)
            self._drop_broker_topics(removal.broker_name)
        return removal

    def _drop_broker_topics(self, broker_name: str) -> None:
        for topic in self.topics.remove_broker(broker_name):
            log.info(
                "remove topic[%s] all queue, from topicQueueTable, because %s is gone", topic, broker_name
            )

    # -- routes ---------------------------------------------------------------------------------
    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """The topic's route, or None when no QueueData or no BrokerData serves it."""
        per_broker = self.topics.queue_datas(topic)
        if not per_broker:
            return None
        route = TopicRouteData()
        for broker_name in sorted(per_broker):
            qd = per_broker[broker_name]
            route.queue_datas.append(dataclasses.replace(qd))
            data = self.brokers.get(broker_name)
            if data is not None:
                route.broker_datas.append(data.copy())
                route.filter_server_table.update(self.filter_servers.for_addrs(data.broker_addrs.values()))
        if not route.broker_datas:
            return None
        return route

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table=self.brokers.snapshot(), cluster_addr_table=self.clusters.snapshot()
        )

    # -- topic lists ----------------------------------------------------------------------------
    def all_topics(self) -> list[str]:
        return self.topics.topics()

    def topics_by_cluster(self, cluster: str) -> list[str]:
        seen: dict[str, None] = {}
        for broker_name in sorted(self.clusters.broker_names(cluster)):
            seen.update(dict.fromkeys(self.topics.topics_of_broker(broker_name)))
        return list(seen)

    def system_topics(self) -> tuple[list[str], str | None]:
        """Cluster names and broker names (each is also a topic) and some broker address."""
        names: dict[str, None] = {}
        for cluster, brokers in self.clusters.snapshot().items():
            names[cluster] = None
            names.update(dict.fromkeys(brokers))
        return list(names), self.brokers.first_addr()

    def unit_topics(self) -> list[str]:
        return self.topics.topics_where_first(lambda qd: bool(qd.topic_sys_flag & TOPIC_SYS_FLAG_UNIT))

    def has_unit_sub_topics(self) -> list[str]:
        return self.topics.topics_where_first(lambda qd: bool(qd.topic_sys_flag & TOPIC_SYS_FLAG_UNIT_SUB))

    def has_unit_sub_ununit_topics(self) -> list[str]:
        return self.topics.topics_where_first(
            lambda qd: (
                not qd.topic_sys_flag & TOPIC_SYS_FLAG_UNIT
                and bool(qd.topic_sys_flag & TOPIC_SYS_FLAG_UNIT_SUB)
            )
        )

    # -- admin ----------------------------------------------------------------------------------
    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """Drop the topic everywhere, or with `cluster_name` only from that cluster's brokers."""
        if not cluster_name:
            self.topics.delete(topic)
            return
        self.topics.delete_in_brokers(topic, self.clusters.broker_names(cluster_name))

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        return self.topics.wipe_write_perm(broker_name)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        return self.topics.add_write_perm(broker_name)
