"""GET_TOPIC_STATS_INFO (202), GET_CONSUME_STATS (208) and GET_BROKER_CONSUME_STATS (317): queue offsets and the
groups' progress and lag.

Port of AdminBrokerProcessor.getTopicStatsInfo / getConsumeStats (4.9.8). Topic stats list every write
queue's min and max offsets and the store time of its last message. Consume stats list, for each topic
the group consumes (or the one asked), every read queue's broker offset (max), the group's committed
offset (0 when none) and the store time of the last consumed message; a topic the online group does not
subscribe is skipped, as in Java. GET_BROKER_CONSUME_STATS (AdminBrokerProcessor.fetchAllConsumeStatsInBroker,
what mqadmin brokerConsumeStats asks) does the same for every subscription group over its write queues, with
only the ordered topics when the header's isOrder says so. consumeTps stays 0 until the stats issue counts gets.
Deviation: a topic configured with more queues than maxTopicQueueNums (a topics.json from before that
check, or edited by hand) lists the first maxTopicQueueNums queues plus the queues that exist in the
store, not every id up to 2**31-1: the walk runs on the event loop.
"""

from __future__ import annotations

from collections.abc import Iterable

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, decode_header, ok
from rocketq.common.message import MessageQueue
from rocketq.remoting.protocol.bodies.admin import (
    ConsumeStats,
    ConsumeStatsList,
    OffsetWrapper,
    TopicOffset,
    TopicStatsTable,
)
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import (
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
)


def queue_ids(ctx: BrokerContext, topic: str, configured: int) -> Iterable[int]:
    """The queue ids a stats walk visits: every configured one, unless there are absurdly many."""
    limit = ctx.broker_config.max_topic_queue_nums
    if configured <= limit:
        return range(configured)
    existing = {q for q in ctx.store.queue_ids_of(topic) if q < configured}
    return sorted(existing.union(range(limit)))


class StatsAdminProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
            RequestCode.GET_CONSUME_STATS: self.get_consume_stats,
            RequestCode.GET_BROKER_CONSUME_STATS: self.get_broker_consume_stats,
        }

    async def get_topic_stats_info(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(GetTopicStatsInfoRequestHeader, request)
        ctx = self.ctx
        config = ctx.topic_config_manager.select_topic_config(h.topic)
        if config is None:
            raise RequestError(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        store, broker_name = ctx.store, ctx.broker_config.broker_name
        table = TopicStatsTable()
        for queue_id in queue_ids(ctx, h.topic, config.write_queue_nums):
            low = max(store.get_min_offset_in_queue(h.topic, queue_id), 0)
            high = max(store.get_max_offset_in_queue(h.topic, queue_id), 0)
            last = store.get_message_store_timestamp(h.topic, queue_id, high - 1) if high > 0 else 0
            table.offset_table[MessageQueue(h.topic, broker_name, queue_id)] = TopicOffset(low, high, last)
        return ok(request, body=table.encode())

    async def get_consume_stats(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(GetConsumeStatsRequestHeader, request)
        ctx = self.ctx
        group = h.consumer_group
        topics = {h.topic} if h.topic else ctx.consumer_offset_manager.which_topics_by_consumer(group)
        group_info = ctx.consumer_manager.get_consumer_group_info(group)
        stats = ConsumeStats()
        for topic in sorted(topics):
            config = ctx.topic_config_manager.select_topic_config(topic)
            if config is None:
                continue
            if (
                group_info is not None
                and group_info.subscription_table
                and topic not in group_info.subscription_table
            ):
                continue
            for queue_id in queue_ids(ctx, topic, config.read_queue_nums):
                stats.offset_table[MessageQueue(topic, ctx.broker_config.broker_name, queue_id)] = (
                    self._offsets(group, topic, queue_id)
                )
        return ok(request, body=stats.encode())

    async def get_broker_consume_stats(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = decode_header(GetConsumeStatsInBrokerHeader, request)
        ctx = self.ctx
        answer = ConsumeStatsList(broker_addr=ctx.broker_addr)
        for group in list(ctx.subscription_group_manager.subscription_group_table):
            group_info = ctx.consumer_manager.get_consumer_group_info(group)
            per_topic: list[ConsumeStats] = []
            for topic in sorted(ctx.consumer_offset_manager.which_topics_by_consumer(group)):
                config = ctx.topic_config_manager.select_topic_config(topic)
                if config is None or (h.is_order and not config.order):
                    continue
                if (
                    group_info is not None
                    and group_info.subscription_table
                    and topic not in group_info.subscription_table
                ):
                    continue
                stats = ConsumeStats()
                for queue_id in queue_ids(ctx, topic, config.write_queue_nums):
                    stats.offset_table[MessageQueue(topic, ctx.broker_config.broker_name, queue_id)] = (
                        self._offsets(group, topic, queue_id)
                    )
                answer.total_diff += stats.compute_total_diff()
                per_topic.append(stats)
            answer.consume_stats_list.append({group: per_topic})
        return ok(request, body=answer.encode())

    def _offsets(self, group: str, topic: str, queue_id: int) -> OffsetWrapper:
        store = self.ctx.store
        broker_offset = max(store.get_max_offset_in_queue(topic, queue_id), 0)
        consumer_offset = max(self.ctx.consumer_offset_manager.query_offset(group, topic, queue_id), 0)
        last = 0
        if consumer_offset > 0:
            last = max(store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1), 0)
        return OffsetWrapper(broker_offset, consumer_offset, last)
