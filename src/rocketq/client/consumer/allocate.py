"""Queue allocation strategies: which of a topic's queues this consumer of a group takes.

Port of org.apache.rocketmq.client.consumer.rebalance.{AllocateMessageQueueAveragely,
AllocateMessageQueueAveragelyByCircle, AllocateMessageQueueConsistentHash} and common.consistenthash
(4.9.8). Each strategy is a pure function of (current client id, all queues, all client ids) and gives
exactly Java's answer for the same inputs; the caller sorts both lists first (RebalanceImpl does).
"""

from __future__ import annotations

import bisect
import hashlib
import logging
from collections.abc import Sequence
from typing import Protocol

from rocketq.common.message import MessageQueue

log = logging.getLogger("rocketq.client.rebalance")


class AllocateStrategy(Protocol):
    name: str

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]: ...


def _check(
    consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> bool:
    """Java AbstractAllocateMessageQueueStrategy.check: bad arguments raise; an unknown cid gets nothing."""
    if not current_cid:
        raise ValueError("currentCID is empty")
    if not mq_all:
        raise ValueError("mqAll is null or mqAll empty")
    if not cid_all:
        raise ValueError("cidAll is null or cidAll empty")
    if current_cid not in cid_all:
        log.info("consumer group %s: consumer id %s not in %s", consumer_group, current_cid, list(cid_all))
        return False
    return True


class AllocateMessageQueueAveragely:
    """Contiguous blocks: the first `len(mq) % len(cid)` consumers get one queue more."""

    name = "AVG"

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(consumer_group, current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        n_mq, n_cid = len(mq_all), len(cid_all)
        mod = n_mq % n_cid
        if n_mq <= n_cid:
            average = 1
        elif mod > 0 and index < mod:
            average = n_mq // n_cid + 1
        else:
            average = n_mq // n_cid
        start = index * average if (mod > 0 and index < mod) else index * average + mod
        count = min(average, n_mq - start)
        return [mq_all[(start + i) % n_mq] for i in range(count)]


class AllocateMessageQueueAveragelyByCircle:
    """Round-robin: consumer i takes queues i, i + n, i + 2n, ..."""

    name = "AVG_BY_CIRCLE"

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(consumer_group, current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        return [mq_all[i] for i in range(index, len(mq_all)) if i % len(cid_all) == index]


def md5_hash(key: str) -> int:
    """Java ConsistentHashRouter.MD5Hash: the first 4 digest bytes as an unsigned big-endian number."""
    digest = hashlib.md5(key.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:4], "big")


class AllocateMessageQueueConsistentHash:
    """A hash ring of `virtual_node_count` virtual nodes per consumer; a queue goes to the next node."""

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_node_count: int = 10) -> None:
        if virtual_node_count < 0:
            raise ValueError(f"illegal virtualNodeCnt: {virtual_node_count}")
        self.virtual_node_count = virtual_node_count

    def _ring(self, cid_all: Sequence[str]) -> tuple[list[int], list[str]]:
        # A TreeMap in Java: a later virtual node with the same hash replaces the earlier one.
        ring: dict[int, str] = {}
        for cid in cid_all:
            for replica in range(self.virtual_node_count):
                ring[md5_hash(f"{cid}-{replica}")] = cid
        keys = sorted(ring)
        return keys, [ring[k] for k in keys]

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(consumer_group, current_cid, mq_all, cid_all):
            return []
        keys, owners = self._ring(cid_all)
        if not keys:
            return []
        result = []
        for mq in mq_all:
            pos = bisect.bisect_left(keys, md5_hash(str(mq)))
            if owners[pos % len(keys)] == current_cid:
                result.append(mq)
        return result


STRATEGIES: dict[str, type[AllocateStrategy]] = {
    "AVG": AllocateMessageQueueAveragely,
    "AVG_BY_CIRCLE": AllocateMessageQueueAveragelyByCircle,
    "CONSISTENT_HASH": AllocateMessageQueueConsistentHash,
}


def strategy_by_name(name: str) -> AllocateStrategy:
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ValueError(f"unknown allocate strategy {name!r}; choose one of {sorted(STRATEGIES)}") from None
