"""CONSUMER_SEND_MSG_BACK (36): a consumer hands a message it failed to consume back for a later retry.

Port of SendMessageProcessor.asyncConsumerSendMsgBack (4.9.8; docs/protocol.md 2.8). Served
by the send family (SendMessageProcessor registers `ConsumerSendMsgBack.handle`). Checks in Java's order
(group exists, broker writable, retryQueueNums > 0 else a silent SUCCESS, retry topic writable, the
message at the commit-log offset exists), then: RETRY_TOPIC = the original topic unless already set,
WAIT=false, maxReconsumeTimes from the group or (version >= V3_4_9) the header; reconsumeTimes at the
maximum or a negative delay level -> %DLQ%<group> (one queue, read-write as 4.9.8 creates it, DELAY=0);
otherwise %RETRY%<group> (a random one of retryQueueNums queues) with delay level = the header's when
> 0, else 3 + reconsumeTimes, through SCHEDULE_TOPIC_XXXX. The new record keeps body, flag, properties,
sys flag, born timestamp/host and store host; RECONSUMETIMES + 1; ORIGIN_MESSAGE_ID = the existing one
or the original's offset msgId. Answer: SUCCESS, or SYSTEM_ERROR with the put status name.
"""

from __future__ import annotations

import logging
import random

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, RequestError, decode_header, ok
from rocketq.broker.topic_config import RW, build_topic_sys_flag
from rocketq.common import constants as C
from rocketq.common.constants import PermName
from rocketq.common.message import MessageExt
from rocketq.common.record.codec import decode_record
from rocketq.common.record.layout import RecordDecodeError
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.retry import ConsumerSendMsgBackRequestHeader
from rocketq.store.delay import redirect_to_schedule
from rocketq.store.reput import reput_message
from rocketq.store.status import PutMessageStatus

log = logging.getLogger("rocketq.broker.sendback")

DLQ_NUMS_PER_GROUP = 1
V3_4_9 = 121  # MQVersion ordinal from which the header's maxReconsumeTimes is honoured
RETRY_BASE_LEVEL = 3  # level of the first retry: 3 + reconsumeTimes (10 s, 30 s, 1 m, ...)


def look_message(ctx: BrokerContext, commit_log_offset: int) -> MessageExt | None:
    """Java lookMessageByOffset: the stored message at a commit-log offset (body left as stored)."""
    record = ctx.store.select_one_message_by_offset(commit_log_offset)
    if record is None:
        return None
    try:
        return decode_record(record, decompress_body=False)[0]
    except RecordDecodeError:
        return None


def retry_delay_level(requested: int, reconsume_times: int) -> int:
    """The header's level when > 0, else the stepped back-off 3 + reconsumeTimes."""
    return requested if requested > 0 else RETRY_BASE_LEVEL + reconsume_times


class ConsumerSendMsgBack:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._random = random.Random()

    async def handle(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        ctx = self.ctx
        header: ConsumerSendMsgBackRequestHeader = decode_header(ConsumerSendMsgBackRequestHeader, request)
        group = header.group
        group_config = ctx.subscription_group_manager.find_subscription_group_config(group)
        if group_config is None:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}"
            )
        cfg = ctx.broker_config
        if not PermName.is_writeable(cfg.broker_permission):
            raise RequestError(
                ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] sending message is forbidden"
            )
        if group_config.retry_queue_nums <= 0:
            return ok(request)
        topic = C.retry_topic(group)
        queue_id = self._random.randrange(99_999_999) % group_config.retry_queue_nums
        sys_flag = build_topic_sys_flag(False, True) if header.unit_mode else 0
        manager = ctx.topic_config_manager
        topic_config = manager.create_topic_in_send_message_back_method(
            topic, group_config.retry_queue_nums, RW, sys_flag
        )
        if not PermName.is_writeable(topic_config.perm):
            raise RequestError(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        ext = look_message(ctx, header.offset)
        if ext is None:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}")
        props = dict(ext.properties)
        props.setdefault(C.PROPERTY_RETRY_TOPIC, ext.topic)
        props[C.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        max_times = group_config.retry_max_times
        if request.version >= V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        to_dlq = ext.reconsume_times >= max_times or header.delay_level < 0
        if to_dlq:
            topic, queue_id = C.dlq_topic(group), 0
            manager.create_topic_in_send_message_back_method(topic, DLQ_NUMS_PER_GROUP, RW, 0)
            props[C.PROPERTY_DELAY_TIME_LEVEL] = "0"
        props[C.PROPERTY_ORIGIN_MESSAGE_ID] = props.get(C.PROPERTY_ORIGIN_MESSAGE_ID) or ext.offset_msg_id
        msg = reput_message(ext, topic, queue_id, props, reconsume_times=ext.reconsume_times + 1)
        if not to_dlq:
            level = retry_delay_level(header.delay_level, ext.reconsume_times)
            redirect_to_schedule(msg, level, ctx.delay_levels, ctx.clock.now_ms())
        else:
            log.info(
                "message %s of group %s goes to %s after %d consumption(s)",
                props[C.PROPERTY_ORIGIN_MESSAGE_ID],
                group,
                topic,
                ext.reconsume_times + 1,
            )
        result = await ctx.store.put_message(msg)
        if result.status is not PutMessageStatus.PUT_OK:
            raise RequestError(ResponseCode.SYSTEM_ERROR, result.status.value)
        ctx.stats.on_send_back(group, props[C.PROPERTY_RETRY_TOPIC])
        return ok(request)
