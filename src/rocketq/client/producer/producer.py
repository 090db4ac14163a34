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
_PREPARED = C.PROPERTY_TRANSACTION_PREPARED
_SEND_OK = SendStatus.SEND_OK  # an enum member read through its class costs a descriptor call
_RUNNING = ServiceState.RUNNING


# A send header's fixed parts (Producer._skeleton): the queue, the topic, the map, JSON head and tail.
_Skeleton = tuple[MessageQueue, str, dict[str, str], str, str]


def _send_header_json(skeleton: _Skeleton, now: str, p: _Prepared) -> str:
    """The JSON text of a send header (Producer._header's keys, same order), when a JSON codec asks for it:
    the skeleton's head and tail around the values of this send."""
    reconsume = "0" if p.reconsume_times is None else p.reconsume_times
    unit = skeleton[2]["k"]
    middle = (
        f'"k":"{unit}",' if p.max_reconsume_times is None else f'"k":"{unit}","l":"{p.max_reconsume_times}",'
    )
    return (
        f'{skeleton[3]}{p.sys_flag}","g":"{now}","h":"{p.flag}","i":{_json_str(p.properties)},'
        f'"j":"{reconsume}",{middle}{skeleton[4]}'
    )


def id_generator(ip: str) -> UniqueIdGenerator:
    gen = _ID_GENERATORS.get(ip)
    if gen is None:
        gen = _ID_GENERATORS[ip] = UniqueIdGenerator(ip)
    return gen


