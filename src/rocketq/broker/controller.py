"""BrokerController: builds the broker's parts, starts them in order and stops them in reverse.

Port of org.apache.rocketmq.broker.BrokerController (4.9.8), wiring only: the store, the managers, the
processors (through processors/registry.py), the long-polling hold service, client housekeeping, the
NameServer registration, the periodic services, and the delay / timer / POP services
(message_lifecycle.py, started after the store and stopped before it). Start order: load the
persisted tables, open the
store, listen, start the services, register with every NameServer (then every registerNameServerPeriod,
first 10 s after start). Stop order: stop the timers, answer the held pulls, close the server (running
requests finish), shut the store (flush), unregister from the NameServers, persist offsets and configs.
Registrations asked for by topic creation are coalesced: at most one runs, and one more follows if a
change arrived meanwhile. Replication (rocketq.store.ha): a master opens haListenPort once it listens
and registers that port as its haServerAddr; a slave starts its HA client, follows the master named by
each registration answer (unless haMasterAddress is set) and copies the master's tables every 10 s
(slave_sync.py). Both stop after the server and before the store.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from rocketq.broker.clients import ConsumerManager, ProducerManager
from rocketq.broker.config import BrokerConfig
from rocketq.broker.context import BrokerContext
from rocketq.broker.housekeeping import Broker2Client, ClientHousekeepingService
from rocketq.broker.long_polling import PullRequestHoldService
from rocketq.broker.message_lifecycle import MessageLifecycle
from rocketq.broker.metrics import BrokerMetrics
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.outer_api import BrokerIdentity, BrokerOuterAPI
from rocketq.broker.processors.admin.runtime import RuntimeAdminProcessor
from rocketq.broker.processors.registry import FAST_FAILURE_KEYS, apply_fast_failure, build_registrations
from rocketq.broker.rebalance_lock import RebalanceLockManager
from rocketq.broker.slave_sync import FIRST_SYNC_DELAY_S, SYNC_INTERVAL_S, SlaveSynchronize
from rocketq.broker.stats.publisher import BrokerStatsService
from rocketq.broker.subscription_group import SubscriptionGroupManager
from rocketq.broker.topic_config import TopicConfigManager
from rocketq.broker.transaction.runtime import Transactions
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.constants import PermName
from rocketq.common.errors import RocketQError
from rocketq.common.service import PeriodicService, ServiceState, spawn
from rocketq.remoting.metrics import MetricsExporterError, RpcLatency
from rocketq.remoting.protocol.bodies.register import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from rocketq.remoting.security_config import DaemonSecurity
from rocketq.remoting.transport import ClientConfig, RemotingClient, RemotingServer, ServerConfig
from rocketq.store.config import MessageStoreConfig
from rocketq.store.delay import DelayLevels
from rocketq.store.ha.master import HAService
from rocketq.store.ha.slave import HAClient
from rocketq.store.message_store import MessageStore
from rocketq.store.protocols import MessageStoreAPI

log = logging.getLogger("rocketq.broker")

FIRST_REGISTER_DELAY_S = 10.0


class BrokerStartError(RocketQError):
    """The broker cannot start (a corrupt config file, an unusable store, a port in use)."""


class BrokerController:
    def __init__(
        self,
        broker_config: BrokerConfig,
        store_config: MessageStoreConfig,
        clock: Clock = SYSTEM_CLOCK,
        store: MessageStoreAPI | None = None,
    ) -> None:
        self.broker_config = cfg = broker_config
        self.store_config = store_config
        self.clock = clock
        self.root = Path(store_config.store_path_root_dir).expanduser()
        config_dir = self.root / "config"
        if store is None:
            store = MessageStore(store_config, clock)
        self.store: MessageStoreAPI = store
        self.topic_config_manager = TopicConfigManager(cfg, config_dir, clock)
        self.subscription_group_manager = SubscriptionGroupManager(cfg, config_dir, clock)
        self.consumer_offset_manager = ConsumerOffsetManager(str(config_dir))
        self.producer_manager = ProducerManager(clock, cfg.client_channel_expired_timeout_ms)
        self.consumer_manager = ConsumerManager(None, clock, cfg.client_channel_expired_timeout_ms)
        self.ctx = BrokerContext(
            broker_config=cfg,
            store_config=store_config,
            store=store,
            topic_config_manager=self.topic_config_manager,
            subscription_group_manager=self.subscription_group_manager,
            consumer_offset_manager=self.consumer_offset_manager,
            consumer_manager=self.consumer_manager,
            producer_manager=self.producer_manager,
            rebalance_lock_manager=RebalanceLockManager(cfg.rebalance_lock_max_live_time_ms, clock),
            delay_levels=DelayLevels(store_config.message_delay_level),
            clock=clock,
        )
        # ACL and TLS (docs/security.md): every request code is verified, as Java's broker does.
        self.security = DaemonSecurity(cfg)
        self.ctx.acl_config = self.security.acl
        self.server = RemotingServer(
            ServerConfig.model_validate(
                {
                    "listen_port": cfg.listen_port,
                    "bind_address": cfg.bind_address or cfg.broker_ip1,
                    "server_channel_max_idle_time_s": cfg.server_channel_max_idle_time_s,
                    **cfg.limit_values(),
                }
            ),
            self.security.server_tls,
        )
        self.security.install_server(self.server)
        registrations, self.processors = build_registrations(self.ctx)
        # With metrics on, the dispatcher times every request for rocketmq_rpc_latency; off, it reads no clock.
        rpc = RpcLatency() if cfg.metrics_enabled else None
        self.server.time_requests(rpc)
        for reg in registrations:
            self.server.register_processor(reg.code, reg.processor, reg.executor)
        # GET_BROKER_RUNTIME_INFO's send/pull/queryThreadPoolQueueSize: what waits in those executors' queues.
        runtime = self.processors.get("admin-runtime")
        if isinstance(runtime, RuntimeAdminProcessor):
            executors = {reg.executor.name: reg.executor for reg in registrations}
            for family in ("send", "pull", "query"):
                if family in executors:
                    runtime.queue_sizes[family] = lambda e=executors[family]: e.queued
        self.hold_service = PullRequestHoldService(
            store.get_max_offset_in_queue,
            self.processors["pull"].replay,  # type: ignore[attr-defined]
            clock,
        )
        self.ctx.pull_hold_service = self.hold_service
        self.lifecycle = MessageLifecycle(self.ctx, self.processors.get("pop"))
        self.transactions = Transactions(self.ctx, self.server.invoke_oneway)
        self.broker2client = Broker2Client(self.server, cfg.notify_consumer_ids_changed_enable)
        self.consumer_manager.on_consumer_ids_changed = self.broker2client.notify_consumer_ids_changed
        self.ctx.call_client = self.broker2client.call_client
        self.ctx.tell_client = self.broker2client.tell_client
        self.housekeeping = ClientHousekeepingService(
            self.producer_manager, self.consumer_manager, self.subscription_group_manager
        )
        self.server.add_connection_listener(self.housekeeping)
        self.client = RemotingClient(ClientConfig.model_validate({}))
        self.security.install_client(self.client)  # registration and slave sync: TLS and signature
        self.outer_api = BrokerOuterAPI(self.client, cfg.namesrv_addr_list)
        # Replication (Java: the store's HAService, BrokerController.handleSlaveSynchronize): a master
        # serves its slaves; a slave follows its master's commit log and copies its tables.
        self.is_slave = store_config.is_slave
        self.ha_service: HAService | None = None
        self.ha_client: HAClient | None = None
        self.slave_sync: SlaveSynchronize | None = None
        ha_master = store_config.ha_master_address
        self._ha_master_from_namesrv = not (ha_master and len(ha_master) >= 6)  # Java's check
        if self.is_slave:
            self.slave_sync = SlaveSynchronize(self.ctx, self.client)
        self._services = self._build_services()
        self.stats_service = BrokerStatsService(self.ctx)  # sets ctx.stats, the counters the processors feed
        self.metrics = BrokerMetrics(self.ctx, self.stats_service, self.server, rpc) if rpc else None
        self.ctx.metrics = self.metrics
        self._register_task: asyncio.Task[None] | None = None
        self._register_again = False
        self.ctx.register_broker_all = self.request_register
        self.topic_config_manager.on_topics_changed = self.request_register
        self.ctx.register_increment = self.register_increment
        self.ctx.on_broker_config_changed = self._on_broker_config_changed
        self.state = ServiceState.CREATE_JUST
        self._store_open = False

    def _build_services(self) -> dict[str, PeriodicService]:
        cfg = self.broker_config
        hold_check_ms = (
            cfg.long_polling_check_interval_ms if cfg.long_polling_enable else cfg.short_polling_time_ms
        )
        persist = PeriodicService(
            "broker-persist", cfg.flush_consumer_offset_interval_ms / 1000, self.persist_async
        )
        for manager in self._managers():
            manager.set_change_listener(persist.wakeup)
        return (
            {
                "persist": persist,
                "client-scan": PeriodicService(
                    "client-scan",
                    cfg.client_scan_interval_ms / 1000,
                    self.housekeeping.scan_not_active_channels,
                    cfg.client_scan_interval_ms / 1000,
                ),
                "pull-hold-check": PeriodicService(
                    "pull-hold-check", hold_check_ms / 1000, self._check_held_pulls
                ),
                "register": PeriodicService(
                    "register-broker",
                    cfg.register_period_ms / 1000,
                    self._periodic_register,
                    FIRST_REGISTER_DELAY_S,
                ),
            }
            | ({"acl-file-watch": self.security.watch} if self.security.watch is not None else {})
            | (
                {
                    "slave-sync": PeriodicService(
                        "slave-sync", SYNC_INTERVAL_S, self.slave_sync.sync_all, FIRST_SYNC_DELAY_S
                    )
                }
                if self.slave_sync is not None
                else {}
            )
        )

    def _managers(self) -> tuple[TopicConfigManager, SubscriptionGroupManager, ConsumerOffsetManager]:
        return (self.topic_config_manager, self.subscription_group_manager, self.consumer_offset_manager)

    # -- addresses --------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self.server.port

    @property
    def broker_addr(self) -> str:
        return self.ctx.broker_addr

    def identity(self) -> BrokerIdentity:
        cfg = self.broker_config
        ha_port = self.ha_service.port if self.ha_service is not None else self.store_config.ha_listen_port
        return BrokerIdentity(
            cluster_name=cfg.broker_cluster_name,
            broker_addr=self.broker_addr,
            broker_name=cfg.broker_name,
            broker_id=cfg.broker_id,
            ha_server_addr=f"{cfg.broker_ip2 or cfg.broker_ip1}:{ha_port}",
        )

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> None:
        self._load_tables()
        try:
            await self.store.start()
        except (RocketQError, OSError) as exc:
            raise BrokerStartError(f"the store under {self.root} cannot be opened: {exc}") from exc
        self._store_open = True  # from here on the store directory (and its config/) is ours
        self.store.add_arrival_listener(self.hold_service.on_message_arrival)
        try:
            await self.lifecycle.start()
            await self.transactions.start()
        except ValueError as exc:
            raise BrokerStartError(str(exc)) from None
        if self.metrics is not None:  # before the remoting port: a metrics port in use fails the start early
            try:
                await self.metrics.exporter.start()
            except MetricsExporterError as exc:
                raise BrokerStartError(str(exc)) from None
        await self.server.start()  # RemotingError (port in use) goes to the daemon
        await self._start_ha()  # after the remoting port: a port in use is reported for that one first
        self.state = ServiceState.RUNNING
        self.ctx.port = self.server.port
        self.ctx.boot_timestamp_ms = self.clock.now_ms()
        for name in ("persist", "client-scan", "pull-hold-check", "acl-file-watch"):
            if name in self._services:
                await self._services[name].start()
        await self.stats_service.start()  # creates the stats topics before the first registration
        await self.register_broker_all(check_order_config=True, oneway=False)
        await self._services["register"].start()
        if "slave-sync" in self._services:
            await self._services["slave-sync"].start()
        log.info(
            "broker %s (%s) started at %s",
            self.broker_config.broker_name,
            self.broker_config.broker_cluster_name,
            self.broker_addr,
        )

    async def _start_ha(self) -> None:
        cfg, store = self.broker_config, self.store
        if not isinstance(store, MessageStore):
            return  # a store without replication (tests' fakes)
        if self.is_slave:
            self.ha_client = HAClient(
                store,
                None if self._ha_master_from_namesrv else self.store_config.ha_master_address,
                self.security.client_ssl,
            )
            await self.ha_client.start()
            return
        self.ha_service = HAService(
            store, cfg.bind_address or cfg.broker_ip2 or cfg.broker_ip1, tls=self.security.server_tls
        )
        try:
            await self.ha_service.start()
        except OSError as exc:
            where = f"{self.ha_service.host}:{self.ha_service.port}"
            self.ha_service = None
            raise BrokerStartError(
                f"cannot listen for slaves on {where} (haListenPort): {exc.strerror or exc}"
            ) from None
        store.ha = self.ha_service

    async def _stop_ha(self) -> None:
        if self.ha_client is not None:
            await self.ha_client.shutdown()
        if self.ha_service is not None:
            await self.ha_service.shutdown()

    def _load_tables(self) -> None:
        for manager in self._managers():
            try:
                found = manager.load()
            except ValueError as exc:
                raise BrokerStartError(str(exc)) from None
            if not found and manager is not self.consumer_offset_manager:
                manager.mark_dirty(urgent=False)  # write the built-in topics/groups once

    async def shutdown(self) -> None:
        was_running = self.state is ServiceState.RUNNING
        self.state = ServiceState.STOPPING
        for name in ("register", "client-scan", "pull-hold-check", "slave-sync", "acl-file-watch"):
            if name in self._services:
                await self._services[name].stop()
        await self.stats_service.stop()
        if self._register_task is not None:
            self._register_task.cancel()
        self.hold_service.drain()
        self.lifecycle.drain()
        await self.transactions.shutdown()
        await self.server.shutdown()
        if self.metrics is not None:
            await self.metrics.exporter.shutdown()
        await self.lifecycle.shutdown()
        await self._stop_ha()
        try:
            await self.store.shutdown()
        except Exception:
            log.exception("shutting the store down failed")
        if was_running:
            await self.outer_api.unregister_broker_all(self.identity())
        await self._services["persist"].stop()
        if not self._store_open:
            await self.client.shutdown()  # never write into a store another process holds
            self.state = ServiceState.SHUTDOWN_ALREADY
            return
        for manager in self._managers():
            try:
                manager.persist()
            except OSError as exc:
                log.error("persisting %s at shutdown failed: %s", manager.path, exc)
        await self.client.shutdown()
        self.state = ServiceState.SHUTDOWN_ALREADY
        log.info("broker %s stopped", self.broker_config.broker_name)

    # -- periodic work -----------------------------------------------------------------------------
    async def persist_async(self) -> None:
        for manager in self._managers():
            await manager.persist_async()

    async def _check_held_pulls(self) -> None:
        self.hold_service.check_hold_requests()

    async def _periodic_register(self) -> None:
        await self.register_broker_all(check_order_config=True, oneway=False)

    # -- NameServer registration ---------------------------------------------------------------------
    def _registered_topics(self, table: dict[str, TopicConfig]) -> dict[str, TopicConfig]:
        """Java: a broker without READ or WRITE registers every topic with the broker's permission."""
        perm = self.broker_config.broker_permission
        if PermName.is_readable(perm) and PermName.is_writeable(perm):
            return table
        return {
            name: TopicConfig(name, tc.read_queue_nums, tc.write_queue_nums, perm, tc.topic_filter_type)
            for name, tc in table.items()
        }

    async def register_broker_all(self, *, check_order_config: bool, oneway: bool) -> None:
        wrapper = self.topic_config_manager.build_serialize_wrapper()
        wrapper.topic_config_table = self._registered_topics(wrapper.topic_config_table)
        cfg = self.broker_config
        results = await self.outer_api.register_broker_all(
            self.identity(),
            wrapper,
            oneway=oneway,
            timeout_ms=cfg.register_broker_timeout_ms,
            compressed=cfg.compressed_register,
        )
        if results and check_order_config:
            self.topic_config_manager.update_order_topic_config(results[0].kv_table)
        if results and self.is_slave:
            self._follow_master(results[0].master_addr, results[0].ha_server_addr)

    def _follow_master(self, master_addr: str | None, ha_server_addr: str | None) -> None:
        """A slave's registration answer names its live master (Java BrokerController.registerBrokerAll)."""
        if self.ha_client is not None and self._ha_master_from_namesrv and ha_server_addr:
            self.ha_client.update_master_address(ha_server_addr)
        if self.slave_sync is not None:
            self.slave_sync.master_addr = master_addr

    async def register_increment(self, config: TopicConfig, version: DataVersion | None = None) -> None:
        """Register just `config` (after UPDATE_AND_CREATE_TOPIC) with the data version of its change.

        `version` must be the one taken right after this change: the NameServer applies a registration
        only when its data version differs from the last one it saw, so two concurrent creates that
        both sent the latest version would leave one topic out of the routes.
        """
        table = self._registered_topics({config.topic_name: config})
        wrapper = TopicConfigSerializeWrapper(table, version or self.topic_config_manager.data_version.copy())
        cfg = self.broker_config
        await self.outer_api.register_broker_all(
            self.identity(),
            wrapper,
            oneway=False,
            timeout_ms=cfg.register_broker_timeout_ms,
            compressed=cfg.compressed_register,
        )

    def request_register(self) -> None:
        """A topic was created: register everything (oneway), coalescing bursts of changes."""
        if self.state is not ServiceState.RUNNING:
            return
        if self._register_task is not None and not self._register_task.done():
            self._register_again = True
            return
        self._register_task = spawn("register-broker-on-change", self._register_on_change())

    async def _register_on_change(self) -> None:
        while True:
            self._register_again = False
            await self.register_broker_all(check_order_config=False, oneway=True)
            if not self._register_again:
                return

    def _on_broker_config_changed(self, changed: set[str]) -> None:
        if "brokerPermission" in changed:
            self.topic_config_manager.data_version.next_version(self.clock.now_ms())
            spawn("register-broker-on-perm", self.register_broker_all(check_order_config=False, oneway=False))
        if changed & FAST_FAILURE_KEYS:
            for executor in self.server.registry.executors():
                apply_fast_failure(executor, self.broker_config)
        if "notifyConsumerIdsChangedEnable" in changed:
            self.broker2client.enabled = self.broker_config.notify_consumer_ids_changed_enable
