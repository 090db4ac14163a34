"""The broker's one table of request code -> (processor, executor).

Port of org.apache.rocketmq.broker.BrokerController.registerProcessor (4.9.8): each family has its own
bounded executor, as Java has its own thread pool per family (send, pull, query, client manage,
heartbeat, consumer manage, admin), so a flood of one kind answers SYSTEM_BUSY without starving the
others. Codes no processor owns are answered REQUEST_CODE_NOT_SUPPORTED by the transport. Registering a
code twice raises at start-up (the transport refuses it), and a unit test checks that every supported
code has exactly one owner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.ack import AckMessageProcessor
from rocketq.broker.processors.admin.acl import AclAdminProcessor
from rocketq.broker.processors.admin.consumer import ConsumerAdminProcessor
from rocketq.broker.processors.admin.delay import DelayOffsetAdminProcessor
from rocketq.broker.processors.admin.locks import LockAdminProcessor
from rocketq.broker.processors.admin.offset import OffsetAdminProcessor
from rocketq.broker.processors.admin.reset_offset import ResetOffsetProcessor
from rocketq.broker.processors.admin.runtime import RuntimeAdminProcessor
from rocketq.broker.processors.admin.stats import StatsAdminProcessor
from rocketq.broker.processors.admin.subscription import SubscriptionAdminProcessor
from rocketq.broker.processors.admin.topic import TopicAdminProcessor
from rocketq.broker.processors.client_manage import ClientManageProcessor
from rocketq.broker.processors.common import Processor
from rocketq.broker.processors.consumer_manage import ConsumerManageProcessor
from rocketq.broker.processors.end_transaction import EndTransactionProcessor
from rocketq.broker.processors.pop import PopMessageProcessor
from rocketq.broker.processors.pull import PullMessageProcessor
from rocketq.broker.processors.query import QueryMessageProcessor
from rocketq.broker.processors.reply import ReplyMessageProcessor
from rocketq.broker.processors.send import SendMessageProcessor
from rocketq.remoting.protocol.codes import RequestCode as R
from rocketq.remoting.transport.dispatch import Executor

# Every code this broker serves (docs/protocol.md 2.1).
SUPPORTED_CODES: frozenset[int] = frozenset(
    {
        R.SEND_MESSAGE, R.SEND_MESSAGE_V2, R.SEND_BATCH_MESSAGE,
        R.PULL_MESSAGE,
        R.QUERY_MESSAGE, R.VIEW_MESSAGE_BY_ID,
        R.HEART_BEAT, R.UNREGISTER_CLIENT, R.CHECK_CLIENT_CONFIG,
        R.GET_CONSUMER_LIST_BY_GROUP, R.QUERY_CONSUMER_OFFSET, R.UPDATE_CONSUMER_OFFSET,
        R.UPDATE_AND_CREATE_TOPIC, R.DELETE_TOPIC_IN_BROKER, R.GET_ALL_TOPIC_CONFIG,
        R.SEARCH_OFFSET_BY_TIMESTAMP, R.GET_MAX_OFFSET, R.GET_MIN_OFFSET, R.GET_EARLIEST_MSG_STORETIME, R.GET_ALL_CONSUMER_OFFSET,
        R.LOCK_BATCH_MQ, R.UNLOCK_BATCH_MQ,
        R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, R.DELETE_SUBSCRIPTIONGROUP,
        R.GET_BROKER_RUNTIME_INFO, R.GET_TOPIC_STATS_INFO, R.GET_CONSUME_STATS,
        R.GET_BROKER_CONSUME_STATS,  # mqadmin brokerConsumeStats
        R.UPDATE_BROKER_CONFIG, R.GET_BROKER_CONFIG,
        R.GET_CONSUMER_CONNECTION_LIST, R.QUERY_TOPIC_CONSUME_BY_WHO,
        R.GET_PRODUCER_CONNECTION_LIST, R.GET_CONSUMER_RUNNING_INFO, R.CONSUME_MESSAGE_DIRECTLY,
        # consume retry, delay progress, POP (SimpleConsumer)
        R.CONSUMER_SEND_MSG_BACK, R.GET_ALL_DELAY_OFFSET,
        R.POP_MESSAGE, R.ACK_MESSAGE, R.CHANGE_MESSAGE_INVISIBLETIME,
        # transactions
        R.END_TRANSACTION,
        # ACL (mqadmin updateAclConfig, deleteAclConfig, clusterAclConfigVersion, updateGlobalWhiteAddr)
        R.UPDATE_AND_CREATE_ACL_CONFIG, R.DELETE_ACL_CONFIG, R.GET_BROKER_CLUSTER_ACL_INFO,
        R.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, R.GET_BROKER_CLUSTER_ACL_CONFIG,
        # live offset reset (Broker2Client#resetOffset)
        R.INVOKE_BROKER_TO_RESET_OFFSET, R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
        # request-reply (ReplyMessageProcessor)
        R.SEND_REPLY_MESSAGE, R.SEND_REPLY_MESSAGE_V2,
    }
)  # fmt: skip


def _no_wait_bound(config: Any) -> int:
    return 0


def _default_workers(config: Any) -> int:
    return 0


@dataclass(frozen=True, slots=True)
class Family:
    """One request family: its processor class and the executor it runs on.

    `max_wait` is how long a request may wait in the queue before it is answered SYSTEM_BUSY (0: no
    bound); Java's BrokerFastFailure bounds the send, pull, heartbeat and end-transaction queues.
    """

    name: str
    make: Callable[[BrokerContext], Processor]
    workers: int
    capacity: Callable[[Any], int]
    max_wait: Callable[[Any], int] = _no_wait_bound
    workers_setting: Callable[[Any], int] = _default_workers  # a configured worker count (0: `workers`)


# (family, processor, worker tasks, queue bound from BrokerConfig)
# Send: a put that waits for its group commit (SYNC_FLUSH) or its replica (SYNC_MASTER) holds its worker
# while it waits, so the workers bound how many sends one group commit can cover. Java returns the thread
# while the put's future is pending (SendMessageProcessor.asyncProcessRequest); 256 lets a round cover
# what a pipelining producer has in flight (16 made rounds of a few sends: measured under SYNC_FLUSH,
# about 7 times fewer response writes and 10-50 % less broker CPU per send). ASYNC_FLUSH sends never wait.
FAMILIES: tuple[Family, ...] = (
    Family(
        "send",
        SendMessageProcessor,
        256,
        lambda c: c.send_thread_pool_queue_capacity,
        lambda c: c.wait_time_ms_in_send_queue,
        lambda c: c.send_message_thread_pool_nums,
    ),
    # Java: its own replyMessageExecutor (replyThreadPoolQueueCapacity 10000).
    Family("reply", ReplyMessageProcessor, 4, lambda c: c.send_thread_pool_queue_capacity),
    Family(
        "pull",
        PullMessageProcessor,
        4,
        lambda c: c.pull_thread_pool_queue_capacity,
        lambda c: c.wait_time_ms_in_pull_queue,
        lambda c: c.pull_message_thread_pool_nums,
    ),
    Family("query", QueryMessageProcessor, 4, lambda c: c.query_thread_pool_queue_capacity),
    Family(
        "heartbeat",
        ClientManageProcessor,
        4,
        lambda c: c.heartbeat_thread_pool_queue_capacity,
        lambda c: c.wait_time_ms_in_heartbeat_queue,
    ),
    Family(
        "consumer-manage", ConsumerManageProcessor, 4, lambda c: c.consumer_manager_thread_pool_queue_capacity
    ),
    Family("admin-topic", TopicAdminProcessor, 2, lambda c: c.admin_thread_pool_queue_capacity),
    Family("admin-offset", OffsetAdminProcessor, 4, lambda c: c.admin_thread_pool_queue_capacity),
    Family("admin-lock", LockAdminProcessor, 2, lambda c: c.admin_thread_pool_queue_capacity),
    Family("admin-subscription", SubscriptionAdminProcessor, 2, lambda c: c.admin_thread_pool_queue_capacity),
    Family("admin-runtime", RuntimeAdminProcessor, 2, lambda c: c.admin_thread_pool_queue_capacity),
    Family("admin-stats", StatsAdminProcessor, 2, lambda c: c.admin_thread_pool_queue_capacity),
    Family("admin-consumer", ConsumerAdminProcessor, 2, lambda c: c.admin_thread_pool_queue_capacity),
    Family("admin-reset-offset", ResetOffsetProcessor, 1, lambda c: c.admin_thread_pool_queue_capacity),
    Family("admin-delay", DelayOffsetAdminProcessor, 1, lambda c: c.admin_thread_pool_queue_capacity),
    Family("admin-acl", AclAdminProcessor, 1, lambda c: c.admin_thread_pool_queue_capacity),
    # RocketMQ 5 runs POP on its own pool and ACK / CHANGE_INVISIBLETIME on another.
    Family("pop", PopMessageProcessor, 8, lambda c: c.pull_thread_pool_queue_capacity),
    Family("ack", AckMessageProcessor, 16, lambda c: c.pull_thread_pool_queue_capacity),
    # Java: its own endTransactionExecutor, queue bound endTransactionPoolQueueCapacity (100000).
    Family(
        "end-transaction",
        EndTransactionProcessor,
        8,
        lambda c: 100_000,
        lambda c: c.wait_time_ms_in_transaction_queue,
    ),
)


_FAMILIES_BY_NAME = {family.name: family for family in FAMILIES}

# The BrokerConfig keys apply_fast_failure reads (a change through UPDATE_BROKER_CONFIG applies them again).
FAST_FAILURE_KEYS = frozenset(
    {
        "brokerFastFailureEnable", "waitTimeMillsInSendQueue", "waitTimeMillsInPullQueue",
        "waitTimeMillsInHeartbeatQueue", "waitTimeMillsInTransactionQueue",
    }
)  # fmt: skip


def apply_fast_failure(executor: Executor, config: Any) -> None:
    """Set the executor's queue-wait bound from the config (0 when fast failure is off or not its family)."""
    family = _FAMILIES_BY_NAME.get(executor.name)
    bound = family.max_wait(config) if family is not None and config.broker_fast_failure_enable else 0
    executor.max_wait_ms = bound


@dataclass(frozen=True, slots=True)
class Registration:
    code: int
    processor: Processor
    executor: Executor


def build_registrations(ctx: BrokerContext) -> tuple[list[Registration], dict[str, Processor]]:
    """The code table and the processors by family name; ValueError if a code has two owners."""
    table: dict[int, Registration] = {}
    processors: dict[str, Processor] = {}
    for family in FAMILIES:
        processor = family.make(ctx)
        processors[family.name] = processor
        workers = family.workers_setting(ctx.broker_config) or family.workers
        executor = Executor(family.name, workers, family.capacity(ctx.broker_config))
        apply_fast_failure(executor, ctx.broker_config)
        for code in sorted(processor.codes):
            if code in table:
                raise ValueError(
                    f"request code {code} is claimed by {table[code].executor.name} and {family.name}"
                )
            table[code] = Registration(code, processor, executor)
    return list(table.values()), processors
