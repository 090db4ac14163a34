"""SubscriptionGroupManager: consumer groups' settings (retry queues and times, consume enable, ...).

Port of org.apache.rocketmq.broker.subscription.SubscriptionGroupManager (4.9.8), persisted as
`<storeRoot>/config/subscriptionGroup.json` in Java's shape (`{"dataVersion":..,
"subscriptionGroupTable":{group: SubscriptionGroupConfig}}`, the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body).
A group asked for and not configured is created with the defaults when autoCreateSubscriptionGroup is
on (the default) or when it is a system group (`CID_RMQ_SYS_` prefix); its retryMaxTimes then comes from
the broker's maxReconsumeTimes (16).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rocketq.broker.config import BrokerConfig
from rocketq.broker.config_file import ConfigFileManager
from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.remoting.protocol.bodies.admin import SubscriptionGroupConfig
from rocketq.remoting.protocol.bodies.register import DataVersion

log = logging.getLogger("rocketq.broker.subscription")

# Groups Java's SubscriptionGroupManager.init() puts in every broker's table.
_BUILT_IN = {
    C.TOOLS_CONSUMER_GROUP: False,
    "FILTERSRV_CONSUMER": False,
    "SELF_TEST_C_GROUP": False,
    "CID_ONS-HTTP-PROXY": True,
    "CID_ONSAPI_PULL": True,
    "CID_ONSAPI_PERMISSION": True,
    "CID_ONSAPI_OWNER": True,
}


def is_sys_consumer_group(group: str) -> bool:
    return group.startswith(C.CID_RMQ_SYS_PREFIX)


class SubscriptionGroupManager(ConfigFileManager):
    file_name = "subscriptionGroup.json"

    def __init__(
        self, broker_config: BrokerConfig, config_dir: str | Path | None = None, clock: Clock = SYSTEM_CLOCK
    ):
        super().__init__(config_dir)
        self._broker_config = broker_config
        self._clock = clock
        self.data_version = DataVersion()
        self.subscription_group_table: dict[str, SubscriptionGroupConfig] = {}
        for group, broadcast in _BUILT_IN.items():
            self.subscription_group_table[group] = self._new_config(group, consume_broadcast_enable=broadcast)

    def _new_config(self, group: str, **overrides: Any) -> SubscriptionGroupConfig:
        config = SubscriptionGroupConfig(
            group_name=group, retry_max_times=self._broker_config.max_reconsume_times
        )
        for name, value in overrides.items():
            setattr(config, name, value)
        return config

    def find_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, created with the defaults when auto-creation allows it; None otherwise."""
        config = self.subscription_group_table.get(group)
        if config is None and (
            self._broker_config.auto_create_subscription_group or is_sys_consumer_group(group)
        ):
            config = self.subscription_group_table[group] = self._new_config(group)
            log.info("auto-created subscription group %s", group)
            self.data_version.next_version(self._clock.now_ms())
            self.mark_dirty()
        return config

    def update_subscription_group_config(self, config: SubscriptionGroupConfig) -> None:
        old = self.subscription_group_table.get(config.group_name)
        self.subscription_group_table[config.group_name] = config
        if old is not None:
            log.info("updated subscription group, old %s, new %s", old, config)
        else:
            log.info("created subscription group %s", config)
        self.data_version.next_version(self._clock.now_ms())
        self.mark_dirty()

    def delete_subscription_group_config(self, group: str) -> bool:
        old = self.subscription_group_table.pop(group, None)
        if old is None:
            log.warning("delete subscription group %s: no such group", group)
            return False
        log.info("deleted subscription group %s", old)
        self.data_version.next_version(self._clock.now_ms())
        self.mark_dirty()
        return True

    def disable_consume(self, group: str) -> None:
        config = self.subscription_group_table.get(group)
        if config is not None:
            config.consume_enable = False
            self.data_version.next_version(self._clock.now_ms())
            self.mark_dirty()

    # -- persistence --------------------------------------------------------------------------------
    def encode(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "subscriptionGroupTable": {g: c.to_json() for g, c in self.subscription_group_table.items()},
        }

    def decode(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        table = data.get("subscriptionGroupTable")
        if isinstance(table, dict):
            for group, raw in table.items():
                config = SubscriptionGroupConfig.from_json(raw)
                if not config.group_name:
                    config.group_name = str(group)
                self.subscription_group_table[str(group)] = config
        self.data_version.assign_new_one(DataVersion.from_json(data.get("dataVersion")))
