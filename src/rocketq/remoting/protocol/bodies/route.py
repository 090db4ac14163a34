"""Route bodies: QueueData, BrokerData, TopicRouteData (GET_ROUTEINFO_BY_TOPIC) and ClusterInfo.

Ports of org.apache.rocketmq.common.protocol.route.{QueueData, BrokerData, TopicRouteData} and
protocol.body.ClusterInfo (4.9.8; docs/protocol.md 5.1, 5.2). `to_json()` gives the Java bean as a dict
with camelCase keys; `brokerAddrs` keeps int keys so that bodies/fastjson.py decides whether they
are written quoted (standard JSON) or bare (fastjson's default, which old clients parse by hand).
`from_json()` is lenient as Java's reader is: missing fields default, unknown fields are ignored,
numbers may come as strings, map keys as strings or ints. QueueData also reads the pre-4.9 spelling
`topicSynFlag`; like the 4.9.8 NameServer it writes only `topicSysFlag`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from rocketq.common.constants import MASTER_ID


# -- lenient readers shared by the namesrv bodies ------------------------------------------------
def as_int(value: Any, default: int = 0) -> int:
    """A JSON number (or numeric string, or bool) as int; `default` for null/missing/garbage."""
    if value is None:
        return default
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        try:
            return int(float(str(value)))
        except ValueError:
            return default


def as_bool(value: Any, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return str(value).strip().lower() == "true"


def as_str(value: Any, default: str = "") -> str:
    return default if value is None else str(value)


def as_opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def as_mapping(value: Any) -> Mapping[Any, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    return []


# -- QueueData ----------------------------------------------------------------------------------
@dataclass(slots=True)
class QueueData:
    """One broker's queues of a topic: counts, PermName bits, TopicSysFlag bits."""

    broker_name: str = ""
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        sys_flag = d.get("topicSysFlag", d.get("topicSynFlag"))
        return cls(
            broker_name=as_str(d.get("brokerName")),
            read_queue_nums=as_int(d.get("readQueueNums")),
            write_queue_nums=as_int(d.get("writeQueueNums")),
            perm=as_int(d.get("perm")),
            topic_sys_flag=as_int(sys_flag),
        )


# -- BrokerData ---------------------------------------------------------------------------------
@dataclass(slots=True)
class BrokerData:
    """A broker name's addresses by broker id (0 = master)."""

    cluster: str = ""
    broker_name: str = ""
    broker_addrs: dict[int, str] = field(default_factory=dict)

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def select_broker_addr(self) -> str | None:
        """The master's address, else the first slave's (Java picks a random one; stable here)."""
        if MASTER_ID in self.broker_addrs:
            return self.broker_addrs[MASTER_ID]
        for broker_id in sorted(self.broker_addrs):
            return self.broker_addrs[broker_id]
        return None

    def copy(self) -> BrokerData:
        return BrokerData(self.cluster, self.broker_name, dict(self.broker_addrs))

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrs": dict(sorted(self.broker_addrs.items())),
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        addrs: dict[int, str] = {}
        for key, addr in as_mapping(d.get("brokerAddrs")).items():
            if addr is None:
                continue
            try:
                addrs[int(str(key).strip())] = str(addr)
            except ValueError:
                continue  # a key that is no broker id: Java's Long parse would fail the whole body
        return cls(
            cluster=as_str(d.get("cluster")), broker_name=as_str(d.get("brokerName")), broker_addrs=addrs
        )


# -- TopicRouteData -----------------------------------------------------------------------------
@dataclass(slots=True)
class TopicRouteData:
    """The route of a topic: its queues per broker name and those brokers' addresses."""

    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    order_topic_conf: str | None = None
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerDatas": [b.to_json() for b in self.broker_datas],
            "filterServerTable": {k: list(v) for k, v in sorted(self.filter_server_table.items())},
        }
        if self.order_topic_conf is not None:
            out["orderTopicConf"] = self.order_topic_conf
        out["queueDatas"] = [q.to_json() for q in self.queue_datas]
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        filter_servers = {
            str(addr): [str(s) for s in as_list(servers)]
            for addr, servers in as_mapping(d.get("filterServerTable")).items()
        }
        return cls(
            queue_datas=[QueueData.from_json(q) for q in as_list(d.get("queueDatas"))],
            broker_datas=[BrokerData.from_json(b) for b in as_list(d.get("brokerDatas"))],
            order_topic_conf=as_opt_str(d.get("orderTopicConf")),
            filter_server_table=filter_servers,
        )

    def broker_data(self, broker_name: str) -> BrokerData | None:
        for data in self.broker_datas:
            if data.broker_name == broker_name:
                return data
        return None


# -- ClusterInfo --------------------------------------------------------------------------------
@dataclass(slots=True)
class ClusterInfo:
    """GET_BROKER_CLUSTER_INFO body: broker name -> BrokerData, cluster name -> broker names."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrTable": {name: b.to_json() for name, b in sorted(self.broker_addr_table.items())},
            "clusterAddrTable": {c: sorted(names) for c, names in sorted(self.cluster_addr_table.items())},
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            broker_addr_table={
                str(name): BrokerData.from_json(b) for name, b in as_mapping(d.get("brokerAddrTable")).items()
            },
            cluster_addr_table={
                str(c): [str(n) for n in as_list(names)]
                for c, names in as_mapping(d.get("clusterAddrTable")).items()
            },
        )

    def all_addrs_by_cluster(self, cluster: str) -> list[str]:
        """Every address (masters and slaves) of the cluster's brokers (retrieveAllAddrByCluster)."""
        addrs: list[str] = []
        for name in self.cluster_addr_table.get(cluster, []):
            data = self.broker_addr_table.get(name)
            if data is not None:
                addrs.extend(addr for _id, addr in sorted(data.broker_addrs.items()))
        return addrs

    def cluster_names(self) -> list[str]:
        return list(self.cluster_addr_table)


__all__ = ["BrokerData", "ClusterInfo", "QueueData", "TopicRouteData"]
