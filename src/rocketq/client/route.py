"""Route views: TopicRouteData -> TopicPublishInfo (where a producer may write) and subscribe queues.

Port of org.apache.rocketmq.client.impl.producer.TopicPublishInfo, common.ThreadLocalIndex and
MQClientInstance.topicRouteData2TopicPublishInfo / topicRouteData2TopicSubscribeInfo (4.9.8).
Deviation: Java keeps one round-robin index per thread; we keep one per topic, shared by all callers
(next() on itertools.count is atomic under the GIL, so producers on several threads stay safe).
The route types are described structurally (the name-server bodies satisfy these protocols).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rocketq.common.constants import MASTER_ID, PermName
from rocketq.common.message import MessageQueue


class QueueDataLike(Protocol):
    @property
    def broker_name(self) -> str: ...
    @property
    def read_queue_nums(self) -> int: ...
    @property
    def write_queue_nums(self) -> int: ...
    @property
    def perm(self) -> int: ...


class BrokerDataLike(Protocol):
    @property
    def broker_name(self) -> str: ...
    @property
    def broker_addrs(self) -> Mapping[int, str]: ...


class TopicRouteLike(Protocol):
    @property
    def order_topic_conf(self) -> str | None: ...
    @property
    def queue_datas(self) -> Sequence[QueueDataLike]: ...
    @property
    def broker_datas(self) -> Sequence[BrokerDataLike]: ...


POSITIVE_MASK = 0x7FFFFFFF


class RoundRobinIndex:
    """Java ThreadLocalIndex: starts at a random point, then counts up; values are non-negative."""

    __slots__ = ("_counter",)

    def __init__(self, start: int | None = None) -> None:
        self._counter = itertools.count((random.getrandbits(31) if start is None else start) + 1)

    def next(self) -> int:
        return next(self._counter) & POSITIVE_MASK


@dataclass(slots=True)
class TopicPublishInfo:
    """The writable queues of a topic, in broker-name order, with the round-robin selection on them."""

    topic: str
    message_queues: list[MessageQueue]
    order_topic: bool = False
    write_queue_nums_by_broker: dict[str, int] = field(default_factory=dict)
    index: RoundRobinIndex = field(default_factory=RoundRobinIndex)

    def ok(self) -> bool:
        return bool(self.message_queues)

    def select_one(self, last_broker_name: str | None = None) -> MessageQueue:
        """Next queue round-robin; with `last_broker_name`, the next one on another broker if any."""
        mqs = self.message_queues
        if last_broker_name is not None:
            for _ in range(len(mqs)):
                mq = mqs[self.index.next() % len(mqs)]
                if mq.broker_name != last_broker_name:
                    return mq
        return mqs[self.index.next() % len(mqs)]

    def queue_count_of_broker(self, broker_name: str | None) -> int:
        """Writable queue count of `broker_name` in this route, -1 when it has none (getQueueIdByBroker)."""
        if broker_name is None:
            return -1
        return self.write_queue_nums_by_broker.get(broker_name, -1)

    def broker_names(self) -> list[str]:
        return sorted({mq.broker_name for mq in self.message_queues})


def to_publish_info(topic: str, route: TopicRouteLike) -> TopicPublishInfo:
    """Writable queues: from orderTopicConf when set, else per writable QueueData whose broker has a master."""
    writable = {
        qd.broker_name: qd.write_queue_nums for qd in route.queue_datas if PermName.is_writeable(qd.perm)
    }
    if route.order_topic_conf:
        mqs: list[MessageQueue] = []
        for item in route.order_topic_conf.split(";"):
            if ":" not in item:
                continue
            name, _, nums = item.partition(":")
            mqs.extend(MessageQueue(topic, name, i) for i in range(int(nums)))
        return TopicPublishInfo(topic, mqs, order_topic=True, write_queue_nums_by_broker=writable)
    masters = {bd.broker_name for bd in route.broker_datas if MASTER_ID in _int_keys(bd.broker_addrs)}
    mqs = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if PermName.is_writeable(qd.perm) and qd.broker_name in masters:
            mqs.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums))
    return TopicPublishInfo(topic, mqs, write_queue_nums_by_broker=writable)


def to_subscribe_queues(topic: str, route: TopicRouteLike) -> set[MessageQueue]:
    """Readable queues of every QueueData with the READ permission."""
    return {
        MessageQueue(topic, qd.broker_name, i)
        for qd in route.queue_datas
        if PermName.is_readable(qd.perm)
        for i in range(qd.read_queue_nums)
    }


def _int_keys(addrs: Mapping[int, str]) -> set[int]:
    # Tolerate string keys ("0") from a lenient decoder.
    return {int(k) for k in addrs}


def broker_addr_table(route: TopicRouteLike) -> dict[str, dict[int, str]]:
    """brokerName -> {brokerId: address} of one route."""
    return {bd.broker_name: {int(k): v for k, v in bd.broker_addrs.items()} for bd in route.broker_datas}


def route_changed(old: TopicRouteLike | None, new: TopicRouteLike) -> bool:
    """Whether the parts clients act on differ (queues, permissions, broker addresses)."""
    if old is None:
        return True
    return _fingerprint(old) != _fingerprint(new)


def _fingerprint(route: TopicRouteLike) -> tuple[object, ...]:
    qds = sorted((q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas)
    bds = sorted(
        (b.broker_name, tuple(sorted((int(k), v) for k, v in b.broker_addrs.items())))
        for b in route.broker_datas
    )
    return (route.order_topic_conf or "", tuple(qds), tuple(bds))
