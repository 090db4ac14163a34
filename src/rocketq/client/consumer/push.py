"""PushConsumer: subscribe, register a listener, and messages arrive (pulled underneath with long polling).

Port of org.apache.rocketmq.client.consumer.DefaultMQPushConsumer and
impl.consumer.DefaultMQPushConsumerImpl (4.9.8). The consumer wires a RebalanceImpl (queue ownership),
a PullService (a long-polling loop per owned queue), a consume service (concurrent or orderly) and an
offset store (on the brokers for CLUSTERING, in a local file for BROADCASTING) into the shared
ClientInstance, which drives rebalancing (20 s, and at once when the group changes), heartbeats and
offset commits (5 s). A CLUSTERING consumer also subscribes `%RETRY%<group>`, where messages its
listener failed on come back. Deviation: a watchdog revives lost pulls (see pull_service.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from types import TracebackType
from typing import Any, Self

from rocketq.client import metrics as client_metrics
from rocketq.client.config import ConsumerConfig, MessageModel
from rocketq.client.consumer.allocate import AllocateStrategy, strategy_by_name
from rocketq.client.consumer.consume_service import ConcurrentConsumeService, Listener, OrderlyConsumeService
from rocketq.client.consumer.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    RemoteBrokerOffsetStore,
    compute_pull_from_where,
)
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.pull_api import PullAPIWrapper
from rocketq.client.consumer.pull_service import PullService
from rocketq.client.consumer.rebalance import RebalanceImpl
from rocketq.client.consumer.subscription import (
    build_subscription,
    check_in_brokers,
    check_pending_subscription,
)
from rocketq.client.errors import ClientStateError, MQClientError
from rocketq.client.instance import ClientInstance, acquire_instance
from rocketq.client.model import ConsumeResult, MessageSelector
from rocketq.client.producer.inner import inner_producer
from rocketq.client.trace.hooks import ConsumeTraceHook, new_dispatcher
from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.message import Message, MessageExt, MessageQueue
from rocketq.common.service import PeriodicService, ServiceState, lifecycle_step, spawn, start_all, stop_all
from rocketq.remoting.errors import BrokerResponseError, RemotingError
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.consumer import ConsumerRunningInfo, ProcessQueueInfo
from rocketq.remoting.protocol.bodies.heartbeat import ConsumeFromWhere as WireFromWhere
from rocketq.remoting.protocol.bodies.heartbeat import ConsumerData, ConsumeType, SubscriptionData
from rocketq.remoting.protocol.bodies.heartbeat import MessageModel as WireModel

log = logging.getLogger("rocketq.client.push")

WATCHDOG_INTERVAL_S = 5.0
SEND_BACK_TIMEOUT_MS = 5000


def consumer_config(
    group: str, namesrv_addr: str | None, config: ConsumerConfig | None, settings: dict[str, Any]
) -> ConsumerConfig:
    values = dict(config.model_dump()) if config is not None else {}
    values.update(settings)
    values["consumer_group"] = group
    if namesrv_addr is not None:
        values["namesrv_addr"] = namesrv_addr
    return ConsumerConfig.build(values, source=f"consumer {group}")


class PushConsumer:
    """Consumes by callback. Subscribe, register a listener, then `await start()`.

    Args:
        consumer_group: the group; CLUSTERING members share the topic's queues.
        namesrv_addr: name servers, "host:port;host:port" (default: NAMESRV_ADDR).
        config: a ConsumerConfig; keyword settings (message_model=..., consume_thread_max=..., any
            ConsumerConfig field or RocketMQ alias) override it.
        allocate_strategy: a custom allocation strategy object (default from the config, "AVG").
    """

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
        self.config = consumer_config(consumer_group, namesrv_addr, config, settings)
        self.group = consumer_group
        self._clock = clock
        self._strategy = allocate_strategy or strategy_by_name(self.config.allocate_message_queue_strategy)
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._pending_subscriptions: dict[str, SubscriptionData] = {}  # subscribed after start, being checked
        self._listener: Listener | None = None
        self.consume_orderly = False
        self._state = ServiceState.CREATE_JUST
        self._paused = False
        self._start_ms = 0
        self._instance: ClientInstance | None = None
        self._services: list[PeriodicService] = []
        if self.config.consume_timestamp_ms is None:
            self.config.consume_timestamp_ms = clock.now_ms() - 30 * 60 * 1000

    # -- configuration before start ---------------------------------------------------------------------
    def subscribe(
        self, topic: str, expression: str | MessageSelector | None = "*"
    ) -> asyncio.Task[None] | None:
        """Subscribe `topic` with a tag expression ("TagA || TagB", "*") or a MessageSelector (SQL92).

        Before start() the subscription is checked by start(). On a running consumer the brokers check a
        SQL92 expression and hear of the subscription at once, in the background: the returned task ends
        when they have, and raises MQClientError (the subscription withdrawn, logged as an error if
        nobody awaits the task) when a broker rejects the expression.
        """
        problem = C.topic_name_problem(topic)
        if problem is not None:
            raise MQClientError(f"cannot subscribe: {problem}")
        sub = build_subscription(topic, expression)
        if self._state is ServiceState.RUNNING:
            self._pending_subscriptions[topic] = sub  # in use (heartbeats, pulls) once the brokers accept it
            return spawn(f"subscribe-{self.group}-{topic}", self._subscribe_running(topic, sub))
        self._subscriptions[topic] = sub
        return None

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming `topic` (its queues are released at the next rebalance)."""
        self._subscriptions.pop(topic, None)
        self._pending_subscriptions.pop(topic, None)
        if self._state is ServiceState.RUNNING:
            self.rebalance.subscriptions.pop(topic, None)
            spawn(f"unsubscribe-{topic}", self._after_subscription_change())

    def register_listener(self, fn: Listener) -> None:
        """fn(list[MessageExt]) -> ConsumeResult.SUCCESS | RECONSUME_LATER (sync or async; raising = later)."""
        self._listener, self.consume_orderly = fn, False

    def register_orderly_listener(self, fn: Listener) -> None:
        """fn(list[MessageExt]) -> SUCCESS | SUSPEND_CURRENT_QUEUE_A_MOMENT; one batch per queue at a time."""
        self._listener, self.consume_orderly = fn, True

    # Java spellings
    registerMessageListener = register_listener

    # -- lifecycle -------------------------------------------------------------------------------------
    @lifecycle_step
    async def start(self) -> None:
        """Start consuming: join the group, rebalance, pull and run the listener (subscribe and register a listener first)."""
        if self._state is ServiceState.RUNNING:
            return
        if self._state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"consumer {self.group} cannot start again after shutdown")
        problem = C.group_name_problem(self.group)
        if problem is not None:
            raise MQClientError(f"consumer group: {problem}")
        if self._listener is None:
            raise MQClientError(
                "register a listener before start(): register_listener(fn) or register_orderly_listener(fn)"
            )
        if not self._subscriptions:
            raise MQClientError("subscribe to at least one topic before start()")
        inst = acquire_instance(self.config, consumer_group=self.group)
        self._wire(inst)
        inst.register_consumer(self)
        try:
            await self._start_on(inst)
        except BaseException:
            self._state = ServiceState.START_FAILED
            await inst.unregister_consumer(self.group)
            raise

    def _wire(self, inst: ClientInstance) -> None:
        self._instance = inst
        self.rebalance = RebalanceImpl(
            self,
            inst,
            self._strategy,
            self.config.message_model,
            orderly=self.consume_orderly,
            clock=self._clock,
        )
        self.rebalance.subscriptions.update(self._subscriptions)
        if self.config.message_model is MessageModel.CLUSTERING:
            retry = C.retry_topic(self.group)
            self.rebalance.subscriptions[retry] = build_subscription(retry, "*")
        self.offset_store: OffsetStore
        if self.config.message_model is MessageModel.BROADCASTING:
            self.offset_store = LocalFileOffsetStore(
                self.group, self.config.offset_store_dir, inst.stable_name
            )
        else:
            self.offset_store = RemoteBrokerOffsetStore(self.group, inst)
        self.pull_api = PullAPIWrapper(inst, self.group)
        assert self._listener is not None
        service_cls = OrderlyConsumeService if self.consume_orderly else ConcurrentConsumeService
        self.consume_service: ConcurrentConsumeService | OrderlyConsumeService = service_cls(
            self, self._listener, self._clock
        )
        self._trace = new_dispatcher(self.config, self.group, "CONSUME")
        if self._trace is not None:  # ConsumeMessageTraceHookImpl: SubBefore / SubAfter per listener call
            self.consume_service.trace = ConsumeTraceHook(self._trace, self.group, self._clock)
        self.pull_service = PullService(self)

    async def _start_on(self, inst: ClientInstance) -> None:
        await self.offset_store.load()
        if self._trace is not None:
            await self._trace.start()
        metrics = client_metrics.active()
        if metrics is not None:
            metrics.watch_consumer(self)
        self.consume_service.start()
        self._state = ServiceState.RUNNING
        self._start_ms = self._clock.now_ms()
        await inst.start()
        inst.set_rebalance_interval(self.config.rebalance_interval_ms)
        self._services = [
            PeriodicService(
                f"pull-watchdog-{self.group}", WATCHDOG_INTERVAL_S, self._watchdog, WATCHDOG_INTERVAL_S
            )
        ]
        if self.consume_orderly and self.config.message_model is MessageModel.CLUSTERING:
            interval = self.config.lock_interval_ms / 1000
            self._services.append(
                PeriodicService(f"lock-renewal-{self.group}", interval, self.rebalance.lock_all, interval)
            )
        if isinstance(self.consume_service, ConcurrentConsumeService):
            # Java checks every consumeTimeout minutes; the interval follows the (possibly ms) timeout.
            every = self.config.effective_consume_timeout_ms() / 1000
            self._services.append(
                PeriodicService(f"clean-expired-{self.group}", every, self._clean_expired, every)
            )
        await start_all(self._services)
        for topic in list(self.rebalance.subscriptions):
            await inst.update_topic_route(topic)
        await check_in_brokers(inst, self.group, self.rebalance.subscriptions.values())
        await inst.send_heartbeat_to_all_brokers()
        inst.rebalance_immediately()
        log.info(
            "push consumer %s started on %s (%s)", self.group, inst.client_id, self.config.message_model.value
        )

    async def _subscribe_running(self, topic: str, sub: SubscriptionData) -> None:
        """A subscription made after start(): checked by the brokers first, then in use and announced."""
        inst = self._instance
        assert inst is not None
        current = await check_pending_subscription(inst, self.group, topic, sub, self._pending_subscriptions)
        if self._state is not ServiceState.RUNNING or not current:
            return  # shut down or subscribed again meanwhile
        self._subscriptions[topic] = sub
        self.rebalance.subscriptions[topic] = sub
        await self._after_subscription_change()

    @lifecycle_step
    async def shutdown(self) -> None:
        """Stop pulling, let running listener calls finish, commit offsets, leave the group."""
        if self._state is not ServiceState.RUNNING:
            self._state = ServiceState.SHUTDOWN_ALREADY
            return
        self._state = ServiceState.STOPPING
        inst = self._instance
        assert inst is not None
        await stop_all(self._services)
        await self.pull_service.stop()
        await self.consume_service.shutdown(max(self.config.await_termination_ms_when_shutdown, 3000))
        if self._trace is not None:
            await self._trace.shutdown()  # flushes the traces of the listener calls that ran (bounded)
        if isinstance(self.offset_store, LocalFileOffsetStore):
            await self.offset_store.persist_all(list(self.rebalance.process_queues))
        else:
            for mq in list(self.rebalance.process_queues):
                await self.offset_store.persist(mq)  # acknowledged: a successor starts where this one stopped
        if self.consume_orderly and self.config.message_model is MessageModel.CLUSTERING:
            await self.rebalance.unlock_all()
        for pq in self.rebalance.process_queues.values():
            pq.dropped = True
        self._state = ServiceState.SHUTDOWN_ALREADY
        await inst.unregister_consumer(self.group)
        log.info("push consumer %s shut down", self.group)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.shutdown()

    def suspend(self) -> None:
        """Stop pulling for now (messages already fetched are still consumed); resume() goes on."""
        self._paused = True

    def resume(self) -> None:
        """Resume pulling after suspend()."""
        self._paused = False
        if self._instance is not None:
            self._instance.rebalance_immediately()

    @property
    def client_id(self) -> str:
        if self._instance is None:
            raise ClientStateError(f"consumer {self.group} is not started")
        return self._instance.client_id

    @property
    def pulling(self) -> bool:
        return self._state is ServiceState.RUNNING

    @property
    def paused(self) -> bool:
        return self._paused

    def assigned_queues(self) -> set[MessageQueue]:
        """The queues this member owns now (all subscribed topics, including the retry topic)."""
        if self._state is not ServiceState.RUNNING:
            return set()
        return {mq for mq, pq in self.rebalance.process_queues.items() if not pq.dropped}

    async def _after_subscription_change(self) -> None:
        inst = self._instance
        if inst is None:
            return
        for topic in list(self.rebalance.subscriptions):
            await inst.update_topic_route(topic)
        await inst.send_heartbeat_to_all_brokers()
        inst.rebalance_immediately()

    async def _watchdog(self) -> None:
        self.pull_service.revive_lost()

    async def _clean_expired(self) -> None:
        if isinstance(self.consume_service, ConcurrentConsumeService) and self._state is ServiceState.RUNNING:
            await self.consume_service.clean_expired(self.rebalance.process_queues)

    # -- ConsumerInner (driven by the client instance) ------------------------------------------------------
    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=WireModel(self.config.message_model.value),
            consume_from_where=WireFromWhere(self.config.consume_from_where.value),
            subscription_data_set=list(self.rebalance.subscriptions.values()),
            unit_mode=self.config.unit_mode,
        )

    def subscription_topics(self) -> set[str]:
        return set(self.rebalance.subscriptions) if self._instance is not None else set(self._subscriptions)

    def update_subscribe_info(self, topic: str, mqs: set[MessageQueue]) -> None:
        if topic in self.rebalance.subscriptions:
            self.rebalance.topic_subscribe_info[topic] = mqs

    async def do_rebalance(self) -> None:
        if self._state is ServiceState.RUNNING and not self._paused:
            await self.rebalance.do_rebalance()

    async def persist_consumer_offset(self) -> None:
        if self._instance is not None:
            await self.offset_store.persist_all(list(self.rebalance.process_queues))

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: drop the topic's queues, store the new offsets, rebalance."""
        for mq, pq in list(self.rebalance.process_queues.items()):
            if mq.topic == topic:
                pq.dropped = True
                pq.clear()
        for mq, offset in list(offsets.items()):
            self.offset_store.update_offset(mq, offset, increase_only=False)
            await self.offset_store.persist(mq)
        for mq in [m for m in self.rebalance.process_queues if m.topic == topic]:
            self.pull_service.forget(mq)
            self.rebalance.process_queues.pop(mq, None)
        if self._instance is not None:
            self._instance.rebalance_immediately()

    def offset_table(self, topic: str) -> dict[MessageQueue, int]:
        return self.offset_store.clone_offset_table(topic)

    def running_info(self) -> ConsumerRunningInfo:
        props = {
            "PROP_NAMESERVER_ADDR": self.config.namesrv_addr,
            "PROP_CONSUME_TYPE": ConsumeType.CONSUME_PASSIVELY.value,
            "PROP_CONSUMEORDERLY": str(self.consume_orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(self.config.consume_thread_max),
            "PROP_CONSUMER_START_TIMESTAMP": str(self._start_ms),
            "PROP_CLIENT_VERSION": "V4_9_8",
            "messageModel": self.config.message_model.value,
            "consumeFromWhere": self.config.consume_from_where.value,
        }
        table = {}
        for mq, pq in self.rebalance.process_queues.items():
            held = pq.held_messages()
            table[mq] = ProcessQueueInfo(
                commit_offset=self.offset_store.read_memory(mq),
                cached_msg_min_offset=held[0].queue_offset if held else 0,
                cached_msg_max_offset=held[-1].queue_offset if held else 0,
                cached_msg_count=pq.msg_count,
                cached_msg_size_in_mib=pq.msg_size // (1024 * 1024),
                locked=pq.locked,
                try_unlock_times=pq.try_unlock_times,
                droped=pq.dropped,
            )
        return ConsumerRunningInfo(
            properties=props, subscription_set=list(self.rebalance.subscriptions.values()), mq_table=table
        )

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> bytes:
        started = time.monotonic()
        msg.broker_name = broker_name or msg.broker_name
        try:
            result = await self.consume_service.consume_directly(msg)
            outcome = "CR_SUCCESS" if result is ConsumeResult.SUCCESS else "CR_LATER"
            remark = None
        except Exception as exc:
            outcome, remark = "CR_THROW_EXCEPTION", repr(exc)
        body: dict[str, Any] = {
            "autoCommit": True,
            "consumeResult": outcome,
            "order": self.consume_orderly,
            "spentTimeMills": int((time.monotonic() - started) * 1000),
        }
        if remark:
            body["remark"] = remark
        return fastjson.dumps(body)

    # -- RebalanceHost --------------------------------------------------------------------------------
    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        assert self._instance is not None
        return await compute_pull_from_where(self._instance, self.offset_store, self.config, mq)

    def dispatch_pull(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        if self._state is ServiceState.RUNNING:
            self.pull_service.start_pull(mq, pq, offset)

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        self.offset_store.remove_offset(mq)

    async def remove_unnecessary_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        if self.consume_orderly and self.config.message_model is MessageModel.CLUSTERING:
            try:
                async with asyncio.timeout(1.0):  # not wait_for: on 3.11 it can drop a cancellation
                    await pq.consume_lock.acquire()
            except TimeoutError:
                pq.try_unlock_times += 1
                log.info("%s is still consuming; it will be released later", mq)
                return False
            try:
                await self._release_queue(mq)
                await self.rebalance.unlock(mq)
            finally:
                pq.consume_lock.release()
            return True
        await self._release_queue(mq)
        return True

    async def _release_queue(self, mq: MessageQueue) -> None:
        self.pull_service.forget(mq)
        self.pull_api.forget(mq)
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)

    async def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None:
        sub = self.rebalance.subscriptions.get(topic)
        if sub is not None:
            # A new version makes this member's subscription win on the brokers (Java 4.9.8).
            sub.sub_version = max(sub.sub_version + 1, self._clock.now_ms())
        owned = len(self.rebalance.process_queues)
        cfg = self.config
        if owned and cfg.pull_threshold_for_topic != -1:
            cfg.pull_threshold_for_queue = max(1, cfg.pull_threshold_for_topic // owned)
        if owned and cfg.pull_threshold_size_for_topic_mib != -1:
            cfg.pull_threshold_size_for_queue_mib = max(1, cfg.pull_threshold_size_for_topic_mib // owned)
        if self._instance is not None:
            await self._instance.send_heartbeat_to_all_brokers()

    # -- ConsumeHost --------------------------------------------------------------------------------
    async def lock_queue(self, mq: MessageQueue) -> bool:
        return await self.rebalance.lock(mq)

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> bool:
        """Give a failed message back to the broker for later redelivery; False when that failed too."""
        inst = self._instance
        if inst is None:
            return False
        max_times = self.config.effective_max_reconsume_times(self.consume_orderly)
        addr = inst.find_broker_addr_in_publish(broker_name) if broker_name else None
        addr = addr or f"{msg.store_host[0]}:{msg.store_host[1]}"
        try:
            await inst.api.consumer_send_message_back(
                addr, msg, self.group, delay_level, max_times, SEND_BACK_TIMEOUT_MS
            )
            return True
        except (RemotingError, BrokerResponseError) as exc:
            log.info(
                "send-back of %s failed (%s); re-sending it to %s", msg.msg_id, exc, C.retry_topic(self.group)
            )
        try:
            producer = await inner_producer(inst)
            await producer.send(self._retry_message(msg, delay_level, max_times))
            return True
        except Exception as exc:
            log.warning("re-send of %s failed (%s); it will be consumed again locally", msg.msg_id, exc)
            return False

    def _retry_message(self, msg: MessageExt, delay_level: int, max_times: int) -> Message:
        retry = Message(C.retry_topic(self.group), msg.body, properties=msg.properties, flag=msg.flag)
        props = retry.properties
        props.setdefault(C.PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
        props[C.PROPERTY_RETRY_TOPIC] = msg.topic
        props[C.PROPERTY_RECONSUME_TIME] = str(max_times if delay_level < 0 else msg.reconsume_times + 1)
        props[C.PROPERTY_MAX_RECONSUME_TIMES] = str(max_times)
        for transient in (C.PROPERTY_MIN_OFFSET, C.PROPERTY_MAX_OFFSET, C.PROPERTY_CONSUME_START_TIMESTAMP):
            props.pop(transient, None)
        retry.delay_level = 3 + msg.reconsume_times
        return retry
