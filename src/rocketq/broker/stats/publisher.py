"""BrokerStatsService: every statsInterval, close the stats window and write it to the stats topics.

No Java counterpart (RocketMQ logs these figures or exports them as 5.x metrics; see records.py).
The three stats topics (rmq_sys_broker_stats_topic / _group / _broker, one queue each) are created
as system topics before the broker first registers, so they are routed and readable like any topic.
Windows end on multiples of statsInterval (epoch ms), so every broker of a cluster closes its windows
at the same instants; a new statsInterval (UPDATE_BROKER_CONFIG) applies from the next window. Only a
master publishes (a slave's store takes no puts); its window is still closed, so counts never pile up.
A put the store refuses is logged once per outage and the rest of that round is dropped.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from rocketq.broker.offsets import split_key
from rocketq.broker.stats.counters import BrokerStatsManager, StatsWindow
from rocketq.broker.stats.records import (
    TOPIC_OF_KIND,
    BrokerIdentity,
    StatsRecord,
    StoreFigures,
    broker_record,
    counted_group,
    group_records,
    queue_lags,
    topic_records,
)
from rocketq.common import constants as C
from rocketq.common.service import PeriodicService
from rocketq.common.tags import java_hash_code
from rocketq.store.cleanup import disk_used_ratio
from rocketq.store.message import BrokerMessage

if TYPE_CHECKING:
    from rocketq.broker.context import BrokerContext

log = logging.getLogger("rocketq.broker.stats")

STATS_TOPIC_QUEUES = 1
_RW = C.PermName.PERM_READ | C.PermName.PERM_WRITE


def next_window_end(now_ms: int, interval_ms: int) -> int:
    """The next multiple of `interval_ms` at least half an interval after `now_ms`."""
    return ((now_ms + interval_ms // 2) // interval_ms + 1) * interval_ms


class BrokerStatsService:
    """Owns the broker's BrokerStatsManager (ctx.stats) and publishes its windows."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.manager = BrokerStatsManager(ctx.clock)
        ctx.stats = self.manager
        self.manager.gauges = self.runtime_gauges
        self.service: PeriodicService | None = None
        self._failing = False

    def _interval_ms(self) -> int:
        return max(int(self.ctx.broker_config.stats_interval_ms), 1000)

    # -- lifecycle --------------------------------------------------------------------------------
    def create_topics(self) -> None:
        """Create the stats topics (system topics, one queue, read-write) unless they exist."""
        manager = self.ctx.topic_config_manager
        for topic in sorted(TOPIC_OF_KIND.values()):
            manager.system_topics.add(topic)
            manager.create_topic_in_send_message_back_method(topic, STATS_TOPIC_QUEUES, _RW, 0)

    async def start(self) -> None:
        self.create_topics()
        now = self.ctx.clock.now_ms()
        interval = self._interval_ms()
        self.manager.window.start_ms = now  # the first window starts now, not when the manager was built
        first_s = (next_window_end(now, interval) - now) / 1000
        self.service = PeriodicService("broker-stats", interval / 1000, self.publish_once, first_s)
        await self.service.start()

    async def stop(self) -> None:
        if self.service is not None:
            await self.service.stop()

    # -- one round ----------------------------------------------------------------------------------
    async def publish_once(self) -> None:
        await self.publish()

    async def publish(self) -> int:
        """Close the window, write its records; returns how many were stored."""
        now = self.ctx.clock.now_ms()
        if (
            self.service is not None
        ):  # the next round ends on the next boundary (statsInterval may have changed)
            self.service.interval_s = (next_window_end(now, self._interval_ms()) - now) / 1000
        window = self.manager.snapshot(now)
        if not self.ctx.broker_config.is_master:
            return 0
        return await self.put_records(self.build_records(window))

    def identity(self) -> BrokerIdentity:
        cfg = self.ctx.broker_config
        return BrokerIdentity(cfg.broker_cluster_name, cfg.broker_name, self.ctx.broker_addr)

    def build_records(self, window: StatsWindow) -> list[StatsRecord]:
        who = self.identity()
        totals = self.manager.totals
        records = topic_records(who, window, totals.topic_put_msgs)
        records += group_records(
            who, window, self.ctx.store, self.offsets_by_group(), self.manager.excluded_topics
        )
        summary = {
            "put_msgs": totals.put_msgs,
            "get_msgs": totals.get_msgs,
            "put_bytes": totals.put_bytes,
            "get_bytes": totals.get_bytes,
        }
        user_topics = sum(
            1
            for t in self.ctx.topic_config_manager.topic_config_table
            if not self.ctx.topic_config_manager.is_system_topic(t)
        )
        groups = len(self.ctx.subscription_group_manager.subscription_group_table)
        records.append(broker_record(who, window, self.store_figures(), summary, user_topics, groups))
        return records

    def store_figures(self) -> StoreFigures:
        store = self.ctx.store
        max_phy = store.get_max_phy_offset()
        flushed = store.get_flushed_phy_offset()
        root = self.ctx.store_config.store_path_root_dir
        return StoreFigures(
            dispatch_behind_bytes=store.dispatch_behind_bytes(),
            flush_behind_bytes=max(max_phy - flushed, 0),
            disk_used_ratio=disk_used_ratio(Path(root).expanduser()),
            commit_log_min_offset=store.get_min_phy_offset(),
            commit_log_max_offset=max_phy,
        )

    def offsets_by_group(self) -> dict[tuple[str, str], dict[int, int]]:
        """The committed offsets as (group, topic) -> queue -> offset."""
        offsets: dict[tuple[str, str], dict[int, int]] = {}
        for key, queues in self.ctx.consumer_offset_manager.offset_table.items():
            topic_group = split_key(key)
            if topic_group is not None:
                offsets[(topic_group[1], topic_group[0])] = queues
        return offsets

    def runtime_gauges(self) -> dict[str, object]:
        """Store figures and consumer lag for GET_BROKER_RUNTIME_INFO, under the 5.x metric names."""
        figures = self.store_figures()
        lag_messages = lag_latency = 0
        now = self.ctx.clock.now_ms()
        for (group, topic), committed in self.offsets_by_group().items():
            if not counted_group(group, topic, self.manager.excluded_topics):
                continue
            for queue in queue_lags(self.ctx.store, topic, committed, now):
                lag_messages += queue["lagMessages"]
                lag_latency = max(lag_latency, queue["lagLatencyMs"])
        return {
            "rocketmq_storage_dispatch_behind_bytes": figures.dispatch_behind_bytes,
            "rocketmq_storage_flush_behind_bytes": figures.flush_behind_bytes,
            "rocketmq_storage_disk_used_ratio": f"{figures.disk_used_ratio:.4f}",
            "rocketmq_consumer_lag_messages": lag_messages,
            "rocketmq_consumer_lag_latency": lag_latency,
            "statsInterval": self._interval_ms(),
        }

    async def put_records(self, records: list[StatsRecord]) -> int:
        ctx = self.ctx
        now = ctx.clock.now_ms()
        stored = 0
        for record in records:
            msg = BrokerMessage(
                topic=record.topic,
                queue_id=0,
                body=record.encode(),
                properties={C.PROPERTY_KEYS: record.key, C.PROPERTY_TAGS: record.kind},
                tags_code=java_hash_code(record.kind),
                born_timestamp=now,
                born_host=ctx.store_host,
                store_host=ctx.store_host,
            )
            result = await ctx.store.put_message(msg)
            if not result.is_ok:
                if not self._failing:
                    log.warning(
                        "publishing broker stats failed (%s); retrying next window", result.status.value
                    )
                self._failing = True
                return stored
            stored += 1
        if self._failing:
            log.info("publishing broker stats works again")
            self._failing = False
        return stored
