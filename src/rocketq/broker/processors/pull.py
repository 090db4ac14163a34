"""PULL_MESSAGE (11), with long polling.

Port of org.apache.rocketmq.broker.processor.PullMessageProcessor (4.9.8; docs/protocol.md 2.6): the checks
in Java's order, the store status -> response code table, all four PullMessageResponseHeader fields in
every answer (Java clients unbox them unconditionally), suggestWhichBrokerId, the piggy-backed offset
commit (once, on first processing, never when a parked pull is replayed), an OffsetMovedEvent message
written to OFFSET_MOVED_EVENT on PULL_OFFSET_MOVED, and parking on PULL_NOT_FOUND when the suspend bit
is set (broker/long_polling.py). A replayed pull is answered through `conn.send_response` with the
original opaque. Filters (TAG and SQL92) come from the broker's ConsumerFilterManager
(broker/filter): the pull's own expression with FLAG_SUBSCRIPTION, else the heartbeat's subscription
and the expression registered with it; a parked pull keeps its filter. With enablePropertyFilter off
an SQL92 subscription is SYSTEM_ERROR "The broker does not support consumer to filter message by SQL92".

Hot path: the store read is synchronous and the answer is built without awaiting anything; the body is
the stored records joined by the store's read (GetService, joined=True), each copied once.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from rocketq.broker.context import BrokerContext
from rocketq.broker.filter import FilterError
from rocketq.broker.long_polling import PullRequest
from rocketq.broker.processors.common import FAQ_SUFFIX, Connection, Processor, RequestError, decode_with
from rocketq.common import constants as C
from rocketq.common.constants import PermName, PullSysFlag
from rocketq.common.service import spawn
from rocketq.common.tags import java_hash_code
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.heartbeat import MessageModel, SubscriptionData
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.pull import PullMessageRequestHeader
from rocketq.store.message import BrokerMessage
from rocketq.store.protocols import MessageFilter
from rocketq.store.status import GetMessageStatus, GetResult

log = logging.getLogger("rocketq.broker.pull")

_FOUND = GetMessageStatus.FOUND
# Store status -> response code; the two "empty queue" statuses depend on the request offset.
_CODES = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}
_EMPTY_QUEUE = (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE)


class PullFields(NamedTuple):
    """PullMessageRequestHeader's fields, read once per pull: decoded by the header's own rules (required
    fields, parsers, errors) straight into this tuple, without a header object (compiled when _cheader was
    built: CommandHeader.compile_decoder_into)."""

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_millis: int
    sub_version: int
    subscription: str | None
    expression_type: str | None
    bname: str | None


_decode_pull = PullMessageRequestHeader.compile_decoder_into(PullFields, PullFields._fields)


class PullMessageProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {RequestCode.PULL_MESSAGE: self.pull}

    async def pull(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        return self.process(conn, request, allow_suspend=True)

    def replay(self, conn: Connection, request: RemotingCommand) -> None:
        """Re-run a parked pull (woken or timed out) and send its answer (PullRequestHoldService's hook)."""
        if not conn.is_active:
            return
        try:
            response = self.process(conn, request, allow_suspend=False)
        except RequestError as err:
            response = request.make_response(err.code, err.remark)
        except Exception as exc:  # a bug: answer rather than leave the client waiting 30 s
            log.exception("replaying a held pull from %s failed", conn.remote_addr)
            response = request.make_response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        if response is not None:
            conn.send_response(response)

    # -- the pull -----------------------------------------------------------------------------------
    def process(
        self, conn: Connection, request: RemotingCommand, allow_suspend: bool
    ) -> RemotingCommand | None:
        ctx = self.ctx
        header = decode_with(_decode_pull, request)
        cfg = ctx.broker_config
        if not PermName.is_readable(cfg.broker_permission):
            raise RequestError(
                ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] pulling message is forbidden"
            )
        group_config = ctx.subscription_group_manager.find_subscription_group_config(header.consumer_group)
        if group_config is None:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{header.consumer_group}] does not exist",
            )
        if not group_config.consume_enable:
            raise RequestError(
                ResponseCode.NO_PERMISSION, f"subscription group no permission, {header.consumer_group}"
            )
        sys_flag = header.sys_flag
        topic_config = ctx.topic_config_manager.select_topic_config(header.topic)
        if topic_config is None:
            raise RequestError(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{header.topic}] not exist, apply first please! {FAQ_SUFFIX}",
            )
        if not PermName.is_readable(topic_config.perm):
            raise RequestError(
                ResponseCode.NO_PERMISSION, f"the topic[{header.topic}] pulling message is forbidden"
            )
        if header.queue_id < 0 or header.queue_id >= topic_config.read_queue_nums:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] topicConfig.readQueueNums:"
                f"[{topic_config.read_queue_nums}] consumer:[{conn.remote_addr}]",
            )
        message_filter = self._filter(header, group_config, sys_flag)
        result = ctx.store.get_message(
            header.consumer_group,
            header.topic,
            header.queue_id,
            header.queue_offset,
            header.max_msg_nums,
            message_filter,
            joined=True,
        )
        response = self._answer(conn, request, header, group_config, result, allow_suspend, message_filter)
        # The piggy-backed commit: only on first processing, only on a master (Java storeOffsetEnable).
        if allow_suspend and sys_flag & PullSysFlag.FLAG_COMMIT_OFFSET and not ctx.store_config.is_slave:
            ctx.consumer_offset_manager.commit_offset(
                conn.remote_addr, header.consumer_group, header.topic, header.queue_id, header.commit_offset
            )
        return response

    def _filter(self, header: PullFields, group_config: Any, sys_flag: int) -> MessageFilter | None:
        manager = self.ctx.filter_manager()
        group, topic = header.consumer_group, header.topic
        try:
            if sys_flag & PullSysFlag.FLAG_SUBSCRIPTION:
                return manager.filter_for_request(group, topic, header.expression_type, header.subscription)
            sub = self._heartbeat_subscription(header, group_config)
            return manager.filter_for_subscription(
                group, topic, sub.expression_type, sub.sub_string, sub.code_set, header.sub_version
            )
        except FilterError as err:
            raise RequestError(err.response_code, str(err)) from None

    def _heartbeat_subscription(self, header: PullFields, group_config: Any) -> SubscriptionData:
        group_info = self.ctx.consumer_manager.get_consumer_group_info(header.consumer_group)
        if group_info is None:
            # Java's words and FAQ line (PullMessageProcessor), with the group named
            raise RequestError(
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's group info not exist: {header.consumer_group}{FAQ_SUFFIX}",
            )
        if (
            not group_config.consume_broadcast_enable
            and group_info.message_model is MessageModel.BROADCASTING
        ):
            raise RequestError(
                ResponseCode.NO_PERMISSION,
                f"the consumer group[{header.consumer_group}] can not consume by broadcast way",
            )
        sub = group_info.find_subscription_data(header.topic)
        if sub is None:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's subscription not exist: topic {header.topic}, group {header.consumer_group}{FAQ_SUFFIX}",
            )
        if sub.sub_version < header.sub_version:
            raise RequestError(ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        return sub

    def _answer(
        self,
        conn: Connection,
        request: RemotingCommand,
        header: PullFields,
        group_config: Any,
        result: GetResult,
        allow_suspend: bool,
        message_filter: MessageFilter | None,
    ) -> RemotingCommand | None:
        ctx = self.ctx
        status = result.status
        if status in _EMPTY_QUEUE:
            code = ResponseCode.PULL_OFFSET_MOVED if header.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        else:
            code = _CODES[status]
        suggest = C.MASTER_ID
        if ctx.broker_config.slave_read_enable:
            suggest = (
                group_config.which_broker_when_consume_slowly
                if result.suggest_pulling_from_slave
                else group_config.broker_id
            )
        # A slave serves pulls whatever slaveReadEnable says (the consumers of a dead master read from it):
        # Java 4.9.8 sets PULL_RETRY_IMMEDIATELY there, then overwrites it with the code of the status.
        # PullMessageResponseHeader(suggest, next_begin_offset, min_offset, max_offset).to_ext_fields(),
        # written out (the same keys in the same order, every value an int as text): one dict per pull
        # instead of a header object and its generic encoder.
        ext = {
            "suggestWhichBrokerId": str(suggest),
            "nextBeginOffset": str(result.next_begin_offset),
            "minOffset": str(result.min_offset),
            "maxOffset": str(result.max_offset),
        }
        if code == ResponseCode.SUCCESS:
            body = result.body  # the records joined by the store, each copied once out of the mapping
            count = len(result.queue_offsets)
            ctx.stats.on_get(header.consumer_group, header.topic, count, len(body))
            if ctx.metrics is not None:
                ctx.metrics.on_get(
                    header.consumer_group,
                    header.topic,
                    header.queue_id,
                    count,
                    len(body),
                    result.next_begin_offset,
                )
            return request.make_response(code, status.value, ext, body)
        if (
            code == ResponseCode.PULL_NOT_FOUND
            and allow_suspend
            and header.sys_flag & PullSysFlag.FLAG_SUSPEND
        ):
            if self._suspend(conn, request, header, message_filter):
                return None
        elif code == ResponseCode.PULL_OFFSET_MOVED:
            if ctx.store_config.is_slave:
                code, ext["suggestWhichBrokerId"] = (
                    ResponseCode.PULL_RETRY_IMMEDIATELY,
                    str(group_config.broker_id),
                )
            else:
                log.info(
                    "PULL_OFFSET_MOVED: group %s topic %s queue %d asked %d, corrected to %d (%s)",
                    header.consumer_group,
                    header.topic,
                    header.queue_id,
                    header.queue_offset,
                    result.next_begin_offset,
                    status.value,
                )
                self._offset_moved_event(header, result.next_begin_offset)
        return request.make_response(code, status.value, ext)

    def _suspend(
        self,
        conn: Connection,
        request: RemotingCommand,
        header: PullFields,
        message_filter: MessageFilter | None,
    ) -> bool:
        hold_service = self.ctx.pull_hold_service
        if hold_service is None:
            return False
        cfg = self.ctx.broker_config
        hold_ms = header.suspend_timeout_millis if cfg.long_polling_enable else cfg.short_polling_time_ms
        deadline = self.ctx.clock.monotonic_ms() + hold_ms
        pr = PullRequest(request, conn, header.queue_offset, deadline, message_filter)
        hold_service.suspend(header.topic, header.queue_id, pr, hold_ms)
        return True

    def _offset_moved_event(self, header: PullFields, offset_new: int) -> None:
        """Java generateOffsetMovedEvent: a record in OFFSET_MOVED_EVENT tagged and keyed by the group."""
        ctx = self.ctx
        body = fastjson.dumps(
            {
                "consumerGroup": header.consumer_group,
                "messageQueue": {
                    "brokerName": ctx.broker_config.broker_name,
                    "queueId": header.queue_id,
                    "topic": header.topic,
                },
                "offsetNew": offset_new,
                "offsetRequest": header.queue_offset,
            }
        )
        group = header.consumer_group
        msg = BrokerMessage(
            topic=C.RMQ_SYS_OFFSET_MOVED_EVENT,
            queue_id=0,
            body=body,
            properties={C.PROPERTY_TAGS: group, C.PROPERTY_KEYS: group},
            tags_code=java_hash_code(group),
            born_timestamp=ctx.clock.now_ms(),
            born_host=ctx.store_host,
            store_host=ctx.store_host,
        )

        async def put() -> None:
            result = await ctx.store.put_message(msg)
            if not result.is_ok:
                log.warning("writing an OffsetMovedEvent failed: %s", result.status.value)

        spawn("offset-moved-event", put())
