"""Producer: send (sync, async, oneway, batch, to a selected queue) with retries and broker avoidance.

Port of org.apache.rocketmq.client.producer.DefaultMQProducer and impl.producer.DefaultMQProducerImpl
(sendDefaultImpl, sendKernelImpl, sendSelectImpl, tryToFindTopicPublishInfo; 4.9.8).
A send tries 1 + retry_times_when_send_failed times within send_msg_timeout_ms; each retry avoids the
broker that just failed, and with send_latency_fault_enable the fault strategy keeps slow or failed
brokers out of rotation for a while. Messages are checked before any network call; bodies of 4 KiB
and more are zlib-compressed; the UNIQ_KEY message id is generated here. A topic no name server knows
is sent through the TBW102 route so that a broker with autoCreateTopicEnable creates it.
SYSTEM_BUSY (a broker shedding load: a full queue, or fast failure's "[TIMEOUT_CLEAN_QUEUE]") counts
as a failure for the fault strategy and is retried on another broker, as RocketMQ 5's retryResponseCodes
say (4.9.8 penalises the broker but gives up). Deviation: async sends retry like sync ones (Java
re-sends async failures from its callback).
"""

from __future__ import annotations

import asyncio
import json.encoder
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from rocketq.client import metrics as client_metrics
from rocketq.client.config import ProducerConfig
from rocketq.client.errors import (
    ClientStateError,
    MQClientError,
    NoRouteError,
    RequestTimeoutError,
    SendFailedError,
)
from rocketq.client.instance import ClientInstance, acquire_instance
from rocketq.client.model import SendResult, SendStatus
from rocketq.client.producer.fault_strategy import MQFaultStrategy
from rocketq.client.producer.request_reply import await_reply, create_reply_message, forget, prepare_request
from rocketq.client.producer.selectors import MessageQueueSelector
from rocketq.client.producer.validation import check_batch, check_message, maybe_compress, properties_string
from rocketq.client.route import TopicPublishInfo
from rocketq.client.trace.hooks import SendTraceHook, new_dispatcher
from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.errors import RetryClass, RocketQError
from rocketq.common.message import Message, MessageExt, MessageQueue
from rocketq.common.msg_id import UniqueIdGenerator
from rocketq.common.record.codec import encode_batch
from rocketq.common.service import ServiceState, lifecycle_step, spawn
from rocketq.remoting.errors import BrokerResponseError, RemotingConnectError, RemotingError
from rocketq.remoting.protocol.header_json import DeferredJsonExt

log = logging.getLogger("rocketq.client.producer")

_json_str: Callable[[str], str] = json.encoder.encode_basestring  # as the JSON codec
_RETRYABLE = {
    RetryClass.SWITCH_BROKER,
    RetryClass.REFRESH_ROUTE,
    RetryClass.AFTER_BACKOFF,
    RetryClass.IMMEDIATE,
}
_ID_GENERATORS: dict[str, UniqueIdGenerator] = {}


def _send_header_json(
    head: str,
    queue_id: str,
    sys_flag: str,
    now: str,
    flag: str,
    properties: str,
    reconsume: str,
    unit_mode: str,
    max_reconsume: str | None,
    batch: str,
    tail: str,
) -> str:
    """The JSON text of a send header (Producer._header's keys, same order), when a JSON codec asks for it."""
    if max_reconsume is None:
        return (
            f'{head}{queue_id}","f":"{sys_flag}","g":"{now}","h":"{flag}","i":{_json_str(properties)},'
            f'"j":"{reconsume}","k":"{unit_mode}","m":"{batch}","n":{tail}'
        )
    return (
        f'{head}{queue_id}","f":"{sys_flag}","g":"{now}","h":"{flag}","i":{_json_str(properties)},'
        f'"j":"{reconsume}","k":"{unit_mode}","l":"{max_reconsume}","m":"{batch}","n":{tail}'
    )


