"""LitePullConsumer: the application polls; queues come from a subscription (rebalanced) or are assigned.

Port of org.apache.rocketmq.client.consumer.DefaultLitePullConsumer and
impl.consumer.DefaultLitePullConsumerImpl (4.9.8). Background tasks pull every owned queue (long
polling, the subscription sent with each pull) into a cache bounded by pull_threshold_for_all and the
per-queue thresholds; `poll()` returns the next cached batch and counts it as consumed; `commit()`
stores the consumed positions on the brokers (or the local file for BROADCASTING), and with auto_commit
that also happens every auto_commit_interval_ms from within poll(). `seek()` moves a queue's position.
Deviation: `commit()` waits for the brokers' acknowledgements (Java's commitSync sends them oneway).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import Any, Self

from rocketq.client.config import ConsumerConfig, MessageModel
from rocketq.client.consumer.allocate import AllocateStrategy, strategy_by_name
from rocketq.client.consumer.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    RemoteBrokerOffsetStore,
    compute_pull_from_where,
)
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.pull_api import PullAPIWrapper, reset_retry_topic
from rocketq.client.consumer.push import consumer_config
from rocketq.client.consumer.rebalance import RebalanceImpl
from rocketq.client.consumer.subscription import (
    build_subscription,
    check_in_brokers,
    check_pending_subscription,
)
from rocketq.client.errors import ClientStateError, MQClientError
from rocketq.client.instance import ClientInstance, acquire_instance
from rocketq.client.model import MessageSelector, PullStatus
from rocketq.client.route import to_subscribe_queues
from rocketq.client.trace.encoder import ConsumeReturnType
from rocketq.client.trace.hooks import ConsumeTraceHook, new_dispatcher
from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.message import MessageExt, MessageQueue
from rocketq.common.msg_id import UniqueIdGenerator
from rocketq.common.service import ServiceState, lifecycle_step, spawn
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.consumer import ConsumerRunningInfo
from rocketq.remoting.protocol.bodies.heartbeat import ConsumeFromWhere as WireFromWhere
from rocketq.remoting.protocol.bodies.heartbeat import ConsumerData, ConsumeType, SubscriptionData
from rocketq.remoting.protocol.bodies.heartbeat import MessageModel as WireModel

log = logging.getLogger("rocketq.client.litepull")

BROKER_SUSPEND_MAX_TIME_MS = 20_000
FLOW_CONTROL_DELAY_S = 0.05
MIB = 1024 * 1024


class _QueueState:
    """One owned queue: its ProcessQueue (replaced on seek), pull and consumed positions, its task."""

    __slots__ = ("consume_offset", "paused", "pq", "pull_offset", "task")

    def __init__(self, pq: ProcessQueue, offset: int) -> None:
        self.pq = pq
        self.pull_offset = offset
        self.consume_offset = offset
        self.paused = False
        self.task: asyncio.Task[None] | None = None


class LitePullConsumer:
    """Consumes by polling: `subscribe()` or `assign()`, `await start()`, then `await poll()` in a loop."""

    def __init__(
        self,
        consumer_group: str,
        namesrv_addr: str | None = None,
        *,
        config: ConsumerConfig | None = None,
        allocate_strategy: AllocateStrategy | None = None,
        clock: Clock = SYSTEM_CLOCK,
        **settings: Any,
    ) -> None:
        settings.setdefault("pull_batch_size", 10)
        self.config = consumer_config(consumer_group, namesrv_addr, config, settings)
        self.group = consumer_group
        self._clock = clock
        self._strategy = allocate_strategy or strategy_by_name(self.config.allocate_message_queue_strategy)
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._pending_subscriptions: dict[str, SubscriptionData] = {}  # subscribed after start, being checked
        self._assigned_mqs: set[MessageQueue] | None = None
        self._queues: dict[MessageQueue, _QueueState] = {}
        self._cache: asyncio.Queue[tuple[MessageQueue, ProcessQueue, list[MessageExt]]] | None = None
        self._cached = 0
        self._state = ServiceState.CREATE_JUST
        self._instance: ClientInstance | None = None
        self._next_auto_commit_ms = 0
        self._iter_buffer: collections.deque[MessageExt] = collections.deque()  # see __aiter__
        self._rebalancing: asyncio.Task[None] | None = None
        self._rebalance_impl: RebalanceImpl | None = None
        # Message trace (enable_msg_trace): as Java's DefaultLitePullConsumerImpl, SubBefore and a
        # successful SubAfter for each pull that found messages.
        self._trace = new_dispatcher(self.config, consumer_group, "CONSUME")
        self._trace_hook = ConsumeTraceHook(self._trace, consumer_group, clock) if self._trace else None
        self._request_ids = UniqueIdGenerator()
        if self.config.consume_timestamp_ms is None:
            self.config.consume_timestamp_ms = clock.now_ms() - 30 * 60 * 1000

    # -- set-up -----------------------------------------------------------------------------------
    def subscribe(
        self, topic: str, expression: str | MessageSelector | None = "*"
    ) -> asyncio.Task[None] | None:
        """Subscribe `topic` with a tag expression or a MessageSelector (SQL92).

        Before start(), start() has the brokers check a SQL92 expression (MQClientError when one rejects
        it). On a running consumer that happens in the background: the returned task ends once the
        brokers know the subscription, or raises MQClientError (the subscription withdrawn).
        """
        if self._assigned_mqs is not None:
            raise MQClientError("subscribe() and assign() cannot be mixed")
        problem = C.topic_name_problem(topic)
        if problem is not None:
            raise MQClientError(f"cannot subscribe: {problem}")
        sub = build_subscription(topic, expression)
        if self._state is ServiceState.RUNNING:
            self._pending_subscriptions[topic] = sub  # in use (heartbeats, pulls) once the brokers accept it
            return spawn(f"subscribe-{self.group}-{topic}", self._subscribe_running(topic, sub))
        self._subscriptions[topic] = sub
        return None

    async def _subscribe_running(self, topic: str, sub: SubscriptionData) -> None:
        inst = self._running()
        current = await check_pending_subscription(inst, self.group, topic, sub, self._pending_subscriptions)
        if self._state is not ServiceState.RUNNING or not current:
            return  # shut down or subscribed again meanwhile
        self._subscriptions[topic] = sub
        self.rebalance.subscriptions[topic] = sub
        await self._refresh_subscriptions()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming `topic` (its queues are released at the next rebalance)."""
        self._subscriptions.pop(topic, None)
        self._pending_subscriptions.pop(topic, None)
        if self._state is ServiceState.RUNNING:
            self.rebalance.subscriptions.pop(topic, None)

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues (no rebalancing)."""
        if self._subscriptions:
            raise MQClientError("subscribe() and assign() cannot be mixed")
        wanted = set(mqs)
        self._assigned_mqs = wanted
        for mq in wanted:
            self._subscriptions.setdefault(mq.topic, build_subscription(mq.topic, "*"))
        if self._state is ServiceState.RUNNING:
            spawn("lite-pull-assign", self._apply_assignment(wanted))

    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer owns now (by subscribe's rebalance, or assign())."""
        return set(self._queues)

    # -- lifecycle -------------------------------------------------------------------------------------
    @lifecycle_step
    async def start(self) -> None:
        """Start: join the group (subscribe) or own the assigned queues, and begin fetching in the background."""
        if self._state is ServiceState.RUNNING:
            return
        if self._state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"consumer {self.group} cannot start again after shutdown")
        problem = C.group_name_problem(self.group)
        if problem is not None:
            raise MQClientError(f"consumer group: {problem}")
        inst = acquire_instance(self.config, consumer_group=self.group)
        self._instance = inst
        self._cache = asyncio.Queue()
        self.rebalance = self._rebalance_impl = RebalanceImpl(
            self, inst, self._strategy, self.config.message_model, clock=self._clock
        )
        if self._assigned_mqs is None:
            self.rebalance.subscriptions.update(self._subscriptions)
        self.offset_store: OffsetStore
        if self.config.message_model is MessageModel.BROADCASTING:
            self.offset_store = LocalFileOffsetStore(
                self.group, self.config.offset_store_dir, inst.stable_name
            )
        else:
            self.offset_store = RemoteBrokerOffsetStore(self.group, inst)
        self.pull_api = PullAPIWrapper(inst, self.group)
        inst.register_consumer(self)
        try:
            await self.offset_store.load()
            self._state = ServiceState.RUNNING
            await inst.start()
            inst.set_rebalance_interval(self.config.rebalance_interval_ms)
            await self._refresh_subscriptions(check=True)
            if self._assigned_mqs is not None:
                await self._apply_assignment(self._assigned_mqs)
        except BaseException:
            self._state = ServiceState.START_FAILED
            await self._stop_background()
            await inst.unregister_consumer(self.group)
            raise
        self._next_auto_commit_ms = self._clock.monotonic_ms() + self.config.auto_commit_interval_ms
        if self._trace is not None:
            await self._trace.start()
        log.info("lite pull consumer %s started on %s", self.group, inst.client_id)

    async def _refresh_subscriptions(self, *, check: bool = False) -> None:
        inst = self._running()
        for topic in list(self._subscriptions):
            await inst.update_topic_route(topic)
        if check:  # before the heartbeat: a broker must not hold an expression it cannot compile
            await check_in_brokers(inst, self.group, self._subscriptions.values())
        await inst.send_heartbeat_to_all_brokers()
        if self._assigned_mqs is None:
            inst.rebalance_immediately()

    @lifecycle_step
    async def shutdown(self) -> None:
        """Stop pulling, commit the consumed positions (when auto_commit), leave the group."""
        if self._state is not ServiceState.RUNNING:
            self._state = ServiceState.SHUTDOWN_ALREADY
            return
        inst = self._running()
        self._state = ServiceState.STOPPING
        await self._stop_background()
        if self.config.auto_commit:
            await self._commit(oneway=False)
        if self._trace is not None:
            await self._trace.shutdown()
        self._state = ServiceState.SHUTDOWN_ALREADY
        await inst.unregister_consumer(self.group)

    async def _stop_background(self) -> None:
        """Cancel (and await) this consumer's rebalance and pull loops; every queue's generation dropped.

        Without this a rebalance still in flight at shutdown goes on taking queues and asking brokers
        for offsets for a consumer that has left (while the shared instance lives on).
        """
        rebalancing = self._rebalancing
        if rebalancing is not None:
            rebalancing.cancel()
            await asyncio.wait((rebalancing,))
        if self._rebalance_impl is not None:
            for pq in self._rebalance_impl.process_queues.values():
                pq.dropped = True
        tasks = [st.task for st in self._queues.values() if st.task is not None]
        for st in self._queues.values():
            st.pq.dropped = True
            st.task = None
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.shutdown()

    def _running(self) -> ClientInstance:
        if self._state not in (ServiceState.RUNNING, ServiceState.STOPPING) or self._instance is None:
            what = (
                "is not started; call await consumer.start()"
                if self._state is ServiceState.CREATE_JUST
                else "is shut down"
            )
            raise ClientStateError(f"consumer {self.group} {what}")
        return self._instance

    # -- polling ----------------------------------------------------------------------------------------
    async def poll(self, timeout_ms: int | None = None) -> list[MessageExt]:
        """The next batch of messages (up to pull_batch_size), [] when none came within the timeout."""
        self._running()
        if self.config.auto_commit and self._clock.monotonic_ms() >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = self._clock.monotonic_ms() + self.config.auto_commit_interval_ms
            await self._commit(oneway=True)
        timeout = (self.config.poll_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        assert self._cache is not None
        while True:
            remaining = deadline - loop.time()
            try:
                if remaining <= 0 or not self._cache.empty():
                    # A batch is waiting (the common case under load): no timeout scope to arm and cancel.
                    mq, pq, msgs = self._cache.get_nowait()
                else:
                    async with asyncio.timeout(remaining):  # not wait_for: on 3.11 it can drop a cancellation
                        mq, pq, msgs = await self._cache.get()
            except (TimeoutError, asyncio.QueueEmpty):
                return []
            self._cached -= len(msgs)
            st = self._queues.get(mq)
            if st is None or st.pq is not pq or pq.dropped:
                continue  # stale: the queue was sought or released since this batch was pulled
            offset = pq.remove_messages(msgs)
            if offset >= 0:
                st.consume_offset = offset
            if mq.topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX):  # a queue holds its topic's messages only:
                reset_retry_topic(msgs, self.group)  # other pulls need no look at each message's topic
            return msgs

    def __aiter__(self) -> AsyncIterator[MessageExt]:
        """`async for msg in consumer:` the polled messages one by one, until the consumer is shut down.

        A message counts as consumed once the loop has taken it: with auto_commit (the default) its
        position is committed by a later poll (every auto_commit_interval_ms) or at shutdown; without,
        call `await consumer.commit()` when the work is done. Leaving the loop loses nothing committed;
        messages taken but not committed come again after a restart.
        """
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[MessageExt]:
        # One buffer per consumer, not per loop: a batch taken but not yet handed out survives a `break`
        # and is what the next `async for` starts with.
        buffered = self._iter_buffer
        while self._state is ServiceState.RUNNING:
            if not buffered:
                buffered.extend(await self.poll())
                continue
            yield buffered.popleft()

    async def commit(self) -> None:
        """Store every owned queue's consumed position and wait for the brokers to acknowledge."""
        self._running()
        await self._commit(oneway=False)

    commit_sync = commit

    async def _commit(self, *, oneway: bool) -> None:
        for mq, st in list(self._queues.items()):
            if st.consume_offset >= 0:
                self.offset_store.update_offset(mq, st.consume_offset, increase_only=False)
        if oneway:
            await self.offset_store.persist_all(list(self._queues))
        else:
            # All at once: a slow broker costs one request timeout, not one per queue.
            await asyncio.gather(*(self.offset_store.persist(mq) for mq in list(self._queues)))
            if isinstance(self.offset_store, LocalFileOffsetStore):
                await self.offset_store.persist_all(list(self._queues))

    async def committed(self, mq: MessageQueue) -> int:
        """The group's stored offset of `mq` on the broker (-1 when none)."""
        self._running()
        return await self.offset_store.read_from_store(mq)

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Continue `mq` from `offset` (within the queue's min..max offsets)."""
        inst = self._running()
        st = self._queues.get(mq)
        if st is None:
            raise MQClientError(f"{mq} is not assigned to this consumer; cannot seek")
        low, high = await inst.min_offset(mq), await inst.max_offset(mq)
        if not low <= offset <= high:
            raise MQClientError(f"seek offset {offset} of {mq} is outside [{low}, {high}]")
        self._restart_queue(mq, st, offset)

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        """Continue `mq` from its first stored offset."""
        await self.seek(mq, await self._running().min_offset(mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        """Continue `mq` from its end (only messages stored from now on)."""
        await self.seek(mq, await self._running().max_offset(mq))

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        """Stop fetching from these queues until resume() (poll() returns what was already fetched)."""
        for mq in mqs:
            if mq in self._queues:
                self._queues[mq].paused = True

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        """Fetch again from queues paused with pause()."""
        for mq in mqs:
            if mq in self._queues:
                self._queues[mq].paused = False

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """Every readable queue of `topic` (for assign())."""
        inst = self._running()
        await inst.update_topic_route(topic)
        route = inst.route_table.get(topic)
        if route is None:
            raise MQClientError(f"no route for topic {topic!r}")
        return sorted(to_subscribe_queues(topic, route))

    # -- queue ownership -----------------------------------------------------------------------------------
    async def _apply_assignment(self, wanted: set[MessageQueue]) -> None:
        for mq in list(self._queues):
            if mq not in wanted:
                await self._release(mq)
        for mq in sorted(wanted - set(self._queues)):
            offset = await self.compute_pull_from_where(mq)
            if offset < 0:
                log.warning("start offset of assigned %s unknown; using 0", mq)
                offset = 0
            self.dispatch_pull(mq, ProcessQueue(0, self._clock), offset)

    def _restart_queue(self, mq: MessageQueue, st: _QueueState, offset: int) -> None:
        st.pq.dropped = True
        if self._iter_buffer:  # what `async for` had taken from this queue is stale now
            kept = [
                m
                for m in self._iter_buffer
                if (m.topic, m.broker_name, m.queue_id) != (mq.topic, mq.broker_name, mq.queue_id)
            ]
            self._iter_buffer.clear()
            self._iter_buffer.extend(kept)
        if st.task is not None:
            st.task.cancel()
        fresh = _QueueState(ProcessQueue(st.pq.generation, self._clock), offset)
        fresh.paused = st.paused
        self._queues[mq] = fresh
        fresh.task = spawn(f"lite-pull-{mq}", self._pull_loop(mq, fresh))

    async def _release(self, mq: MessageQueue) -> None:
        st = self._queues.pop(mq, None)
        if st is None:
            return
        st.pq.dropped = True
        if st.task is not None:
            st.task.cancel()
        if st.consume_offset >= 0:
            self.offset_store.update_offset(mq, st.consume_offset, increase_only=False)
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)

    async def _pull_loop(self, mq: MessageQueue, st: _QueueState) -> None:
        cfg = self.config
        while self._state is ServiceState.RUNNING and not st.pq.dropped:
            if (
                st.paused
                or self._cached > cfg.pull_threshold_for_all
                or st.pq.msg_count > cfg.pull_threshold_for_queue
                or (st.pq.msg_size > cfg.pull_threshold_size_for_queue_mib * MIB)
            ):
                await asyncio.sleep(FLOW_CONTROL_DELAY_S)
                continue
            sub = self._subscriptions.get(mq.topic) or build_subscription(mq.topic, "*")
            sys_flag = C.PullSysFlag.build(False, True, True) | C.PullSysFlag.FLAG_LITE_PULL_MESSAGE
            st.pq.mark_pulled()
            try:
                result = await self.pull_api.pull(
                    mq,
                    sub,
                    st.pull_offset,
                    cfg.pull_batch_size,
                    sys_flag,
                    0,
                    BROKER_SUSPEND_MAX_TIME_MS,
                    cfg.consumer_timeout_ms_when_suspend,
                    send_subscription=True,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("lite pull of %s failed: %s", mq, exc)
                await asyncio.sleep(cfg.pull_time_delay_ms_when_exception / 1000)
                continue
            if st.pq.dropped:
                return
            st.pull_offset = result.next_begin_offset
            if result.status is PullStatus.FOUND and result.messages:
                if self._trace_hook is not None:
                    traced = self._trace_hook.before(
                        result.messages, self._request_ids.next_id(self._clock.now_ms())
                    )
                    self._trace_hook.after(traced, len(result.messages), True, ConsumeReturnType.SUCCESS)
                st.pq.put_messages(result.messages)
                self._cached += len(result.messages)
                assert self._cache is not None
                self._cache.put_nowait((mq, st.pq, result.messages))
            elif result.status is PullStatus.OFFSET_ILLEGAL:
                log.warning("offset of %s is illegal; continuing at %d", mq, result.next_begin_offset)
                st.consume_offset = result.next_begin_offset

    # -- RebalanceHost ----------------------------------------------------------------------------------------
    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        return await compute_pull_from_where(self._running(), self.offset_store, self.config, mq)

    def dispatch_pull(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        if self._state is not ServiceState.RUNNING:
            return
        st = _QueueState(pq, offset)
        self._queues[mq] = st
        st.task = spawn(f"lite-pull-{mq}", self._pull_loop(mq, st))

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        self.offset_store.remove_offset(mq)

    async def remove_unnecessary_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        await self._release(mq)
        return True

    async def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None:
        return None

    # -- ConsumerInner -----------------------------------------------------------------------------------------
    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=ConsumeType.CONSUME_ACTIVELY,
            message_model=WireModel(self.config.message_model.value),
            consume_from_where=WireFromWhere(self.config.consume_from_where.value),
            subscription_data_set=list(self._subscriptions.values()),
            unit_mode=self.config.unit_mode,
        )

    def subscription_topics(self) -> set[str]:
        return set(self._subscriptions)

    def update_subscribe_info(self, topic: str, mqs: set[MessageQueue]) -> None:
        if self._assigned_mqs is None and topic in self.rebalance.subscriptions:
            self.rebalance.topic_subscribe_info[topic] = mqs

    async def do_rebalance(self) -> None:
        if self._state is not ServiceState.RUNNING or self._assigned_mqs is not None:
            return
        # Its own task, so that shutdown() can cancel it without cancelling the instance's rebalance service.
        task = asyncio.ensure_future(self.rebalance.do_rebalance())
        self._rebalancing = task
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if self._rebalancing is task:
                self._rebalancing = None
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]

    async def persist_consumer_offset(self) -> None:
        return None  # offsets move only on commit()

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: each owned queue drops what it buffered, seeks, and stores the offset.

        Queues another member owns are left to it (the broker tells every member). Stored at once, so
        that a restart after the reset starts from there too (MQClientInstance#resetOffset).
        """
        owned = [(mq, offset) for mq, offset in offsets.items() if mq.topic == topic and mq in self._queues]
        for mq, offset in owned:
            self._restart_queue(mq, self._queues[mq], offset)
            self.offset_store.update_offset(mq, offset, increase_only=False)
        await asyncio.gather(*(self.offset_store.persist(mq) for mq, _ in owned))

    def offset_table(self, topic: str) -> dict[MessageQueue, int]:
        return {mq: st.consume_offset for mq, st in self._queues.items() if mq.topic == topic}

    def running_info(self) -> ConsumerRunningInfo:
        props = {"PROP_CONSUME_TYPE": ConsumeType.CONSUME_ACTIVELY.value, "PROP_CLIENT_VERSION": "V4_9_8"}
        return ConsumerRunningInfo(properties=props, subscription_set=list(self._subscriptions.values()))

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> bytes:
        return fastjson.dumps(
            {
                "autoCommit": True,
                "consumeResult": "CR_THROW_EXCEPTION",
                "order": False,
                "remark": "a lite pull consumer has no listener",
                "spentTimeMills": 0,
            }
        )
