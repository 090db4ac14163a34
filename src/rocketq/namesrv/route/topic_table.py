"""Topic table: topic -> broker name -> QueueData (RouteInfoManager.topicQueueTable).

Invariant: a topic is present only while at least one broker name holds QueueData for it; the
methods that remove QueueData drop a topic left empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rocketq.common.constants import PermName
from rocketq.remoting.protocol.bodies.register import TopicConfig
from rocketq.remoting.protocol.bodies.route import QueueData

TOPIC_SYS_FLAG_UNIT = 0x1
TOPIC_SYS_FLAG_UNIT_SUB = 0x2


class TopicTable:
    __slots__ = ("_table",)

    def __init__(self) -> None:
        self._table: dict[str, dict[str, QueueData]] = {}

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, topic: object) -> bool:
        return topic in self._table

    def topics(self) -> list[str]:
        return list(self._table)

    def queue_datas(self, topic: str) -> dict[str, QueueData] | None:
        return self._table.get(topic)

    def upsert(self, broker_name: str, config: TopicConfig) -> bool:
        """Create or overwrite the broker's QueueData of the topic; True when it changed."""
        new = QueueData(
            broker_name=broker_name,
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_sys_flag=config.topic_sys_flag,
        )
        per_broker = self._table.setdefault(config.topic_name, {})
        old = per_broker.get(broker_name)
        per_broker[broker_name] = new
        return old != new

    def remove_broker(self, broker_name: str) -> list[str]:
        """Drop the broker name's QueueData from every topic; the topics that became empty."""
        emptied = []
        for topic, per_broker in list(self._table.items()):
            per_broker.pop(broker_name, None)
            if not per_broker:
                del self._table[topic]
                emptied.append(topic)
        return emptied

    def delete(self, topic: str) -> bool:
        return self._table.pop(topic, None) is not None

    def delete_in_brokers(self, topic: str, broker_names: Iterable[str]) -> int:
        """Drop the topic's QueueData of those broker names only (delete within one cluster)."""
        per_broker = self._table.get(topic)
        if per_broker is None:
            return 0
        removed = sum(per_broker.pop(name, None) is not None for name in broker_names)
        if not per_broker:
            del self._table[topic]
        return removed

    def topics_of_broker(self, broker_name: str) -> list[str]:
        return [topic for topic, per_broker in self._table.items() if broker_name in per_broker]

    def wipe_write_perm(self, broker_name: str) -> int:
        """Clear PERM_WRITE on every QueueData of the broker; how many topics it touched."""
        return self._set_perm(broker_name, lambda perm: perm & ~PermName.PERM_WRITE)

    def add_write_perm(self, broker_name: str) -> int:
        """Set perm to READ|WRITE on every QueueData of the broker (Java drops other bits too)."""
        return self._set_perm(broker_name, lambda _perm: PermName.PERM_READ | PermName.PERM_WRITE)

    def _set_perm(self, broker_name: str, change: Callable[[int], int]) -> int:
        count = 0
        for per_broker in self._table.values():
            qd = per_broker.get(broker_name)
            if qd is not None:
                qd.perm = change(qd.perm)
                count += 1
        return count

    def topics_where_first(self, pick: Callable[[QueueData], bool]) -> list[str]:
        """Topics whose first QueueData satisfies `pick` (Java looks at one QueueData per topic)."""
        out = []
        for topic, per_broker in self._table.items():
            first = next(iter(per_broker.values()), None)
            if first is not None and pick(first):
                out.append(topic)
        return out
