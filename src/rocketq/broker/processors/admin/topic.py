"""UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215), GET_ALL_TOPIC_CONFIG (21).

Port of AdminBrokerProcessor.updateAndCreateTopic / deleteTopic / getAllTopicConfig (4.9.8; docs/protocol.md
2.12). Creating a topic replaces any existing config, bumps the data version, persists, and registers
just that topic with every NameServer before answering (Java's registerIncrementBrokerData is
synchronous), so a route look-up right after the answer already sees it. System topics are refused
with SYSTEM_ERROR "The topic[x] is conflict with system topic.", as are creations on a slave.
Deviation (RocketMQ 5 validates queue numbers; 4.9.8 takes any int): a read or write queue number
outside 0..maxTopicQueueNums (default 1024) is refused with INVALID_PARAMETER naming the field, since
every per-queue walk (stats, offsets) would otherwise run over up to 2**31-1 queue ids.
Deleting removes the config, the consumer offsets and the stored queues.
"""

from __future__ import annotations

import logging

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.broker.topic_config import topic_problem
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.register import TopicConfig, TopicFilterType
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import CreateTopicRequestHeader, DeleteTopicRequestHeader

log = logging.getLogger("rocketq.broker.admin")

INVALID_PARAMETER = 29  # RocketMQ 5 ResponseCode.INVALID_PARAMETER (4.9.8 has no code for a bad argument)


class TopicAdminProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
        }

    def _check_topic(self, topic: str) -> None:
        if self.ctx.store_config.is_slave:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, "Can't modify topic or subscription group from slave broker."
            )
        problem = topic_problem(topic)
        if problem is not None:
            raise RequestError(ResponseCode.SYSTEM_ERROR, problem)
        if self.ctx.topic_config_manager.is_system_topic(topic):
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic."
            )

    async def update_and_create_topic(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(CreateTopicRequestHeader, request)
        self._check_topic(h.topic)
        self._check_queue_nums(h)
        config = TopicConfig(
            topic_name=h.topic,
            read_queue_nums=h.read_queue_nums,
            write_queue_nums=h.write_queue_nums,
            perm=h.perm,
            topic_filter_type=TopicFilterType.parse(h.topic_filter_type),
            topic_sys_flag=h.topic_sys_flag or 0,
            order=bool(h.order),
        )
        log.info("updateAndCreateTopic %s by %s", config, conn.remote_addr)
        manager = self.ctx.topic_config_manager
        manager.update_topic_config(config)
        version = manager.data_version.copy()  # this change's own version, for the NameServer
        # Java persists topics.json before answering: a kill -9 right after the answer keeps the topic.
        if not await manager.persist_changes():
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"the topic[{h.topic}] could not be persisted (see the broker log)"
            )
        await self.ctx.register_increment(config, version)
        return ok(request)

    def _check_queue_nums(self, h: CreateTopicRequestHeader) -> None:
        """Queue counts within 0..maxTopicQueueNums (RocketMQ 5 refuses bad ones with INVALID_PARAMETER)."""
        limit = self.ctx.broker_config.max_topic_queue_nums
        for name, value in (("readQueueNums", h.read_queue_nums), ("writeQueueNums", h.write_queue_nums)):
            if not 0 <= value <= limit:
                raise RequestError(
                    INVALID_PARAMETER,
                    f"{name} {value} is out of range: a topic has 0 to {limit} queues (maxTopicQueueNums)",
                )

    async def delete_topic(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(DeleteTopicRequestHeader, request)
        self._check_topic(h.topic)
        log.info("deleteTopic %s by %s", h.topic, conn.remote_addr)
        ctx = self.ctx
        deleted = ctx.topic_config_manager.delete_topic_config(h.topic)
        ctx.consumer_offset_manager.remove_topic(h.topic)
        ctx.store.delete_topics({h.topic})
        # Java persists topics.json before answering: a topic deleted must not come back after a crash.
        if deleted and not await ctx.topic_config_manager.persist_changes():
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"deleting the topic[{h.topic}] failed to persist (see the log)"
            )
        return ok(request)

    async def get_all_topic_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        wrapper = self.ctx.topic_config_manager.build_serialize_wrapper()
        return ok(request, body=fastjson.dumps(wrapper.to_json()))
