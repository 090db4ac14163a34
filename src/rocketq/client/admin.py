"""Admin: topics, routes, clusters, consumer groups and their progress, message lookup, offset reset.

Port of the parts of org.apache.rocketmq.tools.admin.DefaultMQAdminExt(Impl) and
client.impl.MQAdminImpl (4.9.8) that docs/api.md lists. Requests are built by MQClientAPI (client/api.py);
this module chooses the servers: name servers for routes and cluster info, every master of a cluster
for topic and group changes, every master of a topic for queries. The client starts on first use.
reset_offset_by_time asks each master of the topic to reset live (INVOKE_BROKER_TO_RESET_OFFSET, 222:
the broker tells every online consumer of the group to seek). When the group has no online consumer
(CONSUMER_NOT_ONLINE) or the broker does not serve 222, it writes the offsets itself
(SEARCH_OFFSET_BY_TIMESTAMP + UPDATE_CONSUMER_OFFSET per queue, Java's resetOffsetByTimestampOld), which
is right only while no consumer runs; the result says which way each broker went (ResetOffsets.offline).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from rocketq.client.admin_acl import AclAdminMixin
from rocketq.client.api import pull_all_header
from rocketq.client.config import ClientConfig
from rocketq.client.errors import MQBrokerError, MQClientError, NoRouteError
from rocketq.client.instance import ClientInstance, acquire_instance
from rocketq.client.model import PullResult
from rocketq.common import constants as C
from rocketq.common.config import parse_properties
from rocketq.common.message import MessageExt, MessageQueue
from rocketq.common.msg_id import parse_offset_msg_id
from rocketq.common.service import ServiceState, lifecycle_step
from rocketq.remoting.errors import ConsumerNotOnlineError, RequestCodeNotSupportedError
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.admin import (
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumeStats,
    GroupList,
    OffsetWrapper,
    ProducerConnection,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicOffset,
    TopicStatsTable,
)
from rocketq.remoting.protocol.bodies.consumer import (
    ConsumerRunningInfo,
    GetConsumerStatusBody,
    ResetOffsetBody,
)
from rocketq.remoting.protocol.bodies.register import KVTable
from rocketq.remoting.protocol.bodies.route import ClusterInfo, TopicRouteData
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import (
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketq.remoting.protocol.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    PutKVConfigRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)

STATUS_TIMEOUT_MS = 8_000


class ResetOffsets(dict[MessageQueue, int]):
    """The new offset of each queue, and the brokers that had to write them directly.

    `offline` maps a broker name to why its consumers were not told (no consumer of the group online, or a
    broker without live reset): their offsets take effect when the consumers start next, and a consumer
    that is in fact running overwrites them with its next commit.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.offline: dict[str, str] = {}

    @property
    def live(self) -> bool:
        """Whether every broker reset the group's online consumers."""
        return not self.offline

    def sorted(self) -> ResetOffsets:
        out = ResetOffsets(sorted(self.items()))
        out.offline = dict(self.offline)
        return out


@dataclass(slots=True)
class QueueProgress:
    """One queue of a consumer group: the broker's max offset, the group's offset, and the lag."""

    queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp: int = 0

    @property
    def lag(self) -> int:
        return max(0, self.broker_offset - self.consumer_offset)


