"""Client configuration: ClientConfig (shared by every client), ProducerConfig and ConsumerConfig.

Port of org.apache.rocketmq.client.ClientConfig and the settings of DefaultMQProducer,
DefaultMQPushConsumer and DefaultLitePullConsumer. Python names carry their units
(`send_msg_timeout_ms`); RocketMQ's spelling is the alias (`sendMsgTimeout`), so either may be passed.
Deviations: the settings Java reads from system properties (rebalance interval, lock lease, compression
level, local offset store dir) are plain fields here; `header_codec` is ours (how request headers are
serialized: "auto" offers msgpack per connection and keeps JSON where the server never answers, as Java's
brokers; json is JSON only, msgpack only for rocketq servers).
"""

from __future__ import annotations

import enum
import os
from typing import Any, Literal

from pydantic import Field, field_validator

from rocketq.common import constants as C
from rocketq.common.config import RocketConfig
from rocketq.common.msg_id import local_address


class MessageModel(enum.Enum):
    """How a consumer group shares a topic: each message once per group, or once per consumer."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(enum.Enum):
    """Where a consumer group that has no committed offset on a queue starts."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"
    # Deprecated Java names, accepted and treated as LAST / FIRST.
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = (
        "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    )
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"


HeaderCodecName = Literal["auto", "json", "msgpack", "rocketmq"]
AllocateStrategyName = Literal["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"]

MIB = 1024 * 1024


def default_namesrv_addr() -> str:
    """NAMESRV_ADDR from the environment (as Java's MixAll.NAMESRV_ADDR_ENV), else empty."""
    return os.environ.get(C.NAMESRV_ADDR_ENV, "")


class ClientConfig(RocketConfig):
    """Settings every producer, consumer and admin client shares (Java ClientConfig)."""

    namesrv_addr: str = Field(default_factory=default_namesrv_addr, alias="namesrvAddr")
    """Name servers, `host:port;host:port`."""
    client_ip: str = Field(default_factory=local_address, alias="clientIP")
    """The address put in the client id and in UNIQ_KEY message ids: by default this host's own address, as
    Java's (RemotingUtil.getLocalAddress), so clients on different hosts never share a client id."""
    instance_name: str = Field("DEFAULT", alias="instanceName")
    """Clients of one process with the same name server list and instance name share one connection
    set (one ClientInstance); "DEFAULT" becomes `<pid>#<random>`, unique per process even in containers."""
    unit_name: str | None = Field(None, alias="unitName")
    unit_mode: bool = Field(False, alias="unitMode")
    enable_msg_trace: bool = Field(False, alias="enableMsgTrace")
    """Record message traces (RocketMQ 4.x format) to the trace topic; producers and push consumers."""
    customized_trace_topic: str | None = Field(None, alias="customizedTraceTopic")
    """The trace topic when not RMQ_SYS_TRACE_TOPIC."""
    poll_name_server_interval_ms: int = Field(30_000, alias="pollNameServerInterval", ge=100)
    """Route refresh period."""
    heartbeat_broker_interval_ms: int = Field(30_000, alias="heartbeatBrokerInterval", ge=100)
    """Heartbeat period to every broker."""
    persist_consumer_offset_interval_ms: int = Field(5_000, alias="persistConsumerOffsetInterval", ge=10)
    """How often consumers commit offsets."""
    pull_time_delay_ms_when_exception: int = Field(1_000, alias="pullTimeDelayMillsWhenException", ge=0)
    mq_client_api_timeout_ms: int = Field(3_000, alias="mqClientApiTimeout", ge=1)
    """Timeout of control requests (route, heartbeat, offsets, locks, admin)."""
    vip_channel_enabled: bool = Field(False, alias="vipChannelEnabled")
    use_tls: bool = Field(False, alias="useTLS")
    """Encrypt every connection (name servers and brokers) with TLS; see docs/security.md."""
    tls_ca_file: str | None = Field(None, alias="tlsCaFile")
    """CA certificate(s) (PEM) the servers' certificates must chain to; without it they are not verified."""
    tls_cert_file: str | None = Field(None, alias="tlsCertFile")
    """This client's certificate (PEM), for servers that require client authentication."""
    tls_key_file: str | None = Field(None, alias="tlsKeyFile")
    access_key: str | None = Field(None, alias="accessKey")
    """ACL account: every request is signed with it (Java's AclClientRPCHook)."""
    secret_key: str | None = Field(None, alias="secretKey", repr=False)
    header_codec: HeaderCodecName = Field("auto", alias="headerCodec")
    """Serialization of request headers: auto (JSON, and msgpack on each connection whose server said it
    speaks it: rocketq's do, Apache's never answer), json (JSON only), msgpack (rocketq servers only)."""
    language: str = Field("PYTHON", alias="language")

    @field_validator("namesrv_addr")
    @classmethod
    def _strip_addr(cls, value: str) -> str:
        return ";".join(part.strip() for part in value.split(";") if part.strip())

    def namesrv_list(self) -> list[str]:
        return [addr for addr in self.namesrv_addr.split(";") if addr]

    def security_key(self) -> tuple[object, ...]:
        """What clients sharing one connection set must agree on (credentials and TLS)."""
        return (
            self.access_key,
            self.secret_key,
            self.use_tls,
            self.tls_ca_file,
            self.tls_cert_file,
            self.tls_key_file,
        )


class ProducerConfig(ClientConfig):
    """Settings of a producer (Java DefaultMQProducer)."""

    producer_group: str = Field(C.DEFAULT_PRODUCER_GROUP, alias="producerGroup")
    create_topic_key: str = Field(C.AUTO_CREATE_TOPIC_KEY_TOPIC, alias="createTopicKey")
    """Template topic the broker auto-creates new topics from."""
    default_topic_queue_nums: int = Field(4, alias="defaultTopicQueueNums", ge=1)
    send_msg_timeout_ms: int = Field(3_000, alias="sendMsgTimeout", ge=1)
    """Budget for one send including its retries."""
    compress_msg_body_over_howmuch_bytes: int = Field(4_096, alias="compressMsgBodyOverHowmuch", ge=0)
    compress_level: int = Field(5, alias="compressLevel", ge=-1, le=9)
    retry_times_when_send_failed: int = Field(2, alias="retryTimesWhenSendFailed", ge=0)
    retry_times_when_send_async_failed: int = Field(2, alias="retryTimesWhenSendAsyncFailed", ge=0)
    retry_another_broker_when_not_store_ok: bool = Field(False, alias="retryAnotherBrokerWhenNotStoreOK")
    max_message_size_bytes: int = Field(4 * MIB, alias="maxMessageSize", ge=1)
    send_latency_fault_enable: bool = Field(False, alias="sendLatencyFaultEnable")
    latency_max_ms: tuple[int, ...] = Field((50, 100, 550, 1000, 2000, 3000, 15000), alias="latencyMax")
    not_available_duration_ms: tuple[int, ...] = Field(
        (0, 0, 30_000, 60_000, 120_000, 180_000, 600_000), alias="notAvailableDuration"
    )
    check_thread_pool_max_size: int = Field(1, alias="checkThreadPoolMaxSize", ge=1)


class ConsumerConfig(ClientConfig):
    """Settings of a push or lite-pull consumer (Java DefaultMQPushConsumer / DefaultLitePullConsumer)."""

    consumer_group: str = Field(C.DEFAULT_CONSUMER_GROUP, alias="consumerGroup")
    message_model: MessageModel = Field(MessageModel.CLUSTERING, alias="messageModel")
    consume_from_where: ConsumeFromWhere = Field(
        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, alias="consumeFromWhere"
    )
    consume_timestamp_ms: int | None = Field(None, alias="consumeTimestamp")
    """Start time for CONSUME_FROM_TIMESTAMP (epoch ms); default: half an hour before start."""
    allocate_message_queue_strategy: AllocateStrategyName = Field("AVG", alias="allocateMessageQueueStrategy")
    consume_thread_min: int = Field(20, alias="consumeThreadMin", ge=1, le=1000)
    consume_thread_max: int = Field(20, alias="consumeThreadMax", ge=1, le=1000)
    """Upper bound of listener calls running at once (threads for sync listeners)."""
    consume_concurrently_max_span: int = Field(2_000, alias="consumeConcurrentlyMaxSpan", ge=1)
    pull_threshold_for_queue: int = Field(1_000, alias="pullThresholdForQueue", ge=1)
    pull_threshold_size_for_queue_mib: int = Field(100, alias="pullThresholdSizeForQueue", ge=1)
    pull_threshold_for_topic: int = Field(-1, alias="pullThresholdForTopic")
    pull_threshold_size_for_topic_mib: int = Field(-1, alias="pullThresholdSizeForTopic")
    pull_interval_ms: int = Field(0, alias="pullInterval", ge=0)
    consume_message_batch_max_size: int = Field(1, alias="consumeMessageBatchMaxSize", ge=1, le=1024)
    pull_batch_size: int = Field(32, alias="pullBatchSize", ge=1, le=1024)
    post_subscription_when_pull: bool = Field(False, alias="postSubscriptionWhenPull")
    max_reconsume_times: int = Field(-1, alias="maxReconsumeTimes")
    """-1 means the default: 16 for concurrent listeners, unbounded (Integer.MAX_VALUE) for orderly."""
    suspend_current_queue_time_ms: int = Field(1_000, alias="suspendCurrentQueueTimeMillis", ge=10)
    consume_timeout_min: int = Field(15, alias="consumeTimeout", ge=1)
    """A message in a concurrent listener for longer is sent back (delay level 3); checked this often."""
    consume_timeout_ms: int | None = Field(None, alias="consumeTimeoutMillis", ge=1)
    """consume_timeout_min in milliseconds (sub-minute timeouts); wins when set."""
    await_termination_ms_when_shutdown: int = Field(0, alias="awaitTerminationMillisWhenShutdown", ge=0)
    broker_suspend_max_time_ms: int = Field(15_000, alias="brokerSuspendMaxTimeMillis", ge=0)
    consumer_timeout_ms_when_suspend: int = Field(30_000, alias="consumerTimeoutMillisWhenSuspend", ge=1)
    consumer_pull_timeout_ms: int = Field(10_000, alias="consumerPullTimeoutMillis", ge=1)
    rebalance_interval_ms: int = Field(20_000, alias="rebalanceInterval", ge=10)
    lock_interval_ms: int = Field(20_000, alias="lockInterval", ge=10)
    """Orderly consumers renew their broker locks this often."""
    lock_max_live_time_ms: int = Field(30_000, alias="lockMaxLiveTime", ge=10)
    """An orderly consumer treats its lock as lost when not renewed for this long."""
    pull_max_idle_time_ms: int = Field(120_000, alias="pullMaxIdleTime", ge=10)
    """A queue with no pull for this long is revived by the watchdog."""
    offset_store_dir: str = Field(
        default_factory=lambda: os.path.join(os.path.expanduser("~"), ".rocketq_offsets"),
        alias="localOffsetStoreDir",
    )
    """Where BROADCASTING consumers keep their offsets."""
    # Lite pull consumer.
    auto_commit: bool = Field(True, alias="autoCommit")
    auto_commit_interval_ms: int = Field(5_000, alias="autoCommitIntervalMillis", ge=10)
    poll_timeout_ms: int = Field(5_000, alias="pollTimeoutMillis", ge=0)
    pull_threshold_for_all: int = Field(10_000, alias="pullThresholdForAll", ge=1)
    topic_metadata_check_interval_ms: int = Field(30_000, alias="topicMetadataCheckIntervalMillis", ge=10)

    @field_validator("message_model", mode="before")
    @classmethod
    def _model_by_name(cls, value: Any) -> Any:
        return (
            MessageModel[value.upper()]
            if isinstance(value, str) and value.upper() in MessageModel.__members__
            else value
        )

    @field_validator("consume_from_where", mode="before")
    @classmethod
    def _where_by_name(cls, value: Any) -> Any:
        if isinstance(value, str) and value.upper() in ConsumeFromWhere.__members__:
            return ConsumeFromWhere[value.upper()]
        return value

    def effective_consume_timeout_ms(self) -> int:
        return (
            self.consume_timeout_ms
            if self.consume_timeout_ms is not None
            else self.consume_timeout_min * 60_000
        )

    def effective_max_reconsume_times(self, orderly: bool) -> int:
        if self.max_reconsume_times >= 0:
            return self.max_reconsume_times
        return 0x7FFFFFFF if orderly else 16
