"""SimpleConsumer: receive messages that stay invisible for a while, then ack them (RocketMQ 5 POP).

Port of the remoting side of RocketMQ 5's SimpleConsumer (MQClientAPIImpl.popMessageAsync /
processPopResponse, ackMessageAsync, changeInvisibleTimeAsync). `receive()` sends POP_MESSAGE
to the next broker of the subscribed topics in turn, which answers with messages it hides for
`invisible_duration_ms`; each message's POP_CK property (the receipt handle: the pop's extraInfo plus
the queue offset) is what `ack()` and `change_invisible_duration()` send back. A message neither acked
nor extended becomes visible again and is received once more (its reconsume count goes up).
Needs a broker that serves the POP codes (200050-200053); other brokers answer
REQUEST_CODE_NOT_SUPPORTED, which surfaces as MQBrokerError.
"""

from __future__ import annotations

import collections
import itertools
import logging
import time
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any, Self

from rocketq.client.config import ConsumerConfig
from rocketq.client.consumer.push import consumer_config
from rocketq.client.consumer.subscription import build_subscription
from rocketq.client.errors import ClientStateError, MQClientError
from rocketq.client.instance import ClientInstance, acquire_instance
from rocketq.client.model import MessageSelector
from rocketq.common import constants as C
from rocketq.common.message import MessageExt, MessageQueue
from rocketq.common.record.lazy import decode_records_lazy
from rocketq.common.service import ServiceState, lifecycle_step
from rocketq.remoting.protocol.bodies.consumer import ConsumerRunningInfo
from rocketq.remoting.protocol.bodies.heartbeat import ConsumerData, ConsumeType, SubscriptionData
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.headers.pop import (
    INIT_MODE_LAST,
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    build_extra_info,
    offset_info_key,
    parse_start_offset_info,
)

log = logging.getLogger("rocketq.client.simple")

# The answers that mean "nothing to receive now": RocketMQ 5 brokers say POLLING_TIMEOUT (210) or, when
# too many requests wait, POLLING_FULL (209); older ones PULL_NOT_FOUND.
POLLING_FULL = 209
POLLING_TIMEOUT = 210
_NOTHING = (int(ResponseCode.PULL_NOT_FOUND), POLLING_FULL, POLLING_TIMEOUT)


