"""BrokerConfig, and the loader that splits one config file plus command-line options between it and
the store's MessageStoreConfig.

Port of org.apache.rocketmq.common.BrokerConfig (with NettyServerConfig.listenPort folded in, as the
daemon contract names it `--listen-port`). Python names carry units; RocketMQ's spelling is the alias.
Deviations: brokerIP1 defaults to 127.0.0.1 (not the first non-loopback address) so that a broker started
without a config is reachable by what it advertises; brokerName defaults to `broker-a` (not the host
name) so that examples and tests are deterministic. Hidden Java knobs (`rocketmq.broker.rebalance.
lockMaxLiveTime`, the 120 s channel expiry) are ordinary fields here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from rocketq.common import constants as C
from rocketq.common.config import RocketConfig, parse_cli_overrides, read_config_file
from rocketq.common.errors import ConfigError
from rocketq.common.logs import DaemonLogConfig
from rocketq.remoting.metrics import MetricsExporterConfig
from rocketq.remoting.security_config import SecurityConfig
from rocketq.remoting.transport.config import ConnectionLimits
from rocketq.store.config import BrokerRole, MessageStoreConfig


class BrokerConfig(ConnectionLimits, SecurityConfig, DaemonLogConfig, MetricsExporterConfig):
    """Everything the broker role needs that is not the store's (MessageStoreConfig holds those)."""

    # -- identity and addresses ------------------------------------------------------------------
    broker_name: str = Field(
        "broker-a", alias="brokerName", description="name shared by a master and its slaves"
    )
    broker_cluster_name: str = Field(C.DEFAULT_CLUSTER, alias="brokerClusterName")
    """Cluster this broker registers under."""
    broker_id: int = Field(0, alias="brokerId", ge=0, description="0 = master, > 0 = slave")
    broker_ip1: str = Field(
        "127.0.0.1",
        alias="brokerIP1",
        description="address clients reach; registered and written as STOREHOST",
    )
    broker_ip2: str | None = Field(None, alias="brokerIP2", description="HA address; defaults to brokerIP1")
    listen_port: int = Field(
        C.DEFAULT_BROKER_PORT,
        alias="listenPort",
        ge=0,
        le=65535,
        description="remoting port; 0 = any free port",
    )
    bind_address: str | None = Field(
        None, alias="bindAddress", description="address the remoting port listens on; defaults to brokerIP1"
    )
    namesrv_addr: str | None = Field(
        None,
        alias="namesrvAddr",
        description="NameServers, 'host:port;host:port'; env NAMESRV_ADDR when unset",
    )
    region_id: str = Field(
        "DefaultRegion", alias="regionId", description="sent back as MSG_REGION on every send"
    )
    trace_on: bool = Field(True, alias="traceOn", description="sent back as TRACE_ON on every send")

    # -- permissions and auto-creation ----------------------------------------------------------
    broker_permission: int = Field(
        C.PermName.PERM_READ | C.PermName.PERM_WRITE, alias="brokerPermission", ge=0, le=15
    )
    """Broker-wide permission: 6 read+write, 4 read only, 2 write only (PermName)."""
    default_topic_queue_nums: int = Field(
        8, alias="defaultTopicQueueNums", ge=1, description="TBW102's queues"
    )
    max_topic_queue_nums: int = Field(
        1024,
        alias="maxTopicQueueNums",
        ge=1,
        description="most read/write queues UPDATE_AND_CREATE_TOPIC accepts",
    )
    auto_create_topic_enable: bool = Field(True, alias="autoCreateTopicEnable")
    """Create a topic on its first send, from TBW102 (Java autoCreateTopicEnable)."""
    cluster_topic_enable: bool = Field(True, alias="clusterTopicEnable")
    """Register a topic named after the cluster (used by mqadmin and the reply topic)."""
    broker_topic_enable: bool = Field(True, alias="brokerTopicEnable")
    """Register a topic named after the broker."""
    auto_create_subscription_group: bool = Field(True, alias="autoCreateSubscriptionGroup")
    """Create a consumer group's settings on its first heartbeat or pull."""
    trace_topic_enable: bool = Field(False, alias="traceTopicEnable")
    """Create the message trace topic at start-up."""
    msg_trace_topic_name: str = Field(C.RMQ_SYS_TRACE_TOPIC, alias="msgTraceTopicName")
    """Name of the message trace topic."""
    max_reconsume_times: int = Field(
        16, alias="maxReconsumeTimes", ge=0, description="retryMaxTimes of auto-created subscription groups"
    )
    store_reply_message_enable: bool = Field(True, alias="storeReplyMessageEnable")
    """Also store each reply of request-reply in <cluster>_REPLY_TOPIC (besides pushing it to the requester)."""
    reject_transaction_message: bool = Field(False, alias="rejectTransactionMessage")
    """Refuse transactional (half) messages with NO_PERMISSION."""
    start_accept_send_request_timestamp_ms: int = Field(
        0,
        alias="startAcceptSendRequestTimeStamp",
        description="sends before this epoch-ms answer SYSTEM_ERROR",
    )

    # -- NameServer registration ----------------------------------------------------------------
    register_name_server_period_ms: int = Field(
        30_000, alias="registerNameServerPeriod", description="clamped to 10-60 s as Java does"
    )
    register_broker_timeout_ms: int = Field(6_000, alias="registerBrokerTimeoutMills", ge=1)
    """Timeout of one REGISTER_BROKER to a NameServer (ms)."""
    force_register: bool = Field(True, alias="forceRegister")
    """Register on every period even when the topic configs did not change."""
    compressed_register: bool = Field(False, alias="compressedRegister")
    """Send REGISTER_BROKER bodies zlib-compressed (RocketMQ 4.x format)."""

    # -- pull and long polling ------------------------------------------------------------------
    long_polling_enable: bool = Field(True, alias="longPollingEnable")
    """Hold a pull that found nothing until a message arrives or it times out."""
    short_polling_time_ms: int = Field(1_000, alias="shortPollingTimeMills", ge=1)
    """How long a pull is held when long polling is off (ms)."""
    long_polling_check_interval_ms: int = Field(
        5_000, alias="longPollingCheckInterval", ge=10, description="re-check of held pulls (Java: fixed 5 s)"
    )
    slave_read_enable: bool = Field(False, alias="slaveReadEnable")
    """Let consumers read from a slave when the master is behind (suggestWhichBrokerId)."""
    enable_property_filter: bool = Field(
        False, alias="enablePropertyFilter", description="SQL92 subscriptions"
    )
    filter_support_retry: bool = Field(False, alias="filterSupportRetry")
    """Apply SQL92 filters to the %RETRY% topics too."""
    transfer_msg_by_heap: bool = Field(True, alias="transferMsgByHeap")
    """Accepted for broker.conf compatibility; pulls are always copied."""

    # -- clients, offsets, locks ----------------------------------------------------------------
    notify_consumer_ids_changed_enable: bool = Field(True, alias="notifyConsumerIdsChangedEnable")
    """Tell a group's consumers to rebalance when a member joins or leaves."""
    flush_consumer_offset_interval_ms: int = Field(5_000, alias="flushConsumerOffsetInterval", ge=100)
    """How often consumerOffset.json is written (ms)."""
    client_channel_expired_timeout_ms: int = Field(
        120_000,
        alias="clientChannelExpiredTimeout",
        ge=1_000,
        description="a client silent this long is dropped",
    )
    client_scan_interval_ms: int = Field(10_000, alias="clientScanInterval", ge=100)
    """How often silent client connections are looked for (ms)."""
    rebalance_lock_max_live_time_ms: int = Field(
        60_000, alias="rebalanceLockMaxLiveTime", ge=1, description="LOCK_BATCH_MQ lease"
    )

    # -- transactions (the check service is a later issue; the numbers are fixed now) -------------
    transaction_timeout_ms: int = Field(6_000, alias="transactionTimeOut", ge=0)
    """A half message younger than this is not checked back yet (ms)."""
    transaction_check_max: int = Field(15, alias="transactionCheckMax", ge=0)
    """Check a half message this many times, then drop it."""
    transaction_check_interval_ms: int = Field(60_000, alias="transactionCheckInterval", ge=1)
    """How often half messages are checked back with their producers (ms)."""

    # -- delayed, timer and POP messages --------------------------------------------------------
    flush_delay_offset_interval_ms: int = Field(
        10_000, alias="flushDelayOffsetInterval", ge=10, description="how often delayOffset.json is written"
    )
    timer_max_delay_s: int = Field(
        3 * 86_400,
        alias="timerMaxDelaySec",
        ge=1,
        description="a timer message further away is MESSAGE_ILLEGAL",
    )
    timer_precision_ms: int = Field(
        1_000,
        alias="timerPrecisionMs",
        ge=10,
        le=60_000,
        description="how late a timer message may be delivered",
    )
    revive_interval_ms: int = Field(
        1_000, alias="reviveInterval", ge=10, description="longest wait before a timed-out POP is noticed"
    )

    # -- statistics -----------------------------------------------------------------------------
    stats_interval_ms: int = Field(
        60_000, alias="statsInterval", ge=1_000, description="stats publishing period (docs/stats-topics.md)"
    )

    # -- remoting server --------------------------------------------------------------------------
    event_loop: Literal["auto", "asyncio", "uvloop"] = Field(
        "auto", alias="eventLoop", description="event loop implementation; auto = uvloop when installed"
    )
    gc_freeze_after_start: bool = Field(True, alias="gcFreezeAfterStart")
    """Once serving, collect and then freeze (gc.freeze) what start-up made: the loaded modules and configs
    are never garbage, so later full collections stop walking them (docs/performance-log.md, Session 7)."""
    gc_gen0_threshold: int = Field(10_000, alias="gcGen0Threshold", ge=0)
    """The collector's generation-0 threshold (Python's default is 700); 0 keeps the interpreter's. With
    256 sends in flight a read's requests are ~3,000 live containers, which at 700 set off several
    collections per read that walk them and promote them; the cost is up to this many unreachable
    cycles waiting a little longer for the collector (docs/performance-log.md, Session 7)."""
    server_channel_max_idle_time_s: int = Field(120, alias="serverChannelMaxIdleTimeSeconds", ge=0)
    """Connections idle this long are closed (s); 0 disables."""
    send_thread_pool_queue_capacity: int = Field(10_000, alias="sendThreadPoolQueueCapacity", ge=1)
    """Waiting sends beyond this are answered SYSTEM_BUSY."""
    pull_thread_pool_queue_capacity: int = Field(100_000, alias="pullThreadPoolQueueCapacity", ge=1)
    """Waiting pulls beyond this are answered SYSTEM_BUSY."""
    query_thread_pool_queue_capacity: int = Field(20_000, alias="queryThreadPoolQueueCapacity", ge=1)
    """Waiting message queries beyond this are answered SYSTEM_BUSY."""
    client_manager_thread_pool_queue_capacity: int = Field(
        1_000_000, alias="clientManagerThreadPoolQueueCapacity", ge=1
    )
    """Waiting client-management requests beyond this are answered SYSTEM_BUSY."""
    consumer_manager_thread_pool_queue_capacity: int = Field(
        1_000_000, alias="consumerManagerThreadPoolQueueCapacity", ge=1
    )
    """Waiting consumer-management requests beyond this are answered SYSTEM_BUSY."""
    heartbeat_thread_pool_queue_capacity: int = Field(50_000, alias="heartbeatThreadPoolQueueCapacity", ge=1)
    """Waiting heartbeats beyond this are answered SYSTEM_BUSY."""
    admin_thread_pool_queue_capacity: int = Field(10_000, alias="adminBrokerThreadPoolQueueCapacity", ge=1)
    """Waiting admin requests beyond this are answered SYSTEM_BUSY."""
    send_message_thread_pool_nums: int = Field(0, alias="sendMessageThreadPoolNums", ge=0)
    """Sends processed at once (Java's send thread pool size; here tasks on the event loop). 0: 256, so that
    a SYNC_FLUSH group commit covers what pipelining producers have in flight."""
    pull_message_thread_pool_nums: int = Field(0, alias="pullMessageThreadPoolNums", ge=0)
    """Pulls processed at once (Java's pull thread pool size). 0: 4 (a pull never waits on the disk here)."""
    # Fast failure (Java's BrokerFastFailure): a request that waited this long in its executor's queue is
    # answered SYSTEM_BUSY "[TIMEOUT_CLEAN_QUEUE]..." at once, so the client retries on another broker.
    broker_fast_failure_enable: bool = Field(
        True, alias="brokerFastFailureEnable", description="answer requests stuck in a queue SYSTEM_BUSY"
    )
    wait_time_ms_in_send_queue: int = Field(200, alias="waitTimeMillsInSendQueue", ge=1)
    """A send that waited longer than this in the send queue is answered SYSTEM_BUSY (fast failure)."""
    wait_time_ms_in_pull_queue: int = Field(5_000, alias="waitTimeMillsInPullQueue", ge=1)
    """A pull that waited longer than this in the pull queue is answered SYSTEM_BUSY (fast failure)."""
    wait_time_ms_in_heartbeat_queue: int = Field(31_000, alias="waitTimeMillsInHeartbeatQueue", ge=1)
    """A heartbeat that waited longer than this in its queue is answered SYSTEM_BUSY (fast failure)."""
    wait_time_ms_in_transaction_queue: int = Field(3_000, alias="waitTimeMillsInTransactionQueue", ge=1)
    """An END_TRANSACTION that waited longer than this in its queue is answered SYSTEM_BUSY (fast failure)."""

    @field_validator("broker_name", "broker_cluster_name")
    @classmethod
    def _name_is_usable(cls, value: str) -> str:
        # Java accepts any name (the default is the host name, dots included), but both names become
        # topics and travel in ';'/':'-separated strings, so blanks and separators are refused.
        if not value or any(ch.isspace() or ch in ";:," for ch in value):
            raise ValueError(f"{value!r} is empty or holds a blank, ';', ':' or ','")
        return value

    # -- derived values ---------------------------------------------------------------------------
    @property
    def register_period_ms(self) -> int:
        """registerNameServerPeriod clamped to 10-60 s (BrokerController.start)."""
        return max(10_000, min(self.register_name_server_period_ms, 60_000))

    @property
    def namesrv_addr_list(self) -> list[str]:
        raw = self.namesrv_addr or ""
        return [a.strip() for a in raw.split(";") if a.strip()]

    def broker_addr(self, port: int | None = None) -> str:
        """`brokerIP1:listenPort`, the address registered and stamped into STOREHOST."""
        return f"{self.broker_ip1}:{self.listen_port if port is None else port}"

    @property
    def is_master(self) -> bool:
        return self.broker_id == C.MASTER_ID


