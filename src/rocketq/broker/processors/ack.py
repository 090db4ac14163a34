"""ACK_MESSAGE (200051) and CHANGE_MESSAGE_INVISIBLETIME (200053): settle or extend a popped message.

Ports of RocketMQ 5's AckMessageProcessor and ChangeInvisibleTimeProcessor request checks (topic exists,
queue id in range -> else MESSAGE_ILLEGAL, offset inside the queue -> else NO_MESSAGE), then the receipt
handle (extraInfo) is checked against the messages in flight (broker/pop/service.py). A stale handle
(acked already, changed, timed out, never handed out) is answered NO_MESSAGE with a remark saying which,
and changes nothing: RocketMQ 5's remoting client reads NO_MESSAGE on an ack as AckStatus.NO_EXIST.
CHANGE_MESSAGE_INVISIBLETIME answers the new popTime / invisibleTime / reviveQid, from which the client
builds the message's new receipt handle (the old one is stale from then on). Deviation: RocketMQ 5 acks
whatever handle it gets (a stale ack is a no-op there) and answers SUCCESS.
"""

from __future__ import annotations

from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.broker.pop.inflight import StaleHandle
from rocketq.broker.pop.service import PopStoreError
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.broker.processors.pop import REVIVE_QID, check_invisible_time, pop_service
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ExtraInfo,
    ExtraInfoError,
)


class AckMessageProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.ACK_MESSAGE: self.ack,
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME: self.change_invisible_time,
        }

    def _check(self, header: Any, *, offset_may_equal_max: bool) -> ExtraInfo:
        ctx = self.ctx
        topic, queue_id, offset = header.topic, header.queue_id, header.offset
        topic_config = ctx.topic_config_manager.select_topic_config(topic)
        if topic_config is None:
            raise RequestError(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        if queue_id < 0 or queue_id >= topic_config.read_queue_nums:
            raise RequestError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{topic_config.read_queue_nums}]",
            )
        low = ctx.store.get_min_offset_in_queue(topic, queue_id)
        high = ctx.store.get_max_offset_in_queue(topic, queue_id)
        if offset < low or offset > high or (offset == high and not offset_may_equal_max):
            raise RequestError(
                ResponseCode.NO_MESSAGE,
                f"offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{low}~{high}",
            )
        try:
            return ExtraInfo.parse(header.extra_info)
        except ExtraInfoError as exc:
            raise RequestError(ResponseCode.MESSAGE_ILLEGAL, str(exc)) from None

    async def ack(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header: AckMessageRequestHeader = decode_header(AckMessageRequestHeader, request)
        extra = self._check(header, offset_may_equal_max=True)
        try:
            await pop_service(self.ctx).ack(
                header.consumer_group, header.topic, header.queue_id, header.offset, extra
            )
        except StaleHandle as exc:
            raise RequestError(ResponseCode.NO_MESSAGE, f"stale receipt handle: {exc}") from None
        except PopStoreError as exc:
            raise RequestError(ResponseCode.SYSTEM_ERROR, str(exc)) from None
        return ok(request)

    async def change_invisible_time(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header: ChangeInvisibleTimeRequestHeader = decode_header(ChangeInvisibleTimeRequestHeader, request)
        extra = self._check(header, offset_may_equal_max=False)
        check_invisible_time(header.invisible_time)
        try:
            pop_time, invisible = await pop_service(self.ctx).change_invisible_time(
                header.consumer_group,
                header.topic,
                header.queue_id,
                header.offset,
                extra,
                header.invisible_time,
            )
        except StaleHandle as exc:
            raise RequestError(ResponseCode.NO_MESSAGE, f"stale receipt handle: {exc}") from None
        except PopStoreError as exc:
            raise RequestError(ResponseCode.SYSTEM_ERROR, str(exc)) from None
        return ok(request, ChangeInvisibleTimeResponseHeader(pop_time, invisible, REVIVE_QID).to_ext_fields())
