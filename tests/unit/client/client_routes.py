"""Stand-in route bodies for unit tests (the real ones come from the name server codec)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class QD:
    broker_name: str
    read_queue_nums: int = 4
    write_queue_nums: int = 4
    perm: int = 6
    topic_sys_flag: int = 0


@dataclass
class BD:
    broker_name: str
    broker_addrs: dict[int, str]
    cluster: str = "DefaultCluster"


@dataclass
class Route:
    queue_datas: list[QD]
    broker_datas: list[BD]
    order_topic_conf: str | None = None
    filter_server_table: dict = field(default_factory=dict)


def two_brokers(read: int = 4, write: int = 4) -> Route:
    return Route(
        [QD("broker-b", read, write), QD("broker-a", read, write)],
        [BD("broker-a", {0: "127.0.0.1:10911"}), BD("broker-b", {0: "127.0.0.1:10921"})],
    )
