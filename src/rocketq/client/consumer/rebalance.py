"""Rebalance: which queues of its subscribed topics this consumer owns, one generation per change.

Port of org.apache.rocketmq.client.impl.consumer.{RebalanceImpl, RebalancePushImpl,
RebalanceLitePullImpl} (4.9.8). CLUSTERING: ask a broker for the group's
client ids, sort them and the topic's queues, and let the allocation strategy pick this client's share;
BROADCASTING: every queue. A queue no longer owned is marked dropped and removed once its owner says it
is safe (offsets persisted, orderly lock released); a newly owned queue gets a fresh ProcessQueue
stamped with the new generation, so work left over from an older generation sees `dropped` and stops
instead of racing the new owner. Orderly consumers lock a queue on its broker before taking it.
Deviation: when an orderly queue could not be locked (its old owner still holds it) another rebalance
is scheduled a second later instead of waiting for the next 20 s round.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Protocol

from rocketq.client.config import MessageModel
from rocketq.client.consumer.allocate import AllocateStrategy
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.instance import ClientInstance
from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.message import MessageQueue
from rocketq.remoting.errors import BrokerResponseError, RemotingError
from rocketq.remoting.protocol.bodies.heartbeat import SubscriptionData

log = logging.getLogger("rocketq.client.rebalance")

RELOCK_RETRY_S = 1.0


class RebalanceHost(Protocol):
    """The consumer a RebalanceImpl works for."""

    group: str

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """Where to start pulling `mq`; negative when it cannot be known now (try again later)."""
        ...

    def dispatch_pull(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None: ...

    async def remove_unnecessary_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """Release a queue no longer owned; False when it cannot be released yet."""
        ...

    def remove_dirty_offset(self, mq: MessageQueue) -> None: ...

    async def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None: ...


class RebalanceImpl:
    """Queue ownership of one consumer group member."""

    def __init__(
        self,
        host: RebalanceHost,
        instance: ClientInstance,
        strategy: AllocateStrategy,
        message_model: MessageModel,
        *,
        orderly: bool = False,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.host = host
        self.instance = instance
        self.strategy = strategy
        self.message_model = message_model
        self.orderly = orderly
        self._clock = clock
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.topic_subscribe_info: dict[str, set[MessageQueue]] = {}
        self.process_queues: dict[MessageQueue, ProcessQueue] = {}
        self.generation = 0
        self._lock = asyncio.Lock()

    @property
    def group(self) -> str:
        return self.host.group

    # -- the rebalance round ---------------------------------------------------------------------
    async def do_rebalance(self) -> None:
        async with self._lock:
            relock = False
            for topic in list(self.subscriptions):
                try:
                    relock |= await self._rebalance_topic(topic)
                except (RemotingError, BrokerResponseError) as exc:
                    log.info("rebalance of %s on %s: %s", self.group, topic, exc)
            await self._truncate_unsubscribed()
        if relock:
            asyncio.get_running_loop().call_later(RELOCK_RETRY_S, self.instance.rebalance_immediately)

    async def _rebalance_topic(self, topic: str) -> bool:
        mq_set = self.topic_subscribe_info.get(topic)
        if not mq_set:
            # A topic (often %RETRY%<group>) without a route yet: ask again now rather than in 30 s.
            await self.instance.update_topic_route(topic)
            mq_set = self.topic_subscribe_info.get(topic)
            if not mq_set:
                if not topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX):
                    log.warning("rebalance of %s: topic %s has no route", self.group, topic)
                return False
        if self.message_model is MessageModel.BROADCASTING:
            allocated = set(mq_set)
        else:
            cids = await self.instance.find_consumer_id_list(topic, self.group)
            if not cids:
                log.info("rebalance of %s on %s: no consumer ids yet", self.group, topic)
                return False
            try:
                mine = self.strategy.allocate(
                    self.group, self.instance.client_id, sorted(mq_set), sorted(cids)
                )
            except ValueError as exc:
                log.warning("rebalance of %s on %s: %s", self.group, topic, exc)
                return False
            allocated = set(mine)
        return await self._update_process_queues(topic, set(mq_set), allocated)

    async def _update_process_queues(
        self, topic: str, mq_all: set[MessageQueue], allocated: set[MessageQueue]
    ) -> bool:
        """Drop queues no longer owned, create the new ones; True when an orderly lock failed."""
        changed = False
        for mq, pq in list(self.process_queues.items()):
            if mq.topic == topic and mq not in allocated:
                pq.dropped = True
                if await self.host.remove_unnecessary_queue(mq, pq):
                    self.process_queues.pop(mq, None)
                    changed = True
                    log.info("rebalance of %s: dropped %s", self.group, mq)
        relock = False
        fresh: list[tuple[MessageQueue, int]] = []
        for mq in sorted(allocated - set(self.process_queues)):
            if self.orderly and self.message_model is MessageModel.CLUSTERING and not await self.lock(mq):
                log.info("rebalance of %s: %s is still locked by another consumer", self.group, mq)
                relock = True
                continue
            self.host.remove_dirty_offset(mq)
            offset = await self.host.compute_pull_from_where(mq)
            if offset < 0:
                log.info("rebalance of %s: start offset of %s unknown yet", self.group, mq)
                continue
            fresh.append((mq, offset))
        if fresh or changed:
            self.generation += 1
            added: list[tuple[MessageQueue, ProcessQueue, int]] = []
            for mq, offset in fresh:
                pq = ProcessQueue(self.generation, self._clock)
                if self.orderly:
                    pq.mark_locked(True)
                self.process_queues[mq] = pq
                added.append((mq, pq, offset))
                log.info(
                    "rebalance of %s: took %s from offset %d (generation %d)",
                    self.group,
                    mq,
                    offset,
                    self.generation,
                )
            await self.host.message_queue_changed(topic, mq_all, allocated)
            for mq, pq, offset in added:
                if not pq.dropped:
                    self.host.dispatch_pull(mq, pq, offset)
        return relock

    async def _truncate_unsubscribed(self) -> None:
        for mq, pq in list(self.process_queues.items()):
            if mq.topic not in self.subscriptions:
                pq.dropped = True
                self.process_queues.pop(mq, None)
                await self.host.remove_unnecessary_queue(mq, pq)

    async def remove_process_queue(self, mq: MessageQueue) -> None:
        pq = self.process_queues.pop(mq, None)
        if pq is not None:
            pq.dropped = True
            await self.host.remove_unnecessary_queue(mq, pq)

    async def drop_all(self) -> None:
        for mq in list(self.process_queues):
            await self.remove_process_queue(mq)

    # -- orderly locks -------------------------------------------------------------------------------
    def _master(self, broker_name: str) -> str | None:
        return self.instance.find_broker_addr_in_subscribe(broker_name, C.MASTER_ID, only_this=True)

    async def lock(self, mq: MessageQueue) -> bool:
        addr = self._master(mq.broker_name)
        if addr is None:
            return False
        try:
            locked = await self.instance.api.lock_batch_mq(addr, self.group, self.instance.client_id, [mq])
        except (RemotingError, BrokerResponseError) as exc:
            log.info("lock of %s failed: %s", mq, exc)
            return False
        for held in locked:
            pq = self.process_queues.get(held)
            if pq is not None:
                pq.mark_locked(True)
        return mq in locked

    async def lock_all(self) -> None:
        """Renew the broker locks of every owned queue (every 20 s); queues not granted stop consuming."""
        for broker_name, mqs in _by_broker(self.process_queues).items():
            addr = self._master(broker_name)
            if addr is None:
                continue
            try:
                locked = await self.instance.api.lock_batch_mq(addr, self.group, self.instance.client_id, mqs)
            except (RemotingError, BrokerResponseError) as exc:
                log.info("lock renewal on %s failed: %s", broker_name, exc)
                continue
            for mq in mqs:
                pq = self.process_queues.get(mq)
                if pq is None:
                    continue
                if mq in locked:
                    pq.mark_locked(True)
                elif pq.locked:
                    log.warning("lost the lock of %s", mq)
                    pq.locked = False

    async def unlock(self, mq: MessageQueue, *, oneway: bool = False) -> None:
        addr = self._master(mq.broker_name)
        if addr is None:
            return
        try:
            await self.instance.api.unlock_batch_mq(
                addr, self.group, self.instance.client_id, [mq], oneway=oneway
            )
        except (RemotingError, BrokerResponseError) as exc:
            log.info("unlock of %s failed: %s", mq, exc)

    async def unlock_all(self, *, oneway: bool = False) -> None:
        for broker_name, mqs in _by_broker(self.process_queues).items():
            addr = self._master(broker_name)
            if addr is None:
                continue
            try:
                await self.instance.api.unlock_batch_mq(
                    addr, self.group, self.instance.client_id, mqs, oneway=oneway
                )
            except (RemotingError, BrokerResponseError) as exc:
                log.info("unlock on %s failed: %s", broker_name, exc)
            for mq in mqs:
                pq = self.process_queues.get(mq)
                if pq is not None:
                    pq.locked = False


def _by_broker(mqs: Iterable[MessageQueue]) -> dict[str, list[MessageQueue]]:
    out: dict[str, list[MessageQueue]] = {}
    for mq in mqs:
        out.setdefault(mq.broker_name, []).append(mq)
    return out
