"""One pull from a queue: pick the broker node, send PULL_MESSAGE, post-process what came back.

Port of org.apache.rocketmq.client.impl.consumer.PullAPIWrapper (4.9.8): the broker id to pull from
is the one the last answer suggested for that queue (a slave when the master says the consumer lags);
found messages are re-filtered by tag string, get the MIN_OFFSET / MAX_OFFSET properties, the broker
name, and a transaction id when they are committed transactional messages. Messages from the
`%RETRY%<group>` topic get their original topic back (Java resetRetryAndNamespace). The two offsets
go into a message's properties when those are first read (rocketq.client.consumer.pulled).
"""

from __future__ import annotations

from rocketq.client.consumer.pulled import PulledMessageExt, decode_pulled, peek_properties
from rocketq.client.consumer.subscription import filter_by_tags
from rocketq.client.errors import MQClientError
from rocketq.client.instance import ClientInstance
from rocketq.client.model import PullResult, PullStatus
from rocketq.common import constants as C
from rocketq.common.message import MessageExt, MessageQueue
from rocketq.common.record.lazy import UNSET
from rocketq.remoting.protocol.bodies.heartbeat import SubscriptionData
from rocketq.remoting.protocol.headers.pull import PullMessageRequestHeader

# A message whose TRAN_MSG property is "true" holds these bytes in its record's properties text: a pull
# body without them has no committed transactional message, and its views need no properties decoded.
_TRANSACTIONAL = f"{C.PROPERTY_TRANSACTION_PREPARED}{C.NAME_VALUE_SEPARATOR}true".encode()


class PullAPIWrapper:
    """Pulls for one consumer group."""

    def __init__(self, instance: ClientInstance, group: str) -> None:
        self.instance = instance
        self.group = group
        self._which_broker: dict[MessageQueue, int] = {}

    async def pull(
        self,
        mq: MessageQueue,
        sub: SubscriptionData,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        suspend_ms: int,
        timeout_ms: float,
        *,
        send_subscription: bool = False,
    ) -> PullResult:
        addr = self._broker_addr(mq)
        if addr is None:
            await self.instance.update_topic_route(mq.topic)
            addr = self._broker_addr(mq)
        if addr is None:
            raise MQClientError(f"the broker {mq.broker_name} of {mq} is not in any route")
        header = PullMessageRequestHeader(
            consumer_group=self.group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=sys_flag,
            commit_offset=commit_offset,
            suspend_timeout_millis=suspend_ms,
            sub_version=sub.sub_version,
            subscription=sub.sub_string if send_subscription else None,
            expression_type=sub.expression_type or "TAG",
            bname=mq.broker_name,
        )
        result, body = await self.instance.api.pull_message_body(addr, header, timeout_ms)
        if not body:
            return self.process(mq, result, sub)
        result.messages = decode_pulled(body)
        return self.process(mq, result, sub, _TRANSACTIONAL in body)

    def _broker_addr(self, mq: MessageQueue) -> str | None:
        broker_id = self._which_broker.get(mq, C.MASTER_ID)
        return self.instance.find_broker_addr_in_subscribe(mq.broker_name, broker_id, only_this=False)

    def process(
        self, mq: MessageQueue, result: PullResult, sub: SubscriptionData, transactional: bool = True
    ) -> PullResult:
        """`transactional`: False when the pull body is known to hold no TRAN_MSG=true message; then a view
        whose properties are still undecoded gets the offsets for later instead of being decoded now."""
        self._which_broker[mq] = result.suggest_which_broker_id
        if result.status is not PullStatus.FOUND:
            return result
        msgs = filter_by_tags(result.messages, sub)
        min_offset, max_offset = str(result.min_offset), str(result.max_offset)
        later = (C.PROPERTY_MIN_OFFSET, min_offset, C.PROPERTY_MAX_OFFSET, max_offset)
        broker_name = mq.broker_name
        prepared, min_key, max_key = (
            C.PROPERTY_TRANSACTION_PREPARED,
            C.PROPERTY_MIN_OFFSET,
            C.PROPERTY_MAX_OFFSET,
        )
        lazy, peek = not transactional, peek_properties
        for msg in msgs:  # per message: the names above are locals, not module attribute reads
            msg.broker_name = broker_name
            if lazy and type(msg) is PulledMessageExt and peek(msg) is UNSET:
                msg._later = later  # added to its properties when they are decoded
                continue
            props = msg.properties
            if props.get(prepared) == "true":
                msg.transaction_id = props.get(C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            props[min_key] = min_offset
            props[max_key] = max_offset
        result.messages = msgs
        return result

    def forget(self, mq: MessageQueue) -> None:
        self._which_broker.pop(mq, None)


def reset_retry_topic(msgs: list[MessageExt], group: str) -> None:
    """Messages redelivered through %RETRY%<group> show their original topic to the listener."""
    retry = C.retry_topic(group)
    for msg in msgs:
        if msg.topic != retry:  # the common case, decided without reading the properties
            continue
        original = msg.properties.get(C.PROPERTY_RETRY_TOPIC)
        if original:
            msg.topic = original
