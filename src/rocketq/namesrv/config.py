"""NamesrvConfig: every NameServer setting, RocketMQ key names as aliases, units in the python names.

Port of org.apache.rocketmq.common.namesrv.NamesrvConfig plus the NettyServerConfig keys a
namesrv.properties file may carry. Deviations: `scanNotActiveBrokerInterval` (RocketMQ 5's key) and
`brokerChannelExpiredTime` make Java's fixed 10 s scan and 120 s expiry configurable; `bindAddress`
and `logDir` are ours (the daemon binds 127.0.0.1 unless told otherwise).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from rocketq.common.config import RocketConfig  # noqa: F401  (re-exported for existing imports)
from rocketq.common.constants import DEFAULT_NAMESRV_PORT
from rocketq.common.logs import DaemonLogConfig
from rocketq.remoting.metrics import MetricsExporterConfig
from rocketq.remoting.security_config import SecurityConfig
from rocketq.remoting.transport.config import ConnectionLimits

_HOME = Path("~/rocketq").expanduser()


class NamesrvConfig(ConnectionLimits, SecurityConfig, DaemonLogConfig, MetricsExporterConfig):
    listen_port: int = Field(DEFAULT_NAMESRV_PORT, alias="listenPort", ge=0, le=65535)
    """TCP port to accept brokers and clients on; 0 picks a free port (the READY line names it)."""
    bind_address: str = Field("127.0.0.1", alias="bindAddress")
    """Address to listen on; 0.0.0.0 to accept other hosts."""

    scan_not_active_broker_interval_ms: int = Field(10_000, alias="scanNotActiveBrokerInterval", gt=0)
    """How often the liveness scan runs (ms)."""
    broker_channel_expired_time_ms: int = Field(120_000, alias="brokerChannelExpiredTime", gt=0)
    """A broker with no registration for this long is removed with its queues (ms)."""
    server_channel_max_idle_time_seconds: int = Field(120, alias="serverChannelMaxIdleTimeSeconds", ge=0)
    """Connections idle this long are closed (s); 0 disables."""
    event_loop: Literal["auto", "asyncio", "uvloop"] = Field("auto", alias="eventLoop")
    """Event loop implementation: uvloop when installed ("auto"), or plain asyncio."""
    server_worker_threads: int = Field(8, alias="serverWorkerThreads", ge=1)
    """Accepted for namesrv.properties compatibility; requests run on the event loop."""

    kv_config_path: str = Field(str(_HOME / "namesrv" / "kvConfig.json"), alias="kvConfigPath")
    """Where the KV config (ORDER_TOPIC_CONFIG ...) is persisted."""
    config_store_path: str = Field(str(_HOME / "namesrv" / "namesrv.properties"), alias="configStorePath")
    """Where UPDATE_NAMESRV_CONFIG would persist the config (kept for the Java key; not written)."""
    log_dir: str = Field(str(_HOME / "logs"), alias="logDir")
    """Directory of namesrv.log."""
    rocketmq_home: str | None = Field(None, alias="rocketmqHome")
    """Accepted for compatibility; unused."""
    product_env_name: str = Field("center", alias="productEnvName")
    """Environment name (Java NamesrvConfig.productEnvName); informational."""
    cluster_test: bool = Field(False, alias="clusterTest")
    """Accepted for compatibility; the cluster-test processor is not ported."""
    order_message_enable: bool = Field(False, alias="orderMessageEnable")
    """When on, GET_ROUTEINFO_BY_TOPIC fills orderTopicConf from the ORDER_TOPIC_CONFIG namespace."""
    config_black_list: str = Field("configBlackList;configStorePath;kvConfigPath", alias="configBlackList")
    """Keys UPDATE_NAMESRV_CONFIG refuses to change (';'-separated)."""

    def black_listed_keys(self) -> set[str]:
        keys = {"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"}
        keys.update(k.strip() for k in self.config_black_list.split(";") if k.strip())
        return keys