class Admin(AclAdminMixin):
    """Cluster administration over the name servers and brokers (async; see rocketq.client.blocking)."""

    def __init__(
        self, namesrv_addr: str | None = None, *, config: ClientConfig | None = None, **settings: Any
    ) -> None:
        values = dict(config.model_dump()) if config is not None else {}
        values.update(settings)
        if namesrv_addr is not None:
            values["namesrv_addr"] = namesrv_addr
        values.setdefault("instance_name", "ADMIN")
        self.config = ClientConfig.build(values, source="Admin")
        self._state = ServiceState.CREATE_JUST
        self._instance: ClientInstance | None = None

    @lifecycle_step
    async def start(self) -> None:
        """Start the client underneath (done on first use too).

        Unlike a producer or consumer, an Admin may be started again: from SHUTDOWN_ALREADY (after
        shutdown()) or START_FAILED, start() acquires a client once more and the Admin is RUNNING
        again, so a command-line tool or a test can reuse one Admin object across cluster restarts.
        Concurrent first uses share one start, and a shutdown() waits for a start in flight.
        """
        if self._state is ServiceState.RUNNING:
            return
        inst = acquire_instance(self.config)
        inst.admin_users += 1
        try:
            await inst.start()
        except BaseException:
            self._state = ServiceState.START_FAILED
            await inst.release_admin()
            raise
        self._instance = inst
        self._state = ServiceState.RUNNING

    @lifecycle_step
    async def shutdown(self) -> None:
        """Release the client underneath (shared with other clients of the same settings)."""
        inst, self._instance = self._instance, None
        self._state = ServiceState.SHUTDOWN_ALREADY
        if inst is not None:
            await inst.release_admin()

    close = shutdown

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.shutdown()

    async def _inst(self) -> ClientInstance:
        if self._state is not ServiceState.RUNNING:
            await self.start()
        assert self._instance is not None
        return self._instance

    # -- name server views ---------------------------------------------------------------------------
    async def cluster_info(self) -> ClusterInfo:
        """The clusters and their brokers, as the name server knows them (GET_BROKER_CLUSTER_INFO)."""
        inst = await self._inst()
        return await inst.api.get_cluster_info(inst.namesrv_addr())

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The route of `topic`: its brokers and queues (NoRouteError when it has none)."""
        inst = await self._inst()
        route = await inst.fetch_route(topic)
        if route is None:
            raise NoRouteError(topic)
        return route

    async def topic_list(self) -> list[str]:
        """Every topic the name server knows, sorted."""
        inst = await self._inst()
        return await inst.api.get_all_topic_list(inst.namesrv_addr())

    async def masters(self, cluster: str | None = None) -> list[tuple[str, str]]:
        """(broker name, master address) of every broker of `cluster` (of all clusters when None)."""
        return await self._masters(cluster)

    async def _masters(self, cluster: str | None) -> list[tuple[str, str]]:
        """(broker name, master address) of every broker of `cluster` (of all clusters when None)."""
        info = await self.cluster_info()
        names = set(info.cluster_addr_table.get(cluster, [])) if cluster else set(info.broker_addr_table)
        if cluster and cluster not in info.cluster_addr_table:
            raise MQClientError(f"no cluster named {cluster!r}; known: {sorted(info.cluster_addr_table)}")
        out = []
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            if data is not None and data.master_addr:
                out.append((name, data.master_addr))
        return out

    async def _topic_masters(self, topic: str) -> list[tuple[str, str]]:
        route = await self.topic_route(topic)
        return [
            (bd.broker_name, bd.master_addr)
            for bd in sorted(route.broker_datas, key=lambda b: b.broker_name)
            if bd.master_addr
        ]

    async def _topic_readers(self, topic: str) -> list[tuple[str, str]]:
        """(broker name, address) per broker of `topic`: its master, or a slave while the master is gone.

        Java's BrokerData.selectBrokerAddr, as mqadmin's queries and stats use it (for reads only).
        """
        route = await self.topic_route(topic)
        out = []
        for bd in sorted(route.broker_datas, key=lambda b: b.broker_name):
            addrs = {int(k): v for k, v in bd.broker_addrs.items()}
            if addrs:
                out.append((bd.broker_name, addrs.get(0) or addrs[min(addrs)]))
        return out

    # -- topics -------------------------------------------------------------------------------------------
    async def create_topic(
        self,
        topic: str,
        cluster: str | None = C.DEFAULT_CLUSTER,
        read_queues: int = 4,
        write_queues: int = 4,
        *,
        perm: int = 6,
        order: bool = False,
        broker_addr: str | None = None,
    ) -> list[str]:
        """Create or update `topic` on every master of `cluster` (or on `broker_addr`); their addresses."""
        problem = C.topic_name_problem(topic)
        if problem is not None:
            raise MQClientError(problem)
        inst = await self._inst()
        header = CreateTopicRequestHeader(
            topic=topic,
            default_topic=C.AUTO_CREATE_TOPIC_KEY_TOPIC,
            read_queue_nums=read_queues,
            write_queue_nums=write_queues,
            perm=perm,
            topic_filter_type="SINGLE_TAG",
            topic_sys_flag=0,
            order=order,
        )
        targets = [broker_addr] if broker_addr else [addr for _, addr in await self._masters(cluster)]
        if not targets:
            raise MQClientError(f"cluster {cluster!r} has no master broker")
        for addr in targets:
            await inst.api.invoke(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
        return targets

    async def delete_topic(self, topic: str, cluster: str | None = C.DEFAULT_CLUSTER) -> None:
        """Delete `topic` from the masters of `cluster` and from every name server."""
        inst = await self._inst()
        for _, addr in await self._masters(cluster):
            await inst.api.invoke(addr, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic))
        for ns in inst.config.namesrv_list():
            await inst.api.invoke(
                ns, RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic, cluster)
            )
        inst.route_table.pop(topic, None)

    async def topic_status(self, topic: str) -> dict[MessageQueue, TopicOffset]:
        """Per queue: min offset, max offset and the store time of the last message."""
        inst = await self._inst()
        out: dict[MessageQueue, TopicOffset] = {}
        for _, addr in await self._topic_readers(topic):
            resp = await inst.api.invoke(
                addr, RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic)
            )
            out.update(TopicStatsTable.decode(resp.body).offset_table)
        return dict(sorted(out.items()))

    # -- groups ----------------------------------------------------------------------------------------
    async def update_subscription_group(
        self,
        group: str,
        cluster: str | None = C.DEFAULT_CLUSTER,
        *,
        broker_addr: str | None = None,
        **fields: Any,
    ) -> list[str]:
        """Create or update a consumer group's settings (retry_max_times=..., consume_broadcast_enable=...)."""
        inst = await self._inst()
        cfg = SubscriptionGroupConfig(group_name=group)
        for name, value in fields.items():
            if not hasattr(cfg, name):
                raise MQClientError(f"unknown subscription group setting {name!r}")
            setattr(cfg, name, value)
        targets = [broker_addr] if broker_addr else [addr for _, addr in await self._masters(cluster)]
        for addr in targets:
            await inst.api.invoke(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, cfg.encode())
        return targets

    async def consumer_connections(self, group: str) -> ConsumerConnection:
        """The online members of a consumer group and their subscriptions (GET_CONSUMER_CONNECTION_LIST)."""
        inst = await self._inst()
        addr = await self._group_broker(group)
        resp = await inst.api.invoke(
            addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, GetConsumerConnectionListRequestHeader(group)
        )
        return ConsumerConnection.decode(resp.body)

    async def delete_subscription_group(
        self,
        group: str,
        cluster: str | None = C.DEFAULT_CLUSTER,
        *,
        broker_addr: str | None = None,
        remove_offset: bool = False,
    ) -> list[str]:
        """Delete a consumer group's settings on every master of `cluster` (or one broker); the brokers asked."""
        inst = await self._inst()
        targets = [broker_addr] if broker_addr else [addr for _, addr in await self._masters(cluster)]
        for addr in targets:
            await inst.api.invoke(
                addr,
                RequestCode.DELETE_SUBSCRIPTIONGROUP,
                DeleteSubscriptionGroupRequestHeader(group, remove_offset),
            )
        return targets

    async def producer_connections(self, group: str, topic: str) -> ProducerConnection:
        """The producers of `group` connected to the brokers of `topic` (mqadmin producerConnection)."""
        inst = await self._inst()
        merged = ProducerConnection()
        errors: list[Exception] = []
        for _, addr in await self._topic_readers(topic):
            try:
                resp = await inst.api.invoke(
                    addr,
                    RequestCode.GET_PRODUCER_CONNECTION_LIST,
                    GetProducerConnectionListRequestHeader(group),
                )
            except MQBrokerError as exc:  # a broker this group never sent to says "not exist"
                errors.append(exc)
                continue
            merged.connection_set.extend(ProducerConnection.decode(resp.body).connection_set)
        if not merged.connection_set and errors:
            raise errors[0]
        return merged

    async def consumer_running_info(
        self, group: str, client_id: str, *, jstack: bool = False
    ) -> ConsumerRunningInfo:
        """One consumer's own report (properties, subscriptions, queues, rates), asked through a broker."""
        inst = await self._inst()
        header = GetConsumerRunningInfoRequestHeader(group, client_id, jstack)
        resp = await inst.api.invoke(
            await self._group_broker(group), RequestCode.GET_CONSUMER_RUNNING_INFO, header
        )
        return ConsumerRunningInfo.decode(resp.body)

    async def consume_message_directly(
        self, group: str, client_id: str, msg_id: str
    ) -> ConsumeMessageDirectlyResult:
        """Have one consumer's listener consume the stored message `msg_id` (an offset message id) now."""
        inst = await self._inst()
        host, port, _ = parse_offset_msg_id(msg_id)
        header = ConsumeMessageDirectlyResultRequestHeader(group, client_id, msg_id, None)
        resp = await inst.api.invoke(f"{host}:{port}", RequestCode.CONSUME_MESSAGE_DIRECTLY, header)
        return ConsumeMessageDirectlyResult.decode(resp.body)

    async def _group_broker(self, group: str) -> str:
        for _, addr in await self._topic_masters(C.retry_topic(group)):
            return addr
        raise MQClientError(f"group {group} has no broker")

    async def consumer_progress(self, group: str, topic: str | None = None) -> list[QueueProgress]:
        """Per queue of the group's topics: broker offset, consumer offset and lag (GET_CONSUME_STATS)."""
        inst = await self._inst()
        try:
            masters = await self._topic_masters(C.retry_topic(group))
        except NoRouteError:
            masters = await self._masters(None)
        table: dict[MessageQueue, OffsetWrapper] = {}
        for _, addr in masters:
            resp = await inst.api.invoke(
                addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(group, topic)
            )
            table.update(ConsumeStats.decode(resp.body).offset_table)
        return [
            QueueProgress(mq, w.broker_offset, w.consumer_offset, w.last_timestamp)
            for mq, w in sorted(table.items())
            if not mq.topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX) or topic is not None
        ]

    async def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> ResetOffsets:
        """Move the group's offsets on `topic` to the messages stored at `timestamp_ms` (-1: the queues' ends).

        Online consumers are told to seek by their brokers; a broker without online consumers of the group
        gets the offsets written directly (see ResetOffsets.offline). Without `force`, a queue whose committed
        offset is already before the target keeps it. Raises MQBrokerError when a broker refuses (e.g. a
        group that has no offsets on `topic`, remark "consumer group <g> not exist").
        """
        inst = await self._inst()
        header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp_ms, is_force=force)
        result = ResetOffsets()
        for name, addr in await self._topic_masters(topic):
            try:
                resp = await inst.api.invoke(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
                result.update(ResetOffsetBody.decode(resp.body).offset_table if resp.body else {})
            except (RequestCodeNotSupportedError, ConsumerNotOnlineError) as exc:
                result.offline[name] = exc.remark or str(exc)
                result.update(await self._reset_by_hand(name, addr, group, topic, timestamp_ms, force))
        return result.sorted()

    async def _reset_by_hand(
        self, broker: str, addr: str, group: str, topic: str, timestamp_ms: int, force: bool
    ) -> dict[MessageQueue, int]:
        inst = await self._inst()
        route = await self.topic_route(topic)
        stats = await inst.api.invoke(
            addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(group, topic)
        )
        committed = {mq: w.consumer_offset for mq, w in ConsumeStats.decode(stats.body).offset_table.items()}
        out = {}
        for qd in route.queue_datas:
            if qd.broker_name != broker:
                continue
            for qid in range(qd.read_queue_nums):
                mq = MessageQueue(topic, broker, qid)
                if timestamp_ms == -1:
                    offset = await inst.api.get_max_offset(addr, mq)
                else:
                    offset = await inst.api.search_offset(addr, mq, timestamp_ms)
                current = committed.get(mq)
                if not force and current is not None and offset > current:
                    out[mq] = current  # resetOffsetConsumeOffset: without force only a move backwards
                    continue
                await inst.api.update_consumer_offset(addr, group, mq, offset, oneway=False)
                out[mq] = offset
        return out

    async def update_consumer_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        """Write the group's committed offset of one queue on its master (UPDATE_CONSUMER_OFFSET)."""
        inst = await self._inst()
        for name, addr in await self._topic_masters(mq.topic):
            if name == mq.broker_name:
                await inst.api.update_consumer_offset(addr, group, mq, offset, oneway=False)
                return
        raise MQClientError(f"no master of broker {mq.broker_name} serves topic {mq.topic}")

    async def consumer_status(
        self, group: str, topic: str, client_id: str | None = None
    ) -> dict[str, dict[MessageQueue, int]]:
        """Each online client of the group: the offsets it holds for `topic` (INVOKE_BROKER_TO_GET_CONSUMER_STATUS)."""
        inst = await self._inst()
        header = GetConsumerStatusRequestHeader(topic=topic, group=group, client_addr=client_id)
        out: dict[str, dict[MessageQueue, int]] = {}
        for _name, addr in await self._topic_masters(topic):
            # The broker waits up to 5 s for each client (Broker2Client#getConsumeStatus): wait longer than that.
            resp = await inst.api.invoke(
                addr, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header, timeout_ms=STATUS_TIMEOUT_MS
            )
            for client, table in GetConsumerStatusBody.decode(resp.body).consumer_table.items():
                out.setdefault(client, {}).update(table)
        return {client: dict(sorted(table.items())) for client, table in sorted(out.items())}

    # -- name servers --------------------------------------------------------------------------------------
    async def _each_namesrv(
        self, code: int, header: Any = None, body: bytes = b""
    ) -> dict[str, RemotingCommand]:
        inst = await self._inst()
        return {addr: await inst.api.invoke(addr, code, header, body) for addr in inst.config.namesrv_list()}

    async def wipe_write_perm(self, broker_name: str) -> dict[str, int]:
        """Take write permission off every topic of `broker_name` on each name server; topics changed per server."""
        answers = await self._each_namesrv(
            RequestCode.WIPE_WRITE_PERM_OF_BROKER, WipeWritePermOfBrokerRequestHeader(broker_name)
        )
        return {
            addr: WipeWritePermOfBrokerResponseHeader.from_ext_fields(r.ext_fields).wipe_topic_count
            for addr, r in answers.items()
        }

    async def add_write_perm(self, broker_name: str) -> dict[str, int]:
        """Give write permission back to every topic of `broker_name` on each name server."""
        answers = await self._each_namesrv(
            RequestCode.ADD_WRITE_PERM_OF_BROKER, AddWritePermOfBrokerRequestHeader(broker_name)
        )
        return {
            addr: AddWritePermOfBrokerResponseHeader.from_ext_fields(r.ext_fields).add_topic_count
            for addr, r in answers.items()
        }

    async def namesrv_config(self) -> dict[str, dict[str, str]]:
        """GET_NAMESRV_CONFIG of each name server: its settings by RocketMQ name."""
        answers = await self._each_namesrv(RequestCode.GET_NAMESRV_CONFIG)
        return {
            addr: dict(sorted(parse_properties(r.body.decode("utf-8")).items()))
            for addr, r in answers.items()
        }

    async def update_namesrv_config(self, settings: dict[str, str]) -> list[str]:
        """UPDATE_NAMESRV_CONFIG on each name server (RocketMQ names, string values); the servers changed."""
        body = "".join(f"{k}={v}\n" for k, v in settings.items()).encode("utf-8")
        return list(await self._each_namesrv(RequestCode.UPDATE_NAMESRV_CONFIG, None, body))

    async def put_kv_config(self, namespace: str, key: str, value: str) -> list[str]:
        """PUT_KV_CONFIG on each name server (e.g. namespace ORDER_TOPIC_CONFIG)."""
        return list(
            await self._each_namesrv(
                RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader(namespace, key, value)
            )
        )

    async def delete_kv_config(self, namespace: str, key: str) -> list[str]:
        """DELETE_KV_CONFIG on each name server."""
        return list(
            await self._each_namesrv(
                RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader(namespace, key)
            )
        )

    # -- groups across brokers --------------------------------------------------------------------------
    async def groups_with_offsets(self, broker_addr: str) -> list[str]:
        """The groups holding committed offsets on one broker (the keys of its GET_ALL_CONSUMER_OFFSET table)."""
        inst = await self._inst()
        resp = await inst.api.invoke(broker_addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        table = fastjson.loads(resp.body).get("offsetTable", {}) if resp.body else {}
        return sorted({key.split("@", 1)[1] for key in table if "@" in key})

    async def consumer_groups(self) -> list[str]:
        """The groups that consume in the cluster: those with a %RETRY% topic (mqadmin consumerProgress's way),
        and those holding offsets on some master (a group that was never online has no %RETRY% topic)."""
        prefix = C.RETRY_GROUP_TOPIC_PREFIX
        groups = {t[len(prefix) :] for t in await self.topic_list() if t.startswith(prefix)}
        for _name, addr in await self._masters(None):
            groups.update(await self.groups_with_offsets(addr))
        return sorted(groups)

    async def groups_consuming(self, topic: str) -> list[str]:
        """The groups that subscribe `topic` now or hold offsets of it (QUERY_TOPIC_CONSUME_BY_WHO on its masters)."""
        inst = await self._inst()
        groups: set[str] = set()
        for _name, addr in await self._topic_masters(topic):
            resp = await inst.api.invoke(
                addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, QueryTopicConsumeByWhoRequestHeader(topic)
            )
            groups.update(GroupList.decode(resp.body).group_list if resp.body else [])
        return sorted(groups)

    async def consumer_progress_on(self, broker_addr: str, group: str) -> list[QueueProgress]:
        """consumer_progress of one broker only (GET_CONSUME_STATS there)."""
        inst = await self._inst()
        resp = await inst.api.invoke(
            broker_addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(group, None)
        )
        table = ConsumeStats.decode(resp.body).offset_table
        return [
            QueueProgress(mq, w.broker_offset, w.consumer_offset, w.last_timestamp)
            for mq, w in sorted(table.items())
        ]

    async def clone_group_offset(
        self, src_group: str, dest_group: str, topic: str
    ) -> dict[MessageQueue, int]:
        """Give `dest_group` the committed offsets `src_group` has on `topic`; the offsets written."""
        inst = await self._inst()
        out: dict[MessageQueue, int] = {}
        for _name, addr in await self._topic_masters(topic):
            resp = await inst.api.invoke(
                addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(src_group, topic)
            )
            for mq, wrapper in sorted(ConsumeStats.decode(resp.body).offset_table.items()):
                await inst.api.update_consumer_offset(
                    addr, dest_group, mq, wrapper.consumer_offset, oneway=False
                )
                out[mq] = wrapper.consumer_offset
        return out

    async def _queue_master(self, mq: MessageQueue) -> str:
        # From the route, not the instance's tables: an admin has no topic "in use", so the instance's
        # periodic clean-up would drop those and close the connection under a running command.
        route = await self.topic_route(mq.topic)
        addr = next(
            (
                bd.broker_addrs.get(C.MASTER_ID)
                for bd in route.broker_datas
                if bd.broker_name == mq.broker_name
            ),
            None,
        )
        if addr is None:
            raise MQClientError(f"no master of broker {mq.broker_name} for topic {mq.topic}")
        return addr

    async def queue_offset_range(
        self, mq: MessageQueue, begin_ms: int | None = None, end_ms: int | None = None
    ) -> tuple[int, int]:
        """[start, end) offsets of `mq`: the whole queue, or the messages stored between the two times."""
        inst, addr = await self._inst(), await self._queue_master(mq)
        start = (
            await inst.api.search_offset(addr, mq, begin_ms)
            if begin_ms is not None
            else await inst.api.get_min_offset(addr, mq)
        )
        end = (
            await inst.api.search_offset(addr, mq, end_ms)
            if end_ms is not None
            else await inst.api.get_max_offset(addr, mq)
        )
        return start, max(start, end)

    async def pull_messages(
        self, mq: MessageQueue, offset: int, max_nums: int = 32, group: str = C.TOOLS_CONSUMER_GROUP
    ) -> PullResult:
        """One PULL_MESSAGE of `mq` from `offset` (no subscription filter, nothing committed)."""
        inst, addr = await self._inst(), await self._queue_master(mq)
        header = pull_all_header(group, mq, offset, max_nums)
        return await inst.api.pull_message(addr, header, inst.config.mq_client_api_timeout_ms)

    # -- messages -----------------------------------------------------------------------------------------
    async def query_message_by_id(self, msg_id: str) -> MessageExt:
        """The message with this offset message id (the broker address is inside the id)."""
        try:
            ip, port, offset = parse_offset_msg_id(msg_id)
        except ValueError as exc:
            raise MQClientError(f"{msg_id!r} is not an offset message id: {exc}") from None
        inst = await self._inst()
        return await inst.api.view_message(f"{ip}:{port}", offset)

    async def query_message_by_key(
        self, topic: str, key: str, max_num: int = 32, begin_ms: int = 0, end_ms: int | None = None
    ) -> list[MessageExt]:
        """Messages of `topic` whose KEYS hold `key`, from every master of the topic."""
        found = await self._query(topic, key, max_num, begin_ms, end_ms, unique=False)
        return [m for m in found if key in m.keys][:max_num]

    async def query_message_by_unique_key(
        self, topic: str, uniq_key: str, max_num: int = 32
    ) -> list[MessageExt]:
        """Messages of `topic` with this client (UNIQ_KEY) message id."""
        found = await self._query(topic, uniq_key, max_num, 0, None, unique=True)
        return [m for m in found if m.uniq_key == uniq_key]

    async def _query(
        self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int | None, *, unique: bool
    ) -> list[MessageExt]:
        inst = await self._inst()
        end = end_ms if end_ms is not None else int(time.time() * 1000) + 60_000
        out: list[MessageExt] = []
        for _, addr in await self._topic_readers(topic):
            out.extend(
                await inst.api.query_message(addr, topic, key, max_num, begin_ms, end, unique_key=unique)
            )
        return sorted(out, key=lambda m: m.store_timestamp)

    async def broker_status(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO: the broker's runtime figures."""
        inst = await self._inst()
        resp = await inst.api.invoke(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        return dict(sorted(KVTable.from_json(fastjson.loads(resp.body)).table.items())) if resp.body else {}

    async def subscription_groups(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG: the consumer groups a broker knows, with their settings."""
        inst = await self._inst()
        resp = await inst.api.invoke(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        if not resp.body:
            return {}
        return dict(sorted(SubscriptionGroupWrapper.decode(resp.body).subscription_group_table.items()))

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_CONFIG: every broker and store setting, by its RocketMQ name."""
        inst = await self._inst()
        resp = await inst.api.invoke(broker_addr, RequestCode.GET_BROKER_CONFIG)
        return dict(sorted(parse_properties(resp.body.decode("utf-8")).items()))

    async def update_broker_config(self, broker_addr: str, settings: dict[str, str]) -> None:
        """UPDATE_BROKER_CONFIG: change settings of a running broker (RocketMQ names, string values)."""
        inst = await self._inst()
        body = "".join(f"{k}={v}\n" for k, v in settings.items()).encode("utf-8")
        await inst.api.invoke(broker_addr, RequestCode.UPDATE_BROKER_CONFIG, None, body)
