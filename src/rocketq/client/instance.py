"""ClientInstance: the connections, route cache and timers shared by a process's producers and consumers.

Port of org.apache.rocketmq.client.impl.factory.MQClientInstance and MQClientManager (4.9.8). One
instance per (event loop, name server list, instance name): routes are refreshed every 30 s and on
demand, every broker gets a heartbeat (producer and consumer data) every 30 s and whenever a
subscription changes, brokers no route mentions any more are dropped, consumers rebalance every 20 s
(at once on NOTIFY_CONSUMER_IDS_CHANGED) and persist offsets every 5 s.
Deviations: the client id is `ip@pid#<random>` (Java: `ip@pid#nanoTime`), unique per process even in
containers where every process is pid 1; and a second consumer of the same group in one process gets
its own instance (so its own client id) instead of Java's "group already created" error, which is
what lets several consumers of one group share a process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import ssl
from collections.abc import Mapping
from typing import Protocol

from rocketq.client.api import MQClientAPI
from rocketq.client.config import ClientConfig
from rocketq.client.errors import ClientStateError
from rocketq.client.remote_requests import ClientRemotingProcessor
from rocketq.client.route import (
    TopicPublishInfo,
    broker_addr_table,
    route_changed,
    to_publish_info,
    to_subscribe_queues,
)
from rocketq.common import constants as C
from rocketq.common.errors import ClientError
from rocketq.common.message import MessageExt, MessageQueue
from rocketq.common.service import PeriodicService, ServiceState, spawn, start_all, stop_all
from rocketq.common.tls import client_context
from rocketq.remoting.errors import BrokerResponseError, RemotingError, TopicNotExistError
from rocketq.remoting.protocol.bodies.consumer import ConsumerRunningInfo
from rocketq.remoting.protocol.bodies.heartbeat import ConsumerData, HeartbeatData, ProducerData
from rocketq.remoting.protocol.bodies.route import QueueData, TopicRouteData
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.transport.acl_hook import AclClientRPCHook
from rocketq.remoting.transport.client import RemotingClient

log = logging.getLogger("rocketq.client.instance")

# Fixed per process: two processes with the same pid (containers) still differ.
PROCESS_TAG = f"{random.getrandbits(40):010x}"
SERVER_REQUEST_CODES = (
    RequestCode.CHECK_TRANSACTION_STATE,
    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
    RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
    RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
    RequestCode.GET_CONSUMER_RUNNING_INFO,
    RequestCode.CONSUME_MESSAGE_DIRECTLY,
    RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT,
)


class ProducerInner(Protocol):
    """What the instance needs of a producer (Java MQProducerInner)."""

    group: str

    def publish_topics(self) -> set[str]: ...

    def update_publish_info(self, topic: str, info: TopicPublishInfo) -> None: ...

    def check_transaction_state(self, addr: str, msg: MessageExt, header: Mapping[str, str]) -> None: ...


class ConsumerInner(Protocol):
    """What the instance needs of a consumer (Java MQConsumerInner)."""

    group: str

    def consumer_data(self) -> ConsumerData: ...

    def subscription_topics(self) -> set[str]: ...

    def update_subscribe_info(self, topic: str, mqs: set[MessageQueue]) -> None: ...

    async def do_rebalance(self) -> None: ...

    async def persist_consumer_offset(self) -> None: ...

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None: ...

    def running_info(self) -> ConsumerRunningInfo: ...

    def offset_table(self, topic: str) -> dict[MessageQueue, int]: ...

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> bytes: ...


class ClientInstance:
    """Shared client state of one (loop, name server list, instance name); see the module docstring."""

    def __init__(self, config: ClientConfig, index: int = 0) -> None:
        self.config = config
        self.index = index
        base = config.instance_name if config.instance_name != "DEFAULT" else f"{os.getpid()}#{PROCESS_TAG}"
        suffix = f"#{index}" if index else ""
        unit = f"@{config.unit_name}" if config.unit_name else ""
        self.client_id = f"{config.client_ip}@{base}{suffix}{unit}"
        # Stable across restarts (no pid, no random part): names local offset files.
        self.stable_name = f"{config.client_ip}@{config.instance_name}{suffix}"
        self.remoting = RemotingClient(ssl_context=_ssl_context(config))
        self.remoting.negotiate_msgpack = config.header_codec == "auto"
        if config.access_key or config.secret_key:
            if not (config.access_key and config.secret_key):
                raise ClientError("access_key and secret_key go together: give both or neither")
            self.remoting.register_rpc_hook(AclClientRPCHook(config.access_key, config.secret_key))
        self.api = MQClientAPI(
            self.remoting, header_codec=config.header_codec, timeout_ms=config.mq_client_api_timeout_ms
        )
        self.producers: dict[str, ProducerInner] = {}
        self.consumers: dict[str, ConsumerInner] = {}
        self.admin_users = 0
        self.route_table: dict[str, TopicRouteData] = {}
        self.broker_addrs: dict[str, dict[int, str]] = {}
        self.broker_versions: dict[str, int] = {}
        self._namesrv_index = random.randrange(max(1, len(config.namesrv_list())))
        self._route_updates: dict[tuple[str, str | None], asyncio.Future[bool]] = {}
        self._heartbeat_lock = asyncio.Lock()
        self._heartbeat_pending = False
        self._services: list[PeriodicService] = []
        self.rebalance_service = PeriodicService("rebalance", _ms(20_000), self._rebalance_all)
        self.state = ServiceState.CREATE_JUST
        processor = ClientRemotingProcessor(self)
        for code in SERVER_REQUEST_CODES:
            self.remoting.register_processor(code, processor)

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        if self.state is ServiceState.RUNNING:
            return
        if self.state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"client instance {self.client_id} is already shut down")
        if not self.config.namesrv_list():
            raise ClientStateError("no name server address: pass namesrv_addr=... or set NAMESRV_ADDR")
        self.state = ServiceState.RUNNING
        cfg = self.config
        self._services = [
            PeriodicService(
                "route-refresh", _ms(cfg.poll_name_server_interval_ms), self.refresh_all_routes, _ms(10)
            ),
            PeriodicService(
                "heartbeat", _ms(cfg.heartbeat_broker_interval_ms), self._heartbeat_round, _ms(1_000)
            ),
            PeriodicService(
                "persist-offsets",
                _ms(cfg.persist_consumer_offset_interval_ms),
                self.persist_all_offsets,
                _ms(10_000),
            ),
            self.rebalance_service,
        ]
        await start_all(self._services)
        log.info("client instance %s started (namesrv %s)", self.client_id, cfg.namesrv_addr)

    async def shutdown(self) -> None:
        if self.closed:
            return
        self.state = ServiceState.STOPPING
        _REGISTRY.discard(self)
        self.producers.pop(C.CLIENT_INNER_PRODUCER_GROUP, None)  # rocketq.client.producer.inner's
        await stop_all(self._services)
        await self.remoting.shutdown()
        self.state = ServiceState.SHUTDOWN_ALREADY
        log.info("client instance %s shut down", self.client_id)

    @property
    def closed(self) -> bool:
        """shutdown() has begun: the instance is not handed to new producers or consumers."""
        return self.state in (ServiceState.STOPPING, ServiceState.SHUTDOWN_ALREADY)

    def set_rebalance_interval(self, interval_ms: int) -> None:
        self.rebalance_service.interval_s = min(self.rebalance_service.interval_s, _ms(interval_ms))

    # -- registration ---------------------------------------------------------------------------------
    def register_producer(self, producer: ProducerInner) -> None:
        if producer.group in self.producers:
            raise ClientStateError(
                f"producer group {producer.group!r} already runs in client {self.client_id}"
            )
        self.producers[producer.group] = producer

    def register_consumer(self, consumer: ConsumerInner) -> None:
        if consumer.group in self.consumers:
            raise ClientStateError(
                f"consumer group {consumer.group!r} already runs in client {self.client_id}"
            )
        self.consumers[consumer.group] = consumer

    async def unregister_producer(self, group: str) -> None:
        if self.producers.pop(group, None) is not None:
            await self._unregister_client(producer_group=group)
        await self._release_if_unused()

    async def unregister_consumer(self, group: str) -> None:
        if self.consumers.pop(group, None) is not None:
            await self._unregister_client(consumer_group=group)
        await self._release_if_unused()

    async def release_admin(self) -> None:
        self.admin_users = max(0, self.admin_users - 1)
        await self._release_if_unused()

    async def _release_if_unused(self) -> None:
        users = set(self.producers) - {C.CLIENT_INNER_PRODUCER_GROUP}
        if not users and not self.consumers and self.admin_users == 0:
            await self.shutdown()

    async def _unregister_client(
        self, producer_group: str | None = None, consumer_group: str | None = None
    ) -> None:
        # A snapshot: a route refresh or offline-broker sweep may change broker_addrs (and the inner
        # address dicts) while the requests are out.
        targets = [
            (name, addr) for name, addrs in list(self.broker_addrs.items()) for addr in list(addrs.values())
        ]
        results = await asyncio.gather(
            *(
                self.api.unregister_client(addr, self.client_id, producer_group, consumer_group)
                for _, addr in targets
            ),
            return_exceptions=True,
        )
        for (name, addr), result in zip(targets, results, strict=True):
            if isinstance(result, (RemotingError, BrokerResponseError)):
                log.info(
                    "unregister %s from %s (%s) failed: %s",
                    producer_group or consumer_group,
                    name,
                    addr,
                    result,
                )
            elif isinstance(result, BaseException):
                raise result

    # -- name server ------------------------------------------------------------------------------------
    async def fetch_route(self, topic: str, timeout_ms: int | None = None) -> TopicRouteData | None:
        """The route of `topic` from a name server (trying each in turn); None when none knows it."""
        servers = self.config.namesrv_list()
        last: Exception | None = None
        for i in range(len(servers)):
            addr = servers[(self._namesrv_index + i) % len(servers)]
            try:
                route = await self.api.get_topic_route(addr, topic, timeout_ms)
            except TopicNotExistError:
                return None
            except RemotingError as exc:
                last = exc
                continue
            self._namesrv_index = (self._namesrv_index + i) % len(servers)
            return route
        raise last if last is not None else ClientStateError("no name server configured")

    def namesrv_addr(self) -> str:
        servers = self.config.namesrv_list()
        return servers[self._namesrv_index % len(servers)]

    async def update_topic_route(
        self, topic: str, *, default_topic: str | None = None, default_queue_nums: int = 4
    ) -> bool:
        """Refresh one topic's route (from `default_topic`'s route when given); True when it changed.

        Concurrent calls for the same topic share one look-up (hundreds of sends may miss a route at
        the same moment; they must not queue one name-server round trip each).
        """
        key = (topic, default_topic)
        pending = self._route_updates.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        pending = asyncio.get_running_loop().create_future()
        self._route_updates[key] = pending
        changed = False
        try:
            changed = await self._update_topic_route(topic, default_topic, default_queue_nums)
            return changed
        finally:
            del self._route_updates[key]
            pending.set_result(changed)

    async def _update_topic_route(
        self, topic: str, default_topic: str | None, default_queue_nums: int
    ) -> bool:
        try:
            route = await self.fetch_route(default_topic or topic)
        except RemotingError as exc:
            log.warning("route of %s: name servers unreachable: %s", topic, exc)
            return False
        if route is None:
            return False
        if default_topic is not None:
            route = _clamped(route, default_queue_nums)
        changed = route_changed(self.route_table.get(topic), route)
        # Applied even when unchanged: a producer or consumer may have joined since.
        self._apply_route(topic, route)
        return changed

    def _apply_route(self, topic: str, route: TopicRouteData) -> None:
        self.route_table[topic] = route
        known = {addr for addrs in self.broker_addrs.values() for addr in addrs.values()}
        discovered = False
        for name, addrs in broker_addr_table(route).items():
            self.broker_addrs[name] = addrs
            discovered |= not set(addrs.values()) <= known
        if discovered and self.consumers and self.state is ServiceState.RUNNING:
            # A broker this client's consumers have not told about their subscriptions would answer
            # their pulls SUBSCRIPTION_NOT_EXIST until the next 30 s heartbeat.
            self.heartbeat_soon()
        info = to_publish_info(topic, route)
        for producer in list(self.producers.values()):
            producer.update_publish_info(topic, info)
        mqs = to_subscribe_queues(topic, route)
        for consumer in list(self.consumers.values()):
            if topic in consumer.subscription_topics():
                consumer.update_subscribe_info(topic, mqs)

    def topics_in_use(self) -> set[str]:
        topics: set[str] = set()
        for producer in self.producers.values():
            topics |= producer.publish_topics()
        for consumer in self.consumers.values():
            topics |= consumer.subscription_topics()
        return topics

    async def refresh_all_routes(self) -> None:
        for topic in sorted(self.topics_in_use()):
            await self.update_topic_route(topic)
        self.clean_offline_brokers()

    def clean_offline_brokers(self) -> None:
        """Forget brokers (and close connections to addresses) no route in use mentions."""
        in_use = self.topics_in_use()
        for topic in list(self.route_table):
            if topic not in in_use:
                del self.route_table[topic]
        live: dict[str, set[str]] = {}
        for route in self.route_table.values():
            for name, addrs in broker_addr_table(route).items():
                live.setdefault(name, set()).update(addrs.values())
        for name, addrs in list(self.broker_addrs.items()):
            for broker_id, addr in list(addrs.items()):
                if addr not in live.get(name, set()):
                    del addrs[broker_id]
                    self.remoting.close_connection(addr)
                    log.info("broker %s (%s) is offline; dropped", name, addr)
            if not addrs:
                del self.broker_addrs[name]

    # -- broker addresses -------------------------------------------------------------------------------
    def find_broker_addr_in_publish(self, broker_name: str) -> str | None:
        addrs = self.broker_addrs.get(broker_name)
        return addrs.get(C.MASTER_ID) if addrs else None

    def find_broker_addr_in_subscribe(
        self, broker_name: str, broker_id: int = C.MASTER_ID, only_this: bool = False
    ) -> str | None:
        """Java findBrokerAddressInSubscribe: the broker id asked for (a slave's neighbour id + 1 when that
        slave is gone), else, unless `only_this`, any node of the broker name: a slave when the master is
        gone from the route, so consumers of a dead master read from its slave."""
        addrs = self.broker_addrs.get(broker_name)
        if not addrs:
            return None
        if broker_id in addrs:
            return addrs[broker_id]
        if broker_id != C.MASTER_ID and broker_id + 1 in addrs:
            return addrs[broker_id + 1]
        if only_this:
            return None
        return addrs[min(addrs)]

    def any_broker_addr(self) -> str | None:
        for addrs in self.broker_addrs.values():
            if addrs:
                return addrs.get(C.MASTER_ID) or addrs[min(addrs)]
        return None

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str]:
        """Client ids of the group's members, asked of a broker hosting `topic` (random, as Java)."""
        route = self.route_table.get(topic)
        names = [bd.broker_name for bd in route.broker_datas] if route else list(self.broker_addrs)
        random.shuffle(names)
        last: Exception | None = None
        for name in names:
            addr = self.find_broker_addr_in_subscribe(name)
            if addr is None:
                continue
            try:
                return await self.api.get_consumer_id_list(addr, group)
            except (RemotingError, BrokerResponseError) as exc:
                last = exc
        if last is not None:
            log.info("consumer ids of %s: %s", group, last)
        return []

    # -- offsets (OffsetBackend) ---------------------------------------------------------------------------
    async def _offset_broker(self, mq: MessageQueue) -> str:
        addr = self.find_broker_addr_in_subscribe(mq.broker_name)
        if addr is None:
            await self.update_topic_route(mq.topic)
            addr = self.find_broker_addr_in_subscribe(mq.broker_name)
        if addr is None:
            raise ClientStateError(f"broker {mq.broker_name} is not in any route")
        return addr

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int | None:
        return await self.api.query_consumer_offset(await self._offset_broker(mq), group, mq)

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, *, oneway: bool = True
    ) -> None:
        await self.api.update_consumer_offset(await self._offset_broker(mq), group, mq, offset, oneway=oneway)

    async def max_offset(self, mq: MessageQueue) -> int:
        return await self.api.get_max_offset(await self._offset_broker(mq), mq)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self.api.get_min_offset(await self._offset_broker(mq), mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self.api.search_offset(await self._offset_broker(mq), mq, timestamp_ms)

    # -- heartbeats, rebalance, offsets -----------------------------------------------------------------
    def heartbeat_data(self) -> HeartbeatData:
        producers = [ProducerData(group) for group in sorted(self.producers)]
        if producers and C.CLIENT_INNER_PRODUCER_GROUP not in self.producers:
            producers.append(ProducerData(C.CLIENT_INNER_PRODUCER_GROUP))
        consumers = [c.consumer_data() for _, c in sorted(self.consumers.items())]
        return HeartbeatData(self.client_id, producers, consumers)

    async def send_heartbeat_to_all_brokers(self) -> None:
        """HEART_BEAT to every known broker (masters only when no consumer runs here)."""
        async with self._heartbeat_lock:
            data = self.heartbeat_data()
            if not data.producer_data_set and not data.consumer_data_set:
                return
            targets = [
                (name, addr)
                for name, addrs in sorted(self.broker_addrs.items())
                for broker_id, addr in sorted(addrs.items())
                if broker_id == C.MASTER_ID or data.consumer_data_set
            ]
            results = await asyncio.gather(
                *(self.api.send_heartbeat(addr, data) for _, addr in targets), return_exceptions=True
            )
            for (name, addr), result in zip(targets, results, strict=True):
                if isinstance(result, BaseException):
                    log.info("heartbeat to %s (%s) failed: %s", name, addr, result)
                else:
                    self.broker_versions[addr] = result

    def heartbeat_soon(self) -> None:
        """A heartbeat to every broker in the background (at most one pending at a time)."""
        if self._heartbeat_pending or self.closed:
            return
        self._heartbeat_pending = True

        async def beat() -> None:
            try:
                await self.send_heartbeat_to_all_brokers()
            finally:
                self._heartbeat_pending = False

        spawn(f"heartbeat-{self.client_id}", beat())

    async def _heartbeat_round(self) -> None:
        self.clean_offline_brokers()
        await self.send_heartbeat_to_all_brokers()

    def rebalance_immediately(self) -> None:
        self.rebalance_service.wakeup()

    async def _rebalance_all(self) -> None:
        for consumer in list(self.consumers.values()):
            try:
                await consumer.do_rebalance()
            except Exception:
                log.exception("rebalance of %s failed", consumer.group)

    async def persist_all_offsets(self) -> None:
        for consumer in list(self.consumers.values()):
            try:
                await consumer.persist_consumer_offset()
            except Exception:
                log.exception("persisting offsets of %s failed", consumer.group)


def _ms(ms: int) -> float:
    return ms / 1000.0


def _clamped(route: TopicRouteData, queue_nums: int) -> TopicRouteData:
    """A copy of the template topic's route with queue counts capped (Java isDefault branch)."""
    qds = [
        QueueData(
            q.broker_name,
            min(queue_nums, q.read_queue_nums),
            min(queue_nums, q.read_queue_nums),
            q.perm,
            q.topic_sys_flag,
        )
        for q in route.queue_datas
    ]
    return TopicRouteData(
        qds, [b.copy() for b in route.broker_datas], route.order_topic_conf, dict(route.filter_server_table)
    )


def _ssl_context(config: ClientConfig) -> ssl.SSLContext | None:
    if not config.use_tls:
        return None
    try:
        return client_context(config.tls_ca_file, config.tls_cert_file, config.tls_key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ClientError(f"use_tls: the CA / certificate / key files cannot be used: {exc}") from None


# -- registry (Java MQClientManager) -------------------------------------------------------------------
class _Registry:
    def __init__(self) -> None:
        self._instances: dict[tuple[object, ...], list[ClientInstance]] = {}

    def acquire(
        self, config: ClientConfig, *, producer_group: str | None = None, consumer_group: str | None = None
    ) -> ClientInstance:
        """The shared instance for this loop and config where the group is free (a new one if none)."""
        loop_id = id(asyncio.get_running_loop())
        key = (loop_id, config.namesrv_addr, config.instance_name, *config.security_key())
        instances = [i for i in self._instances.get(key, []) if not i.closed]
        for inst in instances:
            if producer_group is not None and producer_group in inst.producers:
                continue
            if consumer_group is not None and consumer_group in inst.consumers:
                continue
            return inst
        used = {i.index for i in instances}
        index = next(n for n in range(len(instances) + 1) if n not in used)
        inst = ClientInstance(config, index)
        instances.append(inst)
        self._instances[key] = instances
        return inst

    def discard(self, inst: ClientInstance) -> None:
        for key, instances in list(self._instances.items()):
            if inst in instances:
                instances.remove(inst)
                if not instances:
                    del self._instances[key]

    def all(self) -> list[ClientInstance]:
        return [i for instances in self._instances.values() for i in instances]


_REGISTRY = _Registry()


def acquire_instance(
    config: ClientConfig, *, producer_group: str | None = None, consumer_group: str | None = None
) -> ClientInstance:
    return _REGISTRY.acquire(config, producer_group=producer_group, consumer_group=consumer_group)