class SimpleConsumer:
    """Receive / ack consumption with per-message invisibility (no rebalancing, no local offsets)."""

    def __init__(
        self,
        consumer_group: str,
        namesrv_addr: str | None = None,
        *,
        subscriptions: Mapping[str, str | MessageSelector] | None = None,
        await_duration_ms: int = 20_000,
        config: ConsumerConfig | None = None,
        **settings: Any,
    ) -> None:
        self.config = consumer_config(consumer_group, namesrv_addr, config, settings)
        self.group = consumer_group
        self.await_duration_ms = await_duration_ms
        self._subs: dict[str, SubscriptionData] = {
            t: build_subscription(t, e) for t, e in (subscriptions or {}).items()
        }
        self._state = ServiceState.CREATE_JUST
        self._instance: ClientInstance | None = None
        self._turn = itertools.count()
        self._iter_buffer: collections.deque[MessageExt] = collections.deque()  # see __aiter__

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """Consume `topic`, filtered by a tag expression or a MessageSelector."""
        self._subs[topic] = build_subscription(topic, expression)

    @lifecycle_step
    async def start(self) -> None:
        """Start: register with the brokers of the subscribed topics (POP consumption).

        Unlike the push and lite-pull consumers, a SimpleConsumer may be started again: from
        SHUTDOWN_ALREADY (after shutdown()) or START_FAILED it registers once more and is RUNNING
        again. It keeps no local offsets or process queues that a restart would have to rebuild; the
        broker holds the invisibility of every message received.
        """
        if self._state is ServiceState.RUNNING:
            return
        if not self._subs:
            raise MQClientError("a SimpleConsumer needs subscriptions={topic: expression}")
        inst = acquire_instance(self.config, consumer_group=self.group)
        inst.register_consumer(self)
        try:
            await inst.start()
            for topic in list(self._subs):
                await inst.update_topic_route(topic)
            await inst.send_heartbeat_to_all_brokers()
        except BaseException:
            self._state = ServiceState.START_FAILED
            await inst.unregister_consumer(self.group)
            raise
        self._instance = inst
        self._state = ServiceState.RUNNING

    @lifecycle_step
    async def shutdown(self) -> None:
        """Leave the group; messages received and not acked become visible again after their invisible duration."""
        inst, self._instance = self._instance, None
        self._state = ServiceState.SHUTDOWN_ALREADY
        if inst is not None:
            await inst.unregister_consumer(self.group)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.shutdown()

    def __aiter__(self) -> AsyncIterator[MessageExt]:
        """`async for msg in consumer:` each received message, until the consumer is shut down.

        Messages come from receive() (default invisible duration, 30 s): each must be acked with
        `await consumer.ack(msg)` (or given more time with change_invisible_duration) before it
        becomes visible again, or it is delivered once more. Leaving the loop acks nothing.
        """
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[MessageExt]:
        # One buffer per consumer, not per loop: a batch taken but not yet handed out survives a `break`
        # and is what the next `async for` starts with.
        buffered = self._iter_buffer
        while self._state is ServiceState.RUNNING:
            if not buffered:
                buffered.extend(await self.receive())
                continue
            yield buffered.popleft()

    def _running(self) -> ClientInstance:
        if self._state is not ServiceState.RUNNING or self._instance is None:
            raise ClientStateError(f"simple consumer {self.group} is not started")
        return self._instance

    def _targets(self, inst: ClientInstance) -> list[tuple[str, str, str]]:
        """(topic, broker name, master address) for every readable broker of every subscribed topic."""
        out = []
        for topic in sorted(self._subs):
            route = inst.route_table.get(topic)
            for qd in sorted(route.queue_datas, key=lambda q: q.broker_name) if route else []:
                addr = inst.find_broker_addr_in_publish(qd.broker_name)
                if addr and C.PermName.is_readable(qd.perm):
                    out.append((topic, qd.broker_name, addr))
        return out

    async def receive(self, max_messages: int = 16, invisible_duration_ms: int = 30_000) -> list[MessageExt]:
        """Up to `max_messages` messages, hidden from others for `invisible_duration_ms`; [] when none."""
        inst = self._running()
        targets = self._targets(inst)
        if not targets:
            for topic in list(self._subs):
                await inst.update_topic_route(topic)
            targets = self._targets(inst)
            if not targets:
                raise MQClientError(f"no readable broker for {sorted(self._subs)}")
        topic, broker, addr = targets[next(self._turn) % len(targets)]
        sub = self._subs[topic]
        header = PopMessageRequestHeader(
            consumer_group=self.group,
            topic=topic,
            queue_id=-1,
            max_msg_nums=max_messages,
            invisible_time=invisible_duration_ms,
            poll_time=self.await_duration_ms,
            born_time=time.time_ns() // 1_000_000,
            init_mode=INIT_MODE_LAST,
            exp_type=sub.expression_type or "TAG",
            exp=sub.sub_string,
            bname=broker,
        )
        timeout = self.await_duration_ms + inst.config.mq_client_api_timeout_ms
        resp = await inst.api.invoke(
            addr, RequestCode.POP_MESSAGE, header, timeout_ms=timeout, ok=(ResponseCode.SUCCESS, *_NOTHING)
        )
        if resp.code != ResponseCode.SUCCESS or not resp.body:
            return []
        rh = PopMessageResponseHeader.from_ext_fields(resp.ext_fields)
        starts = parse_start_offset_info(rh.start_offset_info)
        msgs = decode_records_lazy(resp.body)
        for msg in msgs:
            start = starts.get(offset_info_key(msg.topic, msg.queue_id), msg.queue_offset)
            extra = build_extra_info(
                start, rh.pop_time, rh.invisible_time, rh.revive_qid, msg.topic, broker, msg.queue_id
            )
            msg.properties[C.PROPERTY_POP_CK] = f"{extra} {msg.queue_offset}"
            msg.broker_name = broker
            original = msg.properties.get(C.PROPERTY_RETRY_TOPIC)
            if msg.topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX) and original:
                msg.topic = original
        return msgs

    def _handle(self, msg: MessageExt) -> tuple[ExtraInfo, str, str]:
        ck = msg.properties.get(C.PROPERTY_POP_CK)
        if not ck:
            raise MQClientError(f"message {msg.msg_id} was not received by a SimpleConsumer (no POP_CK)")
        info = ExtraInfo.parse(ck)
        addr = self._running().find_broker_addr_in_publish(info.broker_name)
        if addr is None:
            raise MQClientError(f"broker {info.broker_name} of message {msg.msg_id} is not in any route")
        return info, info.real_topic(msg.topic, self.group), addr

    async def ack(self, msg: MessageExt) -> None:
        """The message is consumed: it will not come back."""
        info, topic, addr = self._handle(msg)
        header = AckMessageRequestHeader(
            self.group,
            topic,
            info.queue_id,
            " ".join(msg.properties[C.PROPERTY_POP_CK].split(" ")[:7]),
            info.queue_offset if info.queue_offset is not None else msg.queue_offset,
            info.broker_name,
        )
        await self._running().api.invoke(addr, RequestCode.ACK_MESSAGE, header)

    async def change_invisible_duration(self, msg: MessageExt, invisible_duration_ms: int) -> None:
        """Keep the message hidden for `invisible_duration_ms` from now (e.g. consumption takes longer).

        The message's receipt handle is replaced by the new one; the old one no longer acks it.
        """
        info, topic, addr = self._handle(msg)
        extra = " ".join(msg.properties[C.PROPERTY_POP_CK].split(" ")[:7])
        offset = info.queue_offset if info.queue_offset is not None else msg.queue_offset
        header = ChangeInvisibleTimeRequestHeader(
            self.group, topic, info.queue_id, extra, offset, invisible_duration_ms, info.broker_name
        )
        resp = await self._running().api.invoke(addr, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header)
        # The old receipt handle is stale now: the message carries the new one (RocketMQ 5 client does the same).
        rh = ChangeInvisibleTimeResponseHeader.from_ext_fields(resp.ext_fields)
        msg.properties[C.PROPERTY_POP_CK] = build_extra_info(
            offset,
            rh.pop_time,
            rh.invisible_time,
            rh.revive_qid,
            topic,
            info.broker_name,
            info.queue_id,
            offset,
        )

    # -- ConsumerInner -------------------------------------------------------------------------------
    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=ConsumeType.CONSUME_ACTIVELY,
            subscription_data_set=list(self._subs.values()),
        )

    def subscription_topics(self) -> set[str]:
        return set(self._subs)

    def update_subscribe_info(self, topic: str, mqs: set[MessageQueue]) -> None:
        return None

    async def do_rebalance(self) -> None:
        return None

    async def persist_consumer_offset(self) -> None:
        return None

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        return None

    def running_info(self) -> ConsumerRunningInfo:
        return ConsumerRunningInfo(
            properties={"PROP_CONSUME_TYPE": "CONSUME_POP"}, subscription_set=list(self._subs.values())
        )

    def offset_table(self, topic: str) -> dict[MessageQueue, int]:
        return {}

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> bytes:
        return b'{"autoCommit":true,"consumeResult":"CR_THROW_EXCEPTION","order":false,"spentTimeMills":0}'
