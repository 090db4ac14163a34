"""The push consumer's pull loops: one per owned queue, long polling, flow control, and a watchdog.

Port of org.apache.rocketmq.client.impl.consumer.{PullMessageService, PullRequest} and
DefaultMQPushConsumerImpl.pullMessage (4.9.8). Each owned queue has a task that pulls with FLAG_SUSPEND
(the broker holds an empty pull for broker_suspend_max_time_ms, 15 s; the client waits
consumer_timeout_ms_when_suspend, 30 s), hands found messages to the consume service and pulls again;
it backs off 50 ms while its ProcessQueue is over pullThresholdForQueue (1000 messages / 100 MiB) or its
offset span over consumeConcurrentlyMaxSpan (2000), and stops when the queue is dropped.
Deviation: a watchdog restarts the loop of a queue that is still owned but whose task ended or whose
last pull is older than pull_max_idle_time_ms (Java only drops such a queue at the next rebalance).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from rocketq.client.config import ConsumerConfig, MessageModel
from rocketq.client.consumer.consume_service import ConcurrentConsumeService, OrderlyConsumeService
from rocketq.client.consumer.offset_store import OffsetStore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.pull_api import PullAPIWrapper
from rocketq.client.consumer.rebalance import RebalanceImpl
from rocketq.client.model import PullStatus
from rocketq.common.constants import PullSysFlag
from rocketq.common.message import MessageQueue
from rocketq.common.service import spawn
from rocketq.remoting.errors import FlowControlError, SubscriptionNotExistError, SubscriptionNotLatestError

log = logging.getLogger("rocketq.client.pull")

MIB = 1024 * 1024
FLOW_CONTROL_DELAY_S = 0.05
BROKER_FLOW_CONTROL_DELAY_S = 0.02
SUSPEND_DELAY_S = 1.0
SUBSCRIPTION_RETRY_DELAY_S = 0.2
OFFSET_MOVED_DROP_DELAY_S = 10.0
STOP = -1.0
YIELD = -2.0  # pull again after one loop turn


class PullHost(Protocol):
    group: str
    config: ConsumerConfig
    offset_store: OffsetStore
    rebalance: RebalanceImpl
    consume_service: ConcurrentConsumeService | OrderlyConsumeService
    pull_api: PullAPIWrapper
    consume_orderly: bool

    @property
    def pulling(self) -> bool: ...

    @property
    def paused(self) -> bool: ...

    async def compute_pull_from_where(self, mq: MessageQueue) -> int: ...


class PullRequest:
    __slots__ = ("mq", "next_offset", "pq", "previously_locked")

    def __init__(self, mq: MessageQueue, pq: ProcessQueue, next_offset: int) -> None:
        self.mq = mq
        self.pq = pq
        self.next_offset = next_offset
        self.previously_locked = False

    def __repr__(self) -> str:
        return f"PullRequest({self.mq}, next={self.next_offset}, gen={self.pq.generation})"


class PullService:
    """Pull loops of one push consumer."""

    def __init__(self, host: PullHost) -> None:
        self.host = host
        self._loops: dict[MessageQueue, tuple[PullRequest, asyncio.Task[None]]] = {}
        self._flow_logged = 0
        self._error_logged: dict[MessageQueue, int] = {}

    def start_pull(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        old = self._loops.get(mq)
        if old is not None and not old[1].done():
            old[1].cancel()
        req = PullRequest(mq, pq, offset)
        self._loops[mq] = (req, spawn(f"pull-{mq.topic}-{mq.broker_name}-{mq.queue_id}", self._loop(req)))

    def forget(self, mq: MessageQueue) -> None:
        entry = self._loops.pop(mq, None)
        if entry is not None and not entry[1].done():
            entry[1].cancel()

    async def stop(self) -> None:
        tasks = [task for _, task in self._loops.values()]
        self._loops.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def revive_lost(self) -> int:
        """Watchdog round: restart loops of owned queues that ended or went quiet; how many were."""
        revived = 0
        for mq, pq in list(self.host.rebalance.process_queues.items()):
            entry = self._loops.get(mq)
            if pq.dropped or entry is None or entry[0].pq is not pq:
                continue
            req, task = entry
            if task.done() or pq.is_pull_expired(self.host.config.pull_max_idle_time_ms):
                log.warning("reviving the lost pull of %s at offset %d", mq, req.next_offset)
                task.cancel()
                self._loops[mq] = (
                    req,
                    spawn(f"pull-{mq.topic}-{mq.broker_name}-{mq.queue_id}", self._loop(req)),
                )
                revived += 1
        return revived

    async def _loop(self, req: PullRequest) -> None:
        while self.host.pulling and not req.pq.dropped:
            delay = await self._pull_once(req)
            if delay == STOP:
                return
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay == YIELD:
                # Messages were just handed to the consume workers: let them run before this loop
                # writes its next pull (a write syscall would otherwise sit between arrival and listener).
                await asyncio.sleep(0)

    def _flow_control(self, what: str, req: PullRequest) -> float:
        if self._flow_logged % 1000 == 0:
            log.info("flow control on %s (%s): %r", req.mq, what, req.pq)
        self._flow_logged += 1
        return FLOW_CONTROL_DELAY_S

    async def _pull_once(self, req: PullRequest) -> float:
        host, cfg, pq, mq = self.host, self.host.config, req.pq, req.mq
        pq.mark_pulled()
        exception_delay = cfg.pull_time_delay_ms_when_exception / 1000
        if host.paused:
            return SUSPEND_DELAY_S
        if pq.msg_count > cfg.pull_threshold_for_queue:
            return self._flow_control("cached message count", req)
        if pq.msg_size > cfg.pull_threshold_size_for_queue_mib * MIB:
            return self._flow_control("cached message size", req)
        if not host.consume_orderly:
            if pq.max_span > cfg.consume_concurrently_max_span:
                return self._flow_control("offset span", req)
        elif pq.locked:
            if not req.previously_locked:
                offset = await host.compute_pull_from_where(mq)
                if offset < 0:
                    return exception_delay
                req.next_offset, req.previously_locked = offset, True
        else:
            return exception_delay
        sub = host.rebalance.subscriptions.get(mq.topic)
        if sub is None:
            return exception_delay
        commit_offset = 0
        if cfg.message_model is MessageModel.CLUSTERING:
            commit_offset = max(0, host.offset_store.read_memory(mq))
        send_sub = cfg.post_subscription_when_pull
        sys_flag = PullSysFlag.build(commit_offset > 0, True, send_sub)
        try:
            result = await host.pull_api.pull(
                mq,
                sub,
                req.next_offset,
                cfg.pull_batch_size,
                sys_flag,
                commit_offset,
                cfg.broker_suspend_max_time_ms,
                cfg.consumer_timeout_ms_when_suspend,
                send_subscription=send_sub,
            )
        except asyncio.CancelledError:
            raise
        except FlowControlError:
            return BROKER_FLOW_CONTROL_DELAY_S
        except (SubscriptionNotExistError, SubscriptionNotLatestError) as exc:
            # The broker has not (or not the latest of) this member's subscription: tell it now.
            log.info("pull of %s: %s; sending a heartbeat", mq, exc)
            host.rebalance.instance.heartbeat_soon()
            return SUBSCRIPTION_RETRY_DELAY_S
        except Exception as exc:
            count = self._error_logged.get(mq, 0)
            if count % 30 == 0:
                log.warning("pull of %s failed: %s", mq, exc)
            self._error_logged[mq] = count + 1
            return exception_delay
        self._error_logged.pop(mq, None)
        if pq.dropped:
            return STOP
        return self._on_result(req, result.status, result.next_begin_offset, result.messages)

    def _on_result(self, req: PullRequest, status: PullStatus, next_offset: int, msgs: list) -> float:  # type: ignore[type-arg]
        host, pq, mq = self.host, req.pq, req.mq
        if status is PullStatus.FOUND:
            req.next_offset = next_offset
            if msgs:
                dispatch = pq.put_messages(msgs)
                host.consume_service.submit(msgs, pq, mq, dispatch)
            else:
                self._correct_tags_offset(req)
            interval = host.config.pull_interval_ms / 1000
            return interval if interval > 0 or not msgs else YIELD
        if status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            req.next_offset = next_offset
            self._correct_tags_offset(req)
            return 0.0
        # OFFSET_ILLEGAL: start over from where the broker says, after the queue is rebuilt.
        log.warning("offset of %s is illegal; moving to %d", mq, next_offset)
        req.next_offset = next_offset
        pq.dropped = True
        spawn(f"offset-moved-{mq}", self._drop_moved(req))
        return STOP

    def _correct_tags_offset(self, req: PullRequest) -> None:
        # Nothing held: every message up to next_offset was filtered out, so it counts as consumed.
        if req.pq.msg_count == 0:
            self.host.offset_store.update_offset(req.mq, req.next_offset, increase_only=True)

    async def _drop_moved(self, req: PullRequest) -> None:
        await asyncio.sleep(OFFSET_MOVED_DROP_DELAY_S)
        if not self.host.pulling:
            return
        self.host.offset_store.update_offset(req.mq, req.next_offset, increase_only=False)
        await self.host.offset_store.persist(req.mq)
        await self.host.rebalance.remove_process_queue(req.mq)
        self.host.rebalance.instance.rebalance_immediately()