# Keys the daemon accepts that belong to neither model: handled by the daemon itself.
_DAEMON_KEYS = frozenset({"c", "config", "configFile"})


def split_config(
    values: Mapping[str, Any], store_cls: type[RocketConfig], source: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Route each key to the broker or the store model; an unknown key raises ConfigError naming it.

    A key both models know (none today) goes to both.
    """
    broker_keys = BrokerConfig.known_keys()
    store_keys = store_cls.known_keys()
    broker_values: dict[str, Any] = {}
    store_values: dict[str, Any] = {}
    for key, value in values.items():
        known = False
        if key in broker_keys:
            broker_values[key] = value
            known = True
        if key in store_keys:
            store_values[key] = value
            known = True
        if not known and key not in _DAEMON_KEYS:
            raise ConfigError(f"{source}: unknown configuration key {key!r}")
    return broker_values, store_values


def load_broker_configs(
    config_file: str | Path | None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[BrokerConfig, MessageStoreConfig]:
    """BrokerConfig and MessageStoreConfig from a TOML / .properties file, then `overrides` (CLI wins).

    Raises ConfigError with one line naming the file, the key and what is wrong with it.
    """
    env = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    source = "command line"
    if config_file is not None:
        source = str(config_file)
        merged.update(read_config_file(config_file))
    broker_file, store_file = split_config(merged, MessageStoreConfig, source)
    broker_cli, store_cli = split_config(dict(overrides or {}), MessageStoreConfig, "command line")
    broker_values = _canonical(BrokerConfig, broker_file) | _canonical(BrokerConfig, broker_cli)
    store_values = _canonical(MessageStoreConfig, store_file) | _canonical(MessageStoreConfig, store_cli)
    if "namesrv_addr" not in broker_values and env.get(C.NAMESRV_ADDR_ENV):
        broker_values["namesrv_addr"] = env[C.NAMESRV_ADDR_ENV]
    broker = BrokerConfig.build(broker_values, source)
    if "ha_listen_port" not in store_values:  # Java BrokerStartup: listenPort + 1 unless configured
        store_values["ha_listen_port"] = broker.listen_port + 1 if 0 < broker.listen_port < 65535 else 0
    if "broker_role" not in store_values and broker.broker_id > 0:
        store_values["broker_role"] = "SLAVE"  # brokerId > 0 is a slave; brokerRole may say so too
    store = MessageStoreConfig.build(store_values, source)
    return _check_role(broker, store, source), store


def _check_role(broker: BrokerConfig, store: MessageStoreConfig, source: str) -> BrokerConfig:
    """Java BrokerStartup: a slave's brokerId must be > 0; a master's is made 0."""
    if store.broker_role is BrokerRole.SLAVE and broker.broker_id <= 0:
        raise ConfigError(f"{source}: brokerRole SLAVE needs a brokerId > 0, not {broker.broker_id}")
    if store.broker_role is not BrokerRole.SLAVE and broker.broker_id > 0:
        broker.broker_id = C.MASTER_ID
    return broker


def _canonical(model: type[RocketConfig], values: Mapping[str, Any]) -> dict[str, Any]:
    """Keys renamed to python field names, so a later source overrides an earlier one's spelling."""
    known = model.known_keys()
    return {known[k]: v for k, v in values.items()}


def parse_overrides(args: list[str]) -> dict[str, str]:
    """`--key value` pairs of the command line (re-exported for the daemon)."""
    return parse_cli_overrides(args)
