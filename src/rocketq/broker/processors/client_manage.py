"""HEART_BEAT (34), UNREGISTER_CLIENT (35), CHECK_CLIENT_CONFIG (46).

Port of org.apache.rocketmq.broker.processor.ClientManageProcessor (4.9.8; docs/protocol.md 2.5). A heartbeat
registers the connection under each producer and consumer group it names; for a consumer group the
subscription group is looked up (auto-created by default) and its retry topic `%RETRY%<group>` created,
so that the consumer's route look-up of the retry topic succeeds after the broker's re-registration.
The body decoder is lenient (enums as names or ordinals, missing sets empty), as the C++ and Go SDKs
need. A body that is not JSON at all is SYSTEM_ERROR naming the problem. SQL92 subscriptions are
registered with the ConsumerFilterManager on every heartbeat (a bad one is logged, the heartbeat still
succeeds, as in 4.9.8); CHECK_CLIENT_CONFIG compiles the expression: SUBSCRIPTION_PARSE_FAILED naming
where it fails, or SYSTEM_ERROR when enablePropertyFilter is off.
"""

from __future__ import annotations

import logging

from rocketq.broker.clients import ClientChannelInfo
from rocketq.broker.context import BrokerContext
from rocketq.broker.filter import FilterError
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.broker.topic_config import RW, build_topic_sys_flag
from rocketq.common import constants as C
from rocketq.remoting.protocol.bodies.heartbeat import CheckClientRequestBody, HeartbeatData
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import BodyDecodeError
from rocketq.remoting.protocol.headers.client import UnregisterClientRequestHeader

log = logging.getLogger("rocketq.broker.client_manage")


class ClientManageProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.HEART_BEAT: self.heart_beat,
            RequestCode.UNREGISTER_CLIENT: self.unregister_client,
            RequestCode.CHECK_CLIENT_CONFIG: self.check_client_config,
        }

    def _channel(self, conn: Connection, client_id: str, request: RemotingCommand) -> ClientChannelInfo:
        return ClientChannelInfo(
            conn, client_id, request.language, request.version, self.ctx.clock.monotonic_ms()
        )

    async def heart_beat(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            data = HeartbeatData.decode(request.body)
        except BodyDecodeError as exc:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"the HeartbeatData body does not decode: {exc}"
            ) from None
        ctx = self.ctx
        channel = self._channel(conn, data.client_id, request)
        conn.attributes["client_id"] = data.client_id
        for consumer in data.consumer_data_set:
            if not consumer.group_name:
                continue
            group_config = ctx.subscription_group_manager.find_subscription_group_config(consumer.group_name)
            notify = True
            if group_config is not None:
                notify = group_config.notify_consumer_ids_changed_enable
                sys_flag = build_topic_sys_flag(False, True) if consumer.unit_mode else 0
                ctx.topic_config_manager.create_topic_in_send_message_back_method(
                    C.retry_topic(consumer.group_name), group_config.retry_queue_nums, RW, sys_flag
                )
            ctx.consumer_manager.register_consumer(
                consumer.group_name,
                channel,
                consumer.consume_type,
                consumer.message_model,
                consumer.consume_from_where,
                consumer.subscription_data_set,
                notify,
            )
            # Java registers the group's SQL92 expressions on every heartbeat and answers SUCCESS even
            # when one does not parse (a pull then gets FILTER_DATA_NOT_EXIST; CHECK_CLIENT_CONFIG says why).
            for error in ctx.filter_manager().register_group(
                consumer.group_name, consumer.subscription_data_set
            ):
                log.warning("consumer group %s from %s: %s", consumer.group_name, conn.remote_addr, error)
        for producer in data.producer_data_set:
            if producer.group_name:
                ctx.producer_manager.register_producer(producer.group_name, channel)
        return ok(request)

    async def unregister_client(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(UnregisterClientRequestHeader, request)
        ctx = self.ctx
        if h.producer_group is not None:
            ctx.producer_manager.unregister_producer(h.producer_group, conn.id)
        if h.consumer_group is not None:
            group_config = ctx.subscription_group_manager.find_subscription_group_config(h.consumer_group)
            notify = group_config.notify_consumer_ids_changed_enable if group_config is not None else True
            ctx.consumer_manager.unregister_consumer(h.consumer_group, conn.id, notify)
            if ctx.consumer_manager.get_consumer_group_info(h.consumer_group) is None:
                ctx.filter_manager().unregister(h.consumer_group)
        return ok(request)

    async def check_client_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            body = CheckClientRequestBody.decode(request.body) if request.body else None
        except BodyDecodeError as exc:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"the CheckClientRequestBody does not decode: {exc}"
            ) from None
        sub = body.subscription_data if body is not None else None
        if sub is not None:
            try:
                self.ctx.filter_manager().check_client_config(sub.expression_type, sub.sub_string)
            except FilterError as err:
                raise RequestError(err.response_code, str(err)) from None
        return ok(request)
