"""The trace hooks of producers and push consumers, and the inner producer their dispatcher writes with.

Ports of org.apache.rocketmq.client.trace.hook.SendMessageTraceHookImpl (a Pub context per successful
send, cost = time to the broker's answer, only when the broker answered with a region and TRACE_ON
true), ConsumeMessageTraceHookImpl (SubBefore when the listener is called, SubAfter with its result,
cost per message and ConsumeReturnType) and EndTransactionTraceHookImpl (4.9.8). Every hook swallows
its own errors: tracing never fails a send or a consume.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rocketq.client.trace.dispatcher import TRACE_INSTANCE_NAME, AsyncTraceDispatcher
from rocketq.client.trace.encoder import (
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
)
from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from rocketq.client.config import ClientConfig
    from rocketq.client.model import SendResult
    from rocketq.common.message import Message, MessageExt

log = logging.getLogger("rocketq.client.trace")

DEFAULT_TRACE_REGION_ID = "DefaultRegion"  # MixAll.DEFAULT_TRACE_REGION_ID


def new_dispatcher(config: ClientConfig, group: str, kind: str) -> AsyncTraceDispatcher | None:
    """The dispatcher of a client whose config has enable_msg_trace, else None."""
    if not config.enable_msg_trace:
        return None
    from rocketq.client.config import ClientConfig as _Base
    from rocketq.client.producer.producer import Producer

    # The owner's connection settings (name servers, credentials, TLS ...), in an instance of its own.
    shared = {k: v for k, v in config.model_dump().items() if k in _Base.model_fields}
    shared |= {
        "instance_name": TRACE_INSTANCE_NAME,
        "enable_msg_trace": False,
        "customized_trace_topic": None,
    }

    def producer(group_name: str) -> Producer:
        return Producer(group_name, max_message_size_bytes=128_000, **shared)

    return AsyncTraceDispatcher(group, kind, config.customized_trace_topic, producer)


def _msg_type(msg: Message) -> TraceMessageType:
    props = msg.properties
    if props.get(C.PROPERTY_TRANSACTION_PREPARED) == "true":
        return TraceMessageType.Trans_Msg_Half
    if props.get(C.PROPERTY_DELAY_TIME_LEVEL, "0") not in ("", "0"):
        return TraceMessageType.Delay_Msg
    return TraceMessageType.Normal_Msg


class SendTraceHook:
    def __init__(self, dispatcher: AsyncTraceDispatcher, group: str, clock: Clock = SYSTEM_CLOCK) -> None:
        self.dispatcher = dispatcher
        self.group = group
        self.clock = clock

    def sent(self, msg: Message, result: SendResult, started_ms: int, broker_addr: str | None) -> None:
        """sendMessageAfter: one Pub context for a send the broker answered."""
        try:
            if self.dispatcher.is_trace_topic(msg.topic) or not result.region_id or not result.trace_on:
                return
            cost = self.clock.now_ms() - started_ms
            bean = TraceBean(
                topic=msg.topic, msg_id=result.msg_id, offset_msg_id=result.offset_msg_id, tags=msg.tags,
                keys=msg.properties.get(C.PROPERTY_KEYS), store_host=broker_addr, body_length=len(msg.body), msg_type=_msg_type(msg),
                store_time=started_ms + cost // 2,
            )  # fmt: skip
            self.dispatcher.append(TraceContext(
                TraceType.Pub, started_ms, result.region_id, self.group, cost_time=cost,
                success=result.status.name == "SEND_OK", beans=[bean],
            ))  # fmt: skip
        except Exception:
            log.debug("recording a send trace failed", exc_info=True)

    def end_transaction(
        self,
        msg: Message,
        msg_id: str,
        transaction_id: str | None,
        state: str,
        broker_addr: str | None,
        from_check: bool,
        client_id: str,
    ) -> None:
        """EndTransactionTraceHookImpl.endTransaction."""
        try:
            bean = TraceBean(
                topic=msg.topic, msg_id=msg_id, tags=msg.tags, keys=msg.properties.get(C.PROPERTY_KEYS), store_host=broker_addr,
                msg_type=TraceMessageType.Trans_msg_Commit, client_host=client_id, transaction_id=transaction_id,
                transaction_state=state, from_transaction_check=from_check,
            )  # fmt: skip
            region = msg.properties.get(C.PROPERTY_MSG_REGION) or DEFAULT_TRACE_REGION_ID
            self.dispatcher.append(
                TraceContext(TraceType.EndTransaction, self.clock.now_ms(), region, self.group, beans=[bean])
            )
        except Exception:
            log.debug("recording an end-transaction trace failed", exc_info=True)


class ConsumeTraceHook:
    def __init__(self, dispatcher: AsyncTraceDispatcher, group: str, clock: Clock = SYSTEM_CLOCK) -> None:
        self.dispatcher = dispatcher
        self.group = group
        self.clock = clock

    def before(self, msgs: Sequence[MessageExt], request_id: str) -> TraceContext | None:
        """consumeMessageBefore: a SubBefore context for the messages whose TRACE_ON is not false."""
        try:
            beans, region = [], ""
            for msg in msgs:
                if msg.properties.get(C.PROPERTY_TRACE_SWITCH) == "false":
                    continue
                region = msg.properties.get(C.PROPERTY_MSG_REGION, "")
                beans.append(TraceBean(
                    topic=msg.topic, msg_id=msg.msg_id, tags=msg.tags, keys=msg.properties.get(C.PROPERTY_KEYS),
                    store_time=msg.store_timestamp, body_length=msg.store_size, retry_times=msg.reconsume_times,
                ))  # fmt: skip
            if not beans:
                return None
            ctx = TraceContext(
                TraceType.SubBefore,
                self.clock.now_ms(),
                region,
                self.group,
                request_id=request_id,
                beans=beans,
            )
            self.dispatcher.append(ctx)
            return ctx
        except Exception:
            log.debug("recording a consume trace failed", exc_info=True)
            return None

    def after(
        self, before: TraceContext | None, count: int, success: bool, return_type: ConsumeReturnType
    ) -> None:
        """consumeMessageAfter: SubAfter with the listener's result and the cost per message."""
        if before is None:
            return
        try:
            now = self.clock.now_ms()
            self.dispatcher.append(TraceContext(
                TraceType.SubAfter, now, before.region_id, self.group, cost_time=(now - before.time_stamp) // max(count, 1),
                success=success, request_id=before.request_id, context_code=int(return_type), beans=before.beans,
            ))  # fmt: skip
        except Exception:
            log.debug("recording a consume trace failed", exc_info=True)