def id_generator(ip: str) -> UniqueIdGenerator:
    gen = _ID_GENERATORS.get(ip)
    if gen is None:
        gen = _ID_GENERATORS[ip] = UniqueIdGenerator(ip)
    return gen


class _Prepared:
    """A message made ready for the wire: its body, sys flag, properties and client id."""

    __slots__ = (
        "batch",
        "body",
        "flag",
        "max_reconsume_times",
        "msg_id",
        "properties",
        "reconsume_times",
        "sys_flag",
    )

    def __init__(
        self, body: bytes, sys_flag: int, properties: str, msg_id: str, flag: int, batch: bool = False
    ) -> None:
        self.body = body
        self.sys_flag = sys_flag
        self.properties = properties
        self.msg_id = msg_id
        self.flag = flag
        self.batch = batch
        self.reconsume_times: int | None = None
        self.max_reconsume_times: int | None = None


class Producer:
    """Sends messages to a cluster. Use `await start()` / `await shutdown()` or `async with`.

    Args:
        producer_group: the producer group (used by transaction checks and the broker's producer table).
        namesrv_addr: name servers, "host:port;host:port" (default: NAMESRV_ADDR).
        config: a ProducerConfig; keyword settings (send_msg_timeout_ms=..., any ProducerConfig field
            or RocketMQ alias) override it.
        clock: time source for latency measurement (tests).
        instance: internal; run inside this ClientInstance instead of the shared one.
    """

    def __init__(
        self,
        producer_group: str = C.DEFAULT_PRODUCER_GROUP,
        namesrv_addr: str | None = None,
        *,
        config: ProducerConfig | None = None,
        clock: Clock = SYSTEM_CLOCK,
        instance: ClientInstance | None = None,
        **settings: Any,
    ) -> None:
        values = dict(config.model_dump()) if config is not None else {}
        values.update(settings)
        values["producer_group"] = producer_group
        if namesrv_addr is not None:
            values["namesrv_addr"] = namesrv_addr
        self.config = ProducerConfig.build(values, source="Producer")
        self.group = producer_group
        self._clock = clock
        self.fault_strategy = MQFaultStrategy(
            clock,
            enabled=self.config.send_latency_fault_enable,
            latency_max_ms=self.config.latency_max_ms,
            not_available_duration_ms=self.config.not_available_duration_ms,
        )
        self._publish: dict[str, TopicPublishInfo] = {}
        self._topics: set[str] = set()
        self._instance: ClientInstance | None = None
        self._bound = instance  # internal: a producer living inside a given client instance
        self._state = ServiceState.CREATE_JUST
        self._ids = id_generator(self.config.client_ip)
        self._refreshing: set[str] = set()
        # Read on every send: kept out of the pydantic model.
        self._create_topic_key = self.config.create_topic_key
        self._default_queue_nums_text = str(self.config.default_topic_queue_nums)
        self._unit_mode_text = "true" if self.config.unit_mode else "false"
        self._json_heads: dict[str, str] = {}
        self._json_tails: dict[str, str] = {}
        # Message trace (enable_msg_trace): a Pub record per answered send, written in the background.
        self._trace = new_dispatcher(self.config, producer_group, "PRODUCE")
        self._trace_hook = SendTraceHook(self._trace, producer_group, clock) if self._trace else None

    # -- lifecycle ------------------------------------------------------------------------------------
    @lifecycle_step
    async def start(self) -> None:
        """Connect to the name servers and register with the shared client instance."""
        if self._state is ServiceState.RUNNING:
            return
        if self._state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"producer {self.group} cannot start again after shutdown")
        problem = C.group_name_problem(self.group)
        if problem is not None:
            raise MQClientError(f"producer group: {problem}")
        inst = self._bound or acquire_instance(self.config, producer_group=self.group)
        inst.register_producer(self)
        try:
            await inst.start()
        except BaseException:
            await inst.unregister_producer(self.group)
            raise
        self._instance = inst
        self._topics.add(self.config.create_topic_key)
        self._state = ServiceState.RUNNING
        await inst.send_heartbeat_to_all_brokers()
        if self._trace is not None:
            await self._trace.start()
        log.info("producer %s started on %s", self.group, inst.client_id)

    @lifecycle_step
    async def shutdown(self) -> None:
        """Unregister from the brokers; sends after this raise ClientStateError."""
        if self._state is not ServiceState.RUNNING:
            self._state = ServiceState.SHUTDOWN_ALREADY
            return
        self._state = ServiceState.SHUTDOWN_ALREADY
        if self._trace is not None:
            await self._trace.shutdown()  # flushes what was traced so far (bounded)
        inst, self._instance = self._instance, None
        if inst is not None:
            await inst.unregister_producer(self.group)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.shutdown()

    @property
    def client_id(self) -> str:
        return self._running().client_id

    def _running(self) -> ClientInstance:
        if self._state is not ServiceState.RUNNING or self._instance is None:
            what = (
                "is not started; call await producer.start()"
                if self._state is ServiceState.CREATE_JUST
                else "is shut down"
            )
            raise ClientStateError(f"producer {self.group} {what}")
        return self._instance

    # -- ProducerInner (called by the client instance) ----------------------------------------------------
    def publish_topics(self) -> set[str]:
        return set(self._topics)

    def update_publish_info(self, topic: str, info: TopicPublishInfo) -> None:
        if topic in self._topics:
            self._publish[topic] = info

    def check_transaction_state(self, addr: str, msg: MessageExt, header: Mapping[str, str]) -> None:
        log.warning(
            "producer %s got a transaction check for %s but is not transactional", self.group, msg.msg_id
        )

    # -- routes ---------------------------------------------------------------------------------------------
    async def _publish_info(self, topic: str) -> TopicPublishInfo:
        inst = self._running()
        info = self._publish.get(topic)
        if info is not None and info.ok():
            return info
        self._topics.add(topic)
        await inst.update_topic_route(topic)
        info = self._publish.get(topic)
        if info is not None and info.ok():
            return info
        await inst.update_topic_route(
            topic,
            default_topic=self.config.create_topic_key,
            default_queue_nums=self.config.default_topic_queue_nums,
        )
        info = self._publish.get(topic)
        if info is not None and info.ok():
            return info
        self._topics.discard(topic)
        raise NoRouteError(
            topic, f"no name server of {self.config.namesrv_addr} has a route for it and auto-create is off"
        )

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to `topic` may choose from (its route's writable queues)."""
        return list((await self._publish_info(topic)).message_queues)

    def _refresh_soon(self, topic: str) -> None:
        """Refresh a route in the background after a broker failed (once at a time per topic)."""
        if topic in self._refreshing or self._instance is None:
            return
        self._refreshing.add(topic)
        inst = self._instance

        async def refresh() -> None:
            try:
                await inst.update_topic_route(topic)
            finally:
                self._refreshing.discard(topic)

        spawn(f"route-refresh-{topic}", refresh())

    # -- preparing messages -----------------------------------------------------------------------------------
    def _prepare(self, msg: Message) -> _Prepared:
        props = msg.properties
        msg_id = props.get(C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if not msg_id:
            msg_id = self._ids.next_id(self._clock.now_ms())
            props[C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = msg_id
        raw = msg.body if isinstance(msg.body, bytes) else bytes(msg.body)
        body, sys_flag = maybe_compress(
            raw, self.config.compress_msg_body_over_howmuch_bytes, self.config.compress_level
        )
        if props.get(C.PROPERTY_TRANSACTION_PREPARED) == "true":
            sys_flag |= C.MessageSysFlag.TRANSACTION_PREPARED_TYPE
        wire_props = props
        reconsume = max_reconsume = None
        if msg.topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX):
            wire_props = dict(props)
            reconsume = wire_props.pop(C.PROPERTY_RECONSUME_TIME, None)
            max_reconsume = wire_props.pop(C.PROPERTY_MAX_RECONSUME_TIMES, None)
        prepared = _Prepared(body, sys_flag, properties_string(wire_props), msg_id, msg.flag)
        prepared.reconsume_times = int(reconsume) if reconsume else None
        prepared.max_reconsume_times = int(max_reconsume) if max_reconsume else None
        return prepared

    def _prepare_batch(self, msgs: Sequence[Message]) -> tuple[str, _Prepared]:
        topic = check_batch(msgs, self.config.max_message_size_bytes)
        now = self._clock.now_ms()
        for msg in msgs:
            if not msg.properties.get(C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX):
                msg.properties[C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = self._ids.next_id(now)
        body = encode_batch(list(msgs))
        if len(body) > self.config.max_message_size_bytes:
            raise MQClientError(
                f"the batch body is {len(body)} bytes, over the maximum {self.config.max_message_size_bytes}; send smaller batches",
                13,
            )
        batch_props = {C.PROPERTY_WAIT_STORE_MSG_OK: "true" if msgs[0].wait_store_msg_ok else "false"}
        ids = ",".join(m.properties[C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] for m in msgs)
        return topic, _Prepared(body, 0, properties_string(batch_props), ids, 0, batch=True)

    def _header(self, topic: str, mq: MessageQueue, p: _Prepared) -> dict[str, str]:
        """The extFields of the short-keyed header Java producers send by default (SEND_MESSAGE_V2 /
        SEND_BATCH_MESSAGE): exactly SendMessageRequestHeaderV2(...).to_ext_fields(), same keys in the
        same order, built directly because this runs on every send (the frozen dataclass and its
        generic encoder cost about 3 us a message). They come with their JSON text, what the JSON header
        codec would write for them, from a per-topic head formatted once (another 2 us), formatted only
        if the header leaves as JSON (DeferredJsonExt: not on a connection that agreed on msgpack)."""
        queue_id, sys_flag, now, flag = (
            str(mq.queue_id),
            str(p.sys_flag),
            str(self._clock.now_ms()),
            str(p.flag),
        )
        reconsume = "0" if p.reconsume_times is None else str(p.reconsume_times)
        batch = "true" if p.batch else "false"
        broker = mq.broker_name
        ext = DeferredJsonExt(
            a=self.group, b=topic, c=self._create_topic_key, d=self._default_queue_nums_text, e=queue_id,
            f=sys_flag, g=now, h=flag, i=p.properties, j=reconsume, k=self._unit_mode_text,
        )  # fmt: skip
        head = self._json_heads.get(topic)
        if head is None:
            head = self._json_head(topic)
        tail = self._json_tails.get(broker)
        if tail is None:
            tail = _json_str(broker) + "}"
            if len(self._json_tails) < 1024:
                self._json_tails[broker] = tail
        max_reconsume = None if p.max_reconsume_times is None else str(p.max_reconsume_times)
        if max_reconsume is not None:
            dict.__setitem__(ext, "l", max_reconsume)  # the keys in Java's order: l before m and n
        dict.__setitem__(ext, "m", batch)
        dict.__setitem__(ext, "n", broker)
        ext.defer(
            _send_header_json,
            head,
            queue_id,
            sys_flag,
            now,
            flag,
            p.properties,
            reconsume,
            self._unit_mode_text,
            max_reconsume,
            batch,
            tail,
        )
        return ext

    def _json_head(self, topic: str) -> str:
        """The JSON text of the send header up to the queue id's digits (keys a to d, fixed per topic)."""
        head = (
            f'{{"a":{_json_str(self.group)},"b":{_json_str(topic)},"c":{_json_str(self._create_topic_key)},'
            f'"d":{_json_str(self._default_queue_nums_text)},"e":"'
        )
        if len(self._json_heads) < 1024:
            self._json_heads[topic] = head
        return head

    # -- the kernel --------------------------------------------------------------------------------------------
    async def _send_to_queue(
        self, topic: str, mq: MessageQueue, p: _Prepared, timeout_ms: float, *, oneway: bool = False
    ) -> SendResult | None:
        inst = self._running()
        addr = inst.find_broker_addr_in_publish(mq.broker_name)
        if addr is None:
            await inst.update_topic_route(topic)
            addr = inst.find_broker_addr_in_publish(mq.broker_name)
        if addr is None:
            raise MQClientError(f"the broker {mq.broker_name} has no master address in the route of {topic}")
        return await self._send_call(inst, addr, topic, mq, p, timeout_ms, oneway=oneway)

    def _send_call(
        self,
        inst: ClientInstance,
        addr: str,
        topic: str,
        mq: MessageQueue,
        p: _Prepared,
        timeout_ms: float,
        *,
        oneway: bool = False,
    ) -> Coroutine[Any, Any, SendResult | None]:
        """The send to a known broker address, as a coroutine the caller awaits (one frame fewer than
        awaiting _send_to_queue, which the common send in _send_with_retries skips)."""
        return inst.api.send_message(
            addr,
            mq.broker_name,
            self._header(topic, mq, p),
            p.body,
            p.msg_id,
            timeout_ms=timeout_ms,
            oneway=oneway,
            queue=mq,
        )

    async def _send_with_retries(
        self, topic: str, p: _Prepared, timeout_ms: float, times_total: int
    ) -> SendResult:
        begin = self._clock.monotonic_ms()
        info = self._publish.get(topic)  # _publish_info's cached answer without its await
        if info is None or not info.ok():
            info = await self._publish_info(topic)
        inst = self._running()
        last_broker: str | None = None
        last_error: BaseException | None = None
        kept: SendResult | None = None
        brokers_sent: list[str] = []
        for _attempt in range(times_total):
            remaining = timeout_ms - (self._clock.monotonic_ms() - begin)
            if remaining <= 0:
                break
            mq = self.fault_strategy.select_one_message_queue(info, last_broker)
            brokers_sent.append(mq.broker_name)
            started = self._clock.monotonic_ms()
            try:
                addr = inst.find_broker_addr_in_publish(mq.broker_name)
                result = await (
                    self._send_to_queue(topic, mq, p, remaining)  # the route lookup and its error
                    if addr is None
                    else self._send_call(inst, addr, topic, mq, p, remaining)  # the common case
                )
            except (RemotingError, BrokerResponseError, MQClientError) as exc:
                latency = self._clock.monotonic_ms() - started
                self.fault_strategy.update_fault_item(mq.broker_name, latency, isolation=True)
                if isinstance(exc, BrokerResponseError) and exc.retry not in _RETRYABLE:
                    raise
                log.info("send to %s failed (%s); %s", mq, exc, "retrying on another broker")
                if isinstance(exc, RemotingConnectError) or exc.retry is RetryClass.REFRESH_ROUTE:
                    self._refresh_soon(topic)
                last_error, last_broker = exc, mq.broker_name
                info = self._publish.get(topic) or info
                if not info.ok():  # a refresh left no writable queue: look the route up again
                    info = await self._publish_info(topic)
                continue
            assert result is not None
            self.fault_strategy.update_fault_item(
                mq.broker_name, self._clock.monotonic_ms() - started, isolation=False
            )
            if result.status is not SendStatus.SEND_OK and self.config.retry_another_broker_when_not_store_ok:
                kept, last_broker = result, mq.broker_name
                continue
            return result
        if kept is not None:
            return kept
        elapsed = self._clock.monotonic_ms() - begin
        message = (
            f"send to topic {topic} failed after {len(brokers_sent)} attempt(s) in {elapsed} ms "
            f"(brokers tried: {brokers_sent}): {last_error or 'send timeout'}"
        )
        code = last_error.code if isinstance(last_error, (MQClientError, BrokerResponseError)) else -1
        err = SendFailedError(message, last_error, code)
        raise err from last_error

    # -- public API --------------------------------------------------------------------------------------------
    async def send(
        self,
        msg: Message,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        *,
        queue: MessageQueue | None = None,
        timeout_ms: int | None = None,
    ) -> SendResult:
        """Send one message and wait for the broker's answer.

        Args:
            msg: the message; its UNIQ_KEY is set here when absent.
            selector: `(queues, msg, arg) -> queue` to choose the queue (orderly messages); no retry then.
            arg: passed to the selector.
            queue: send to exactly this queue (no retry).
            timeout_ms: overrides send_msg_timeout_ms.
        Returns:
            SendResult with status, msg_id (UNIQ_KEY), offset_msg_id, queue and queue_offset.
        Raises:
            ClientStateError (not started / shut down), MessageIllegalError (before any network call),
            NoRouteError, SendFailedError (every attempt failed; `last_error` says why), MQBrokerError.
        """
        self._running()
        check_message(msg, self.config.max_message_size_bytes)
        timeout = timeout_ms or self.config.send_msg_timeout_ms
        p = self._prepare(msg)
        if selector is not None or queue is not None:
            coro = self._send_selected(msg, p, selector, arg, queue, timeout)
        else:
            coro = self._send_with_retries(
                msg.topic, p, timeout, 1 + self.config.retry_times_when_send_failed
            )
        return await (
            coro
            if self._trace_hook is None and client_metrics.active() is None
            else self._observed(msg, coro)
        )

    async def _observed(self, msg: Message, send: Awaitable[SendResult]) -> SendResult:
        """The send, then its Pub trace record (SendMessageTraceHookImpl; a failed send records none) and
        its rocketmq_send_cost_time (failures too), for whichever of the two is on."""
        metrics = client_metrics.active()
        started, t0 = self._clock.now_ms(), time.perf_counter()
        try:
            result = await send
        except BaseException:
            if metrics is not None and self._instance is not None:
                metrics.sent(msg.topic, self._instance.client_id, False, (time.perf_counter() - t0) * 1000)
            raise
        inst = self._instance
        assert inst is not None
        if metrics is not None:
            metrics.sent(
                msg.topic,
                inst.client_id,
                result.status is SendStatus.SEND_OK,
                (time.perf_counter() - t0) * 1000,
            )
        if self._trace_hook is not None:
            addr = inst.find_broker_addr_in_publish(result.queue.broker_name) if result.queue else None
            self._trace_hook.sent(msg, result, started, addr)
        return result

    async def _send_selected(
        self,
        msg: Message,
        p: _Prepared,
        selector: MessageQueueSelector | None,
        arg: Any,
        queue: MessageQueue | None,
        timeout: float,
    ) -> SendResult:
        info = await self._publish_info(msg.topic)
        if queue is None:
            assert selector is not None
            queue = selector(list(info.message_queues), msg, arg)
            if queue is None:
                raise MQClientError("the message queue selector returned no queue")
        if queue.topic != msg.topic:
            raise MQClientError(f"the selected queue {queue} is not of topic {msg.topic}")
        result = await self._send_to_queue(msg.topic, queue, p, timeout)
        assert result is not None
        return result

    def send_async(
        self,
        msg: Message,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        *,
        timeout_ms: int | None = None,
    ) -> asyncio.Future[SendResult]:
        """Start a send and return its future at once (checks run now; failures land in the future)."""
        self._running()
        check_message(msg, self.config.max_message_size_bytes)
        timeout = timeout_ms or self.config.send_msg_timeout_ms
        p = self._prepare(msg)
        if selector is not None:
            coro = self._send_selected(msg, p, selector, arg, None, timeout)
        else:
            coro = self._send_with_retries(
                msg.topic, p, timeout, 1 + self.config.retry_times_when_send_async_failed
            )
        return asyncio.ensure_future(
            coro
            if self._trace_hook is None and client_metrics.active() is None
            else self._observed(msg, coro)
        )

    async def send_oneway(
        self,
        msg: Message,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        *,
        queue: MessageQueue | None = None,
    ) -> None:
        """Send without waiting for the broker (no result, no retry)."""
        self._running()
        check_message(msg, self.config.max_message_size_bytes)
        p = self._prepare(msg)
        info = await self._publish_info(msg.topic)
        if queue is None:
            queue = (
                selector(list(info.message_queues), msg, arg)
                if selector
                else self.fault_strategy.select_one_message_queue(info, None)
            )
        await self._send_to_queue(msg.topic, queue, p, self.config.send_msg_timeout_ms, oneway=True)

    # -- request-reply (4.6+) ----------------------------------------------------------------------
    async def request(
        self,
        msg: Message,
        timeout_ms: int = 3000,
        *,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
    ) -> MessageExt:
        """Send `msg` as a request and wait for its reply (DefaultMQProducer#request).

        The replier (a consumer of msg.topic) answers with `create_reply_message(request, body)` sent by
        any producer, or `producer.reply(request, body)`; the broker pushes the reply to this client.
        Raises RequestTimeoutError (naming the correlation id) when no reply came within `timeout_ms`,
        MQClientError when the request could not be sent (its cause chained).
        """
        inst = self._running()
        check_message(msg, self.config.max_message_size_bytes)
        started = time.monotonic()
        correlation_id = prepare_request(msg, inst.client_id, timeout_ms)
        if msg.topic not in inst.route_table:
            # The broker pushes the reply to the producer channel it knows this client by: heartbeat first.
            await self._publish_info(msg.topic)
            await inst.send_heartbeat_to_all_brokers()
        future = await_reply(correlation_id)
        try:
            remaining = max(1, int(timeout_ms - (time.monotonic() - started) * 1000))
            try:
                await self.send(msg, selector, arg, queue=queue, timeout_ms=remaining)
            except RocketQError as exc:
                raise MQClientError(f"send request message to <{msg.topic}> fail: {exc}") from exc
            remaining_s = timeout_ms / 1000 - (time.monotonic() - started)
            try:
                async with asyncio.timeout(max(0.0, remaining_s)):
                    return await future
            except TimeoutError:
                raise RequestTimeoutError(
                    f"send request message to <{msg.topic}> OK, but wait reply message timeout, {timeout_ms} ms "
                    f"(correlation id {correlation_id})",
                    correlation_id,
                ) from None
        finally:
            forget(correlation_id)

    def request_async(
        self,
        msg: Message,
        timeout_ms: int = 3000,
        callback: Callable[[MessageExt | None, BaseException | None], None] | None = None,
    ) -> asyncio.Future[MessageExt]:
        """Start a request; its future holds the reply. `callback(reply, error)` runs when it completes
        (Java's RequestCallback onSuccess / onException)."""
        future = asyncio.ensure_future(self.request(msg, timeout_ms))
        if callback is not None:

            def done(f: asyncio.Future[MessageExt]) -> None:
                if f.cancelled():
                    callback(None, asyncio.CancelledError())
                elif f.exception() is not None:
                    callback(None, f.exception())
                else:
                    callback(f.result(), None)

            future.add_done_callback(done)
        return future

    async def reply(self, request: MessageExt, body: bytes, timeout_ms: int | None = None) -> SendResult:
        """Answer a request received by a consumer: create_reply_message(request, body), sent."""
        return await self.send(create_reply_message(request, body), timeout_ms=timeout_ms)

    async def send_batch(
        self, msgs: Sequence[Message], *, queue: MessageQueue | None = None, timeout_ms: int | None = None
    ) -> SendResult:
        """Send messages of one topic in one request; msg_id of the result joins their ids with ','."""
        self._running()
        topic, p = self._prepare_batch(msgs)
        timeout = timeout_ms or self.config.send_msg_timeout_ms
        if queue is not None:
            result = await self._send_to_queue(topic, queue, p, timeout)
            assert result is not None
            return result
        return await self._send_with_retries(topic, p, timeout, 1 + self.config.retry_times_when_send_failed)