class _Prepared:
    """A message made ready for the wire: its body, sys flag, properties and client id, and the time it
    was prepared (the first attempt's born timestamp: one clock read a send for the id and the header)."""

    __slots__ = (
        "batch",
        "body",
        "born_ms",
        "flag",
        "max_reconsume_times",
        "msg_id",
        "properties",
        "reconsume_times",
        "sys_flag",
    )

    def __init__(
        self,
        body: bytes,
        sys_flag: int,
        properties: str,
        msg_id: str,
        flag: int,
        batch: bool = False,
        born_ms: int | None = None,
    ) -> None:
        self.body = body
        self.sys_flag = sys_flag
        self.properties = properties
        self.msg_id = msg_id
        self.flag = flag
        self.batch = batch
        self.reconsume_times: int | None = None
        self.max_reconsume_times: int | None = None
        self.born_ms = born_ms


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
        self._compress_over = self.config.compress_msg_body_over_howmuch_bytes
        self._skeletons: dict[int, _Skeleton] = {}
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
        if self._state is not _RUNNING or self._instance is None:
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
        now = self._clock.now_ms()
        msg_id = props.get(C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if not msg_id:
            msg_id = self._ids.next_id(now)
            props[C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = msg_id
        body = msg.body
        if type(body) is not bytes:
            body = bytes(body)
        sys_flag = 0
        if len(body) >= self._compress_over:  # maybe_compress's own test, without its call for most bodies
            body, sys_flag = maybe_compress(body, self._compress_over, self.config.compress_level)
        if _PREPARED in props and props[_PREPARED] == "true":
            sys_flag |= C.MessageSysFlag.TRANSACTION_PREPARED_TYPE
        if not msg.topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX):
            return _Prepared(body, sys_flag, properties_string(props), msg_id, msg.flag, False, now)
        wire_props = dict(props)
        reconsume = wire_props.pop(C.PROPERTY_RECONSUME_TIME, None)
        max_reconsume = wire_props.pop(C.PROPERTY_MAX_RECONSUME_TIMES, None)
        prepared = _Prepared(body, sys_flag, properties_string(wire_props), msg_id, msg.flag, False, now)
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

    def _header(
        self, topic: str, mq: MessageQueue, p: _Prepared, born_ms: int | None = None
    ) -> dict[str, str]:
        """The extFields of the short-keyed header Java producers send by default (SEND_MESSAGE_V2 /
        SEND_BATCH_MESSAGE): exactly SendMessageRequestHeaderV2(...).to_ext_fields(), same keys in the
        same order, built directly because this runs on every send (the frozen dataclass and its
        generic encoder cost about 3 us a message). What does not change between sends to one queue
        (group, topic, queue id, broker, the defaults; the JSON text around the values that change) is
        a skeleton made once per queue (`_skeleton`); a send copies its map and sets the send time and
        properties (and sys flag, flag and reconsume times when they are not 0). The JSON text, what the
        JSON header codec would write, is formatted only if the header leaves as JSON (DeferredJsonExt:
        not on a connection that agreed on msgpack). `born_ms`: the send time (default: now)."""
        key = id(mq) << 2 | p.batch << 1 | (p.max_reconsume_times is not None)
        skeleton = self._skeletons.get(key)
        if skeleton is None or skeleton[0] is not mq or skeleton[1] != topic:
            skeleton = self._skeleton(key, topic, mq, p)
        ext = DeferredJsonExt(skeleton[2])
        setitem = dict.__setitem__  # the map's own store: EncodedExt's __setitem__ would drop the text
        now = str(self._clock.now_ms() if born_ms is None else born_ms)
        setitem(ext, "g", now)
        setitem(ext, "i", p.properties)
        if p.sys_flag:
            setitem(ext, "f", str(p.sys_flag))
        if p.flag:
            setitem(ext, "h", str(p.flag))
        if p.reconsume_times is not None:
            setitem(ext, "j", str(p.reconsume_times))
        if p.max_reconsume_times is not None:
            setitem(ext, "l", str(p.max_reconsume_times))
        ext.defer(_send_header_json, skeleton, now, p)  # not `ext`: no reference cycle
        return ext

    def _skeleton(self, key: int, topic: str, mq: MessageQueue, p: _Prepared) -> _Skeleton:
        """The fixed part of the send header to `mq`: (mq, topic, the map with "0" where a send may put
        another value, the JSON text before the sys flag, the JSON text after the unit-mode flag). Cached
        by the queue object's identity (the route's queues live as long as the route); bounded."""
        retry = p.max_reconsume_times is not None
        queue_id, batch, broker = str(mq.queue_id), "true" if p.batch else "false", mq.broker_name
        base = {
            "a": self.group, "b": topic, "c": self._create_topic_key, "d": self._default_queue_nums_text,
            "e": queue_id, "f": "0", "g": "0", "h": "0", "i": "", "j": "0", "k": self._unit_mode_text,
        }  # fmt: skip
        if retry:
            base["l"] = "0"  # the keys in Java's order: l before m and n
        base["m"] = batch
        base["n"] = broker
        head = (
            f'{{"a":{_json_str(self.group)},"b":{_json_str(topic)},"c":{_json_str(self._create_topic_key)},'
            f'"d":{_json_str(self._default_queue_nums_text)},"e":"{queue_id}","f":"'
        )
        tail = f'"m":"{batch}","n":{_json_str(broker)}}}'
        if len(self._skeletons) >= 4096:
            self._skeletons.clear()
        skeleton = self._skeletons[key] = (mq, topic, base, head, tail)
        return skeleton

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
        started: int | None = begin
        info = self._publish.get(topic)  # _publish_info's cached answer without its await
        if info is None or not info.ok():
            info = await self._publish_info(topic)
            started = None
        inst = self._instance
        if inst is None or self._state is not _RUNNING:  # _running's test without its call
            inst = self._running()
        last_broker: str | None = None
        last_error: BaseException | None = None
        kept: SendResult | None = None
        brokers_sent: list[str] = []
        # The first attempt on a cached route is born when the message was prepared (the clock reading
        # its id took); a later one, or one after a route look-up, reads the clock again.
        born = p.born_ms if started is not None else None
        for attempt in range(times_total):
            if attempt or started is None:  # the first attempt of a cached route starts at `begin`
                started = self._clock.monotonic_ms()
            remaining = timeout_ms - (started - begin)
            if remaining <= 0:
                break
            mq = self.fault_strategy.select_one_message_queue(info, last_broker)
            brokers_sent.append(mq.broker_name)
            try:
                addr = inst.find_broker_addr_in_publish(mq.broker_name)
                if addr is None:  # the route lookup and its error
                    result = await self._send_to_queue(topic, mq, p, remaining)
                else:
                    # The common case: the request goes out now and its answer is awaited here, in this
                    # frame (send_message's and invoke_sync's coroutines only when the transport says so).
                    api = inst.api
                    ext = self._header(topic, mq, p, None if attempt else born)
                    answer = api.start_send(addr, ext, p.body, remaining)
                    if answer is None:
                        result = await api.send_message(
                            addr, mq.broker_name, ext, p.body, p.msg_id, timeout_ms=remaining, queue=mq
                        )
                    else:
                        result = api.process_send_response(mq.broker_name, topic, p.msg_id, await answer, mq)
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
            if self.fault_strategy.enabled:
                self.fault_strategy.update_fault_item(
                    mq.broker_name, self._clock.monotonic_ms() - started, isolation=False
                )
            if result.status is not _SEND_OK and self.config.retry_another_broker_when_not_store_ok:
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
        if self._state is not _RUNNING or self._instance is None:
            self._running()  # raises ClientStateError
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
