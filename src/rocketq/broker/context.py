"""BrokerContext: the broker's components as the processors see them (what Java passes as BrokerController).

The controller builds one and hands it to every processor; tests build one with fakes. It holds no
logic beyond the few derived values every processor needs (addresses), and the hooks through which a
processor asks the controller for something that involves the network (re-register with the NameServers,
notify a consumer group) without importing the controller.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketq.broker.filter.registry import ConsumerFilterManager
from rocketq.broker.stats.counters import BrokerStatsManager
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.remoting.errors import RemotingSendRequestError
from rocketq.remoting.protocol.command import RemotingCommand

if (
    TYPE_CHECKING
):  # for annotations only: most of these modules import this one (they are built with a context)
    from rocketq.broker.clients import ConsumerManager, ProducerManager
    from rocketq.broker.config import BrokerConfig
    from rocketq.broker.long_polling import PullRequestHoldService
    from rocketq.broker.metrics import BrokerMetrics
    from rocketq.broker.offsets import ConsumerOffsetManager
    from rocketq.broker.pop.service import PopService
    from rocketq.broker.processors.common import Connection
    from rocketq.broker.rebalance_lock import RebalanceLockManager
    from rocketq.broker.subscription_group import SubscriptionGroupManager
    from rocketq.broker.topic_config import TopicConfigManager
    from rocketq.broker.transaction.service import TransactionalMessageService
    from rocketq.remoting.acl.plain_config import PlainAclConfig
    from rocketq.store.config import MessageStoreConfig
    from rocketq.store.delay import DelayLevels
    from rocketq.store.protocols import MessageStoreAPI
    from rocketq.store.schedule import ScheduleMessageService
    from rocketq.store.timer import TimerMessageService


def _noop(*_args: object) -> None:
    return None


async def _noop_async(*_args: object) -> None:
    return None


async def _no_client_calls(*_args: object) -> RemotingCommand:
    raise RemotingSendRequestError("this broker context is not wired to a remoting server")


async def _no_client_tells(*_args: object) -> None:
    raise RemotingSendRequestError("this broker context is not wired to a remoting server")


@dataclass(slots=True)
class BrokerContext:
    broker_config: BrokerConfig
    store_config: MessageStoreConfig
    store: MessageStoreAPI
    topic_config_manager: TopicConfigManager
    subscription_group_manager: SubscriptionGroupManager
    consumer_offset_manager: ConsumerOffsetManager
    consumer_manager: ConsumerManager
    producer_manager: ProducerManager
    rebalance_lock_manager: RebalanceLockManager
    delay_levels: DelayLevels
    clock: Clock = SYSTEM_CLOCK
    pull_hold_service: PullRequestHoldService | None = None
    # The bound remoting port (differs from broker_config.listen_port when that is 0).
    port: int = 0
    # Hooks into the controller (no-ops until it wires them):
    register_broker_all: Callable[[], None] = field(default=_noop)
    register_increment: Callable[..., Awaitable[None]] = field(default=_noop_async)
    on_broker_config_changed: Callable[[set[str]], None] = field(default=_noop)
    # A request to a client over its connection, answered (Broker2Client.call_client; 307 / 309).
    call_client: Callable[[Connection, RemotingCommand, float], Awaitable[RemotingCommand]] = field(
        default=_no_client_calls
    )
    # A oneway request to a client over its connection (Broker2Client.tell_client; 220).
    tell_client: Callable[[Connection, RemotingCommand], Awaitable[None]] = field(default=_no_client_tells)
    boot_timestamp_ms: int = 0
    # ACL accounts when aclEnable, else None.
    acl_config: PlainAclConfig | None = None
    # Message lifecycle services (broker/message_lifecycle.py; None until the controller builds them):
    schedule_service: ScheduleMessageService | None = None
    timer_service: TimerMessageService | None = None
    pop_service: PopService | None = None
    # Transactions (broker/transaction/runtime.py; None until the controller builds them):
    transaction_service: TransactionalMessageService | None = None
    # SQL92 expressions of consumer groups, fed by heartbeats, read by pulls (use filter_manager()).
    consumer_filter_manager: ConsumerFilterManager = field(default_factory=ConsumerFilterManager)
    # Traffic counters (broker/stats); the controller's BrokerStatsService replaces it with its own.
    stats: BrokerStatsManager = field(default_factory=BrokerStatsManager)
    # Prometheus counters (broker/metrics.py), None unless metricsExporterType=PROM.
    metrics: BrokerMetrics | None = None

    def filter_manager(self) -> ConsumerFilterManager:
        """The consumer filter manager, following enablePropertyFilter / filterSupportRetry as they change."""
        manager = self.consumer_filter_manager
        manager.enable_property_filter = self.broker_config.enable_property_filter
        manager.filter_support_retry = self.broker_config.filter_support_retry
        return manager

    @property
    def broker_addr(self) -> str:
        """brokerIP1:port, what the NameServers route to and what STOREHOST holds."""
        return f"{self.broker_config.broker_ip1}:{self.port or self.broker_config.listen_port}"

    @property
    def store_host(self) -> tuple[str, int]:
        return self.broker_config.broker_ip1, self.port or self.broker_config.listen_port

    @property
    def max_message_size(self) -> int:
        return self.store_config.max_message_size_bytes
