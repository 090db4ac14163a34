"""POP_MESSAGE (200050): SimpleConsumer receive, with long polling.

Port of RocketMQ 5's PopMessageProcessor request handling (the state machine is broker/pop/service.py):
checks in Java's order (broker readable, maxMsgNums <= 32, topic exists and readable, queue id, group
exists and may consume, the subscription expression), then a pop over the topic's queues and its pop
retry topic. Found: SUCCESS with the stored records as body and popTime / invisibleTime / reviveQid /
restNum / startOffsetInfo / msgOffsetInfo, from which the client builds each receipt handle. Nothing
found: held up to pollTime (PopLongPolling) and answered POLLING_TIMEOUT (POLLING_FULL when too many
wait), always with the response header fields (Java clients decode them on every answer).
Ours: an invisible time below 1 s or above 12 h is INVALID_PARAMETER (as RocketMQ 5's proxy refuses
it); an orderly pop is INVALID_PARAMETER (not supported); a request is held at most 5 minutes whatever
its pollTime, and RocketMQ 5's bornTime check (isTimeoutTooMuch) is not made.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.broker.filter import FilterError
from rocketq.broker.pop.long_polling import PopLongPolling, PopWaiter
from rocketq.broker.pop.service import PopResult, PopService
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.common.constants import PermName
from rocketq.common.service import spawn
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.pop import (
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    pop_retry_topic_v1,
)
from rocketq.store.protocols import MessageFilter

log = logging.getLogger("rocketq.broker.pop")

# Response codes RocketMQ 5 added (remoting ResponseCode); not in the 4.x table of codes.py.
INVALID_PARAMETER = 29
POLLING_FULL = 209
POLLING_TIMEOUT = 210

MAX_MSG_NUMS = 32
MIN_INVISIBLE_TIME_MS = 1_000
MAX_INVISIBLE_TIME_MS = 12 * 3_600_000
MAX_POLL_TIME_MS = 5 * 60_000
REVIVE_QID = 0


def check_invisible_time(invisible_time: int) -> None:
    if not MIN_INVISIBLE_TIME_MS <= invisible_time <= MAX_INVISIBLE_TIME_MS:
        raise RequestError(
            INVALID_PARAMETER,
            f"invisibleTime {invisible_time} ms is out of range [{MIN_INVISIBLE_TIME_MS}, {MAX_INVISIBLE_TIME_MS}] ms",
        )


def pop_service(ctx: BrokerContext) -> PopService:
    service = ctx.pop_service
    if service is None:
        raise RequestError(
            ResponseCode.SERVICE_NOT_AVAILABLE, "POP is not available: the broker is starting or stopping"
        )
    return service


class PopMessageProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.long_polling = PopLongPolling(self._replay, ctx.clock)
        self.handlers = {RequestCode.POP_MESSAGE: self.pop}

    async def pop(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        return await self.process(conn, request, None)

    def _replay(self, waiter: PopWaiter) -> None:
        spawn("pop-replay", self._replay_async(waiter))

    async def _replay_async(self, waiter: PopWaiter) -> None:
        conn, request = waiter.conn, waiter.request
        if not conn.is_active:
            return
        try:
            response = await self.process(conn, request, waiter.deadline_ms)
        except RequestError as err:
            response = request.make_response(err.code, err.remark)
        except Exception as exc:  # a bug: answer rather than leave the client waiting
            log.exception("replaying a held POP from %s failed", conn.remote_addr)
            response = request.make_response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        if response is not None:
            conn.send_response(response)

    # -- the pop ------------------------------------------------------------------------------------
    async def process(
        self, conn: Connection, request: RemotingCommand, deadline_ms: int | None
    ) -> RemotingCommand | None:
        ctx = self.ctx
        header: PopMessageRequestHeader = decode_header(PopMessageRequestHeader, request)
        topic_config = self._check(header)
        message_filter = self._filter(header)
        service = pop_service(ctx)
        queues = service.queues_to_read(
            header.consumer_group, header.topic, header.queue_id, topic_config.read_queue_nums
        )
        result = await service.pop(
            header.consumer_group,
            queues,
            header.max_msg_nums,
            header.invisible_time,
            header.init_mode,
            message_filter,
        )
        if result.records:
            return ok(request, self._header(result), b"".join(result.records))
        now = ctx.clock.monotonic_ms()
        if deadline_ms is None:
            deadline_ms = now + min(max(header.poll_time, 0), MAX_POLL_TIME_MS)
        code = POLLING_TIMEOUT
        if deadline_ms > now:
            topics = (header.topic, pop_retry_topic_v1(header.topic, header.consumer_group))
            if self.long_polling.park(PopWaiter(conn, request, deadline_ms, topics)):
                return None
            code = POLLING_FULL
        response = request.make_response(code, "NO_MESSAGE_IN_QUEUE", self._header(result))
        return response

    def _check(self, header: PopMessageRequestHeader) -> Any:
        ctx = self.ctx
        cfg = ctx.broker_config
        if not PermName.is_readable(cfg.broker_permission):
            raise RequestError(
                ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] pop message is forbidden"
            )
        if header.max_msg_nums > MAX_MSG_NUMS:
            raise RequestError(
                INVALID_PARAMETER, f"the broker[{cfg.broker_ip1}] pop message's num is greater than 32"
            )
        if header.max_msg_nums <= 0:
            raise RequestError(INVALID_PARAMETER, f"maxMsgNums {header.max_msg_nums} is not positive")
        check_invisible_time(header.invisible_time)
        if header.order:
            raise RequestError(INVALID_PARAMETER, "orderly POP is not supported by this broker")
        topic_config = ctx.topic_config_manager.select_topic_config(header.topic)
        if topic_config is None:
            raise RequestError(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist, apply first please!"
            )
        if not PermName.is_readable(topic_config.perm):
            raise RequestError(
                ResponseCode.NO_PERMISSION, f"the topic[{header.topic}] peeking message is forbidden"
            )
        if header.queue_id >= topic_config.read_queue_nums:
            raise RequestError(
                INVALID_PARAMETER,
                f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] topicConfig.readQueueNums:"
                f"[{topic_config.read_queue_nums}]",
            )
        group = header.consumer_group
        group_config = ctx.subscription_group_manager.find_subscription_group_config(group)
        if group_config is None:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist"
            )
        if not group_config.consume_enable:
            raise RequestError(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
        return topic_config

    def _filter(self, header: PopMessageRequestHeader) -> MessageFilter | None:
        try:
            return self.ctx.filter_manager().filter_for_request(
                header.consumer_group,
                header.topic,
                header.exp_type,
                header.exp,
                require_property_filter=False,
            )
        except FilterError as exc:
            raise RequestError(exc.response_code, str(exc)) from None

    def _header(self, result: PopResult) -> dict[str, str]:
        return PopMessageResponseHeader(
            pop_time=result.pop_time,
            invisible_time=result.invisible_time,
            revive_qid=REVIVE_QID,
            rest_num=result.rest_num,
            start_offset_info=";".join(result.start_offset_info),
            msg_offset_info=";".join(result.msg_offset_info),
        ).to_ext_fields()
