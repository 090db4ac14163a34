"""NamesrvController: wires the NameServer together and runs it; no request logic lives here.

Port of org.apache.rocketmq.namesrv.NamesrvController (4.9.8): KV config loaded at start, the
processors registered on the remoting server, the liveness scan (every scanNotActiveBrokerInterval,
first one after one interval as Java's 5 s delay is close to) and the connection housekeeping.
Start order: KV config, server, scan; stop order is the reverse.
"""

from __future__ import annotations

import logging

from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.service import PeriodicService
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.housekeeping import BrokerHousekeeping
from rocketq.namesrv.kv_config import KVConfigManager
from rocketq.namesrv.metrics import NamesrvMetrics
from rocketq.namesrv.processors.base import NamesrvContext
from rocketq.namesrv.processors.registry import NamesrvRequestProcessor
from rocketq.namesrv.route_info import RouteInfoManager
from rocketq.remoting.acl.permission import NAMESRV_WRITE_CODES
from rocketq.remoting.security_config import DaemonSecurity
from rocketq.remoting.transport import Connection, RemotingServer, ServerConfig

log = logging.getLogger("rocketq.namesrv")


def server_config(config: NamesrvConfig) -> ServerConfig:
    return ServerConfig.model_validate(
        {
            "listen_port": config.listen_port,
            "bind_address": config.bind_address,
            "server_worker_threads": config.server_worker_threads,
            "server_channel_max_idle_time_s": config.server_channel_max_idle_time_seconds,
            **config.limit_values(),
        }
    )


class NamesrvController:
    """Owns a NameServer's parts. `await start()` binds the port (RemotingError if it cannot)."""

    def __init__(self, config: NamesrvConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.routes = RouteInfoManager(clock, config.broker_channel_expired_time_ms)
        self.kv = KVConfigManager(config.kv_config_path)
        self.context = NamesrvContext(config, self.routes, self.kv)
        self.processor = NamesrvRequestProcessor(self.context)
        # ACL checks the NameServer's write codes only; TLS as configured (docs/security.md).
        self.security = DaemonSecurity(config, checked=NAMESRV_WRITE_CODES.__contains__)
        self.server = RemotingServer(server_config(config), self.security.server_tls)
        self.security.install_server(self.server)
        interval_s = config.scan_not_active_broker_interval_ms / 1000
        self.scan = PeriodicService("namesrv-scan-not-active-broker", interval_s, self._scan_once, interval_s)
        self.metrics = NamesrvMetrics(config, self.routes) if config.metrics_enabled else None
        self.server.time_requests(self.metrics.rpc if self.metrics else None)
        for code in self.processor.codes:
            self.server.register_processor(code, self.processor)
        self.server.add_connection_listener(BrokerHousekeeping(self.routes))

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        self.kv.load()
        if self.metrics is not None:  # MetricsExporterError names the key; the daemon reports it
            await self.metrics.exporter.start()
        await self.server.start()
        if self.metrics is not None:
            self.metrics.node_id = f"{self.config.bind_address}:{self.port}"
        await self.scan.start()
        if self.security.watch is not None:
            await self.security.watch.start()

    async def shutdown(self) -> None:
        if self.security.watch is not None:
            await self.security.watch.stop()
        await self.scan.stop()
        await self.server.shutdown()
        if self.metrics is not None:
            await self.metrics.exporter.shutdown()

    async def _scan_once(self) -> None:
        for expired in self.routes.scan_inactive_brokers():
            if isinstance(expired.connection, Connection):
                expired.connection.close("broker registration expired")
