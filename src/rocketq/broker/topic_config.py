"""TopicConfigManager: the broker's topics, their auto-creation and the data version NameServers see.

Port of org.apache.rocketmq.broker.topic.TopicConfigManager (4.9.8), persisted as
`<storeRoot>/config/topics.json` (a TopicConfigSerializeWrapper, the same JSON GET_ALL_TOPIC_CONFIG
returns). System topics are put in the table first, as Java's constructor does, and a loaded file then
overrides them. Topics created here from a send (createTopicInSendMessageMethod) or for a consumer group
(retry/DLQ: createTopicInSendMessageBackMethod) bump the data version, persist, and ask the controller
for a full registration with every NameServer (`on_topics_changed`), as Java's registerBrokerAll does.
Deviation: TopicValidator's static system-topic set is per manager (`system_topics`), so two brokers in
one process (tests) do not share it.
"""

from __future__ import annotations

import logging
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketq.broker.config import BrokerConfig
from rocketq.broker.config_file import ConfigFileManager
from rocketq.common import constants as C
from rocketq.common.clock import SYSTEM_CLOCK, Clock
from rocketq.common.constants import PermName
from rocketq.remoting.protocol.bodies.register import (
    DataVersion,
    KVTable,
    TopicConfig,
    TopicConfigSerializeWrapper,
)

log = logging.getLogger("rocketq.broker.topic")

SCHEDULE_TOPIC_QUEUE_NUM = 18
RW = PermName.PERM_READ | PermName.PERM_WRITE
RWX = RW | PermName.PERM_INHERIT

# Java TopicSysFlag: unit-mode bits, set on topics created for unit-mode clients.
FLAG_UNIT = 0x1
FLAG_UNIT_SUB = 0x2


def build_topic_sys_flag(unit: bool, has_unit_sub: bool) -> int:
    return (FLAG_UNIT if unit else 0) | (FLAG_UNIT_SUB if has_unit_sub else 0)


_VALID_CHARS = frozenset("%|-_" + string.ascii_letters + string.digits)
DEFAULT_QUEUE_NUMS = 16  # Java TopicConfig.defaultReadQueueNums / defaultWriteQueueNums


# The remark texts are Java TopicValidator's, with the topic named.
def topic_problem(topic: str | None) -> str | None:
    """Why `topic` may not be used (TopicValidator.validateTopic), or None when it is fine."""
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if any(ch not in _VALID_CHARS for ch in topic):
        return f"The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > C.TOPIC_MAX_LENGTH:
        return f"The specified topic[{topic[:32]}...] is longer than topic max length {C.TOPIC_MAX_LENGTH}."
    return None


class TopicConfigManager(ConfigFileManager):
    file_name = "topics.json"

    def __init__(
        self, broker_config: BrokerConfig, config_dir: str | Path | None = None, clock: Clock = SYSTEM_CLOCK
    ):
        super().__init__(config_dir)
        self._broker_config = broker_config
        self._clock = clock
        self.topic_config_table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion()
        self.system_topics: set[str] = set(C.SYSTEM_TOPICS) | {C.RMQ_SYS_TRANS_HALF_TOPIC}
        # Called after a topic was created outside an admin request: the controller re-registers.
        self.on_topics_changed: Callable[[], None] | None = None
        self._init_system_topics()

    # -- system topics ------------------------------------------------------------------------------
    def _put_system(self, name: str, queues: int = DEFAULT_QUEUE_NUMS, perm: int = RW) -> None:
        self.system_topics.add(name)
        self.topic_config_table[name] = TopicConfig(
            topic_name=name, read_queue_nums=queues, write_queue_nums=queues, perm=perm
        )

    def _init_system_topics(self) -> None:
        cfg = self._broker_config
        self._put_system(C.RMQ_SYS_SELF_TEST_TOPIC, 1)
        if cfg.auto_create_topic_enable:
            self._put_system(C.AUTO_CREATE_TOPIC_KEY_TOPIC, cfg.default_topic_queue_nums, RWX)
        self._put_system(C.RMQ_SYS_BENCHMARK_TOPIC, 1024)
        cluster_perm = PermName.PERM_INHERIT | (RW if cfg.cluster_topic_enable else 0)
        self._put_system(cfg.broker_cluster_name, DEFAULT_QUEUE_NUMS, cluster_perm)
        broker_perm = PermName.PERM_INHERIT | (RW if cfg.broker_topic_enable else 0)
        self._put_system(cfg.broker_name, 1, broker_perm)
        self._put_system(C.RMQ_SYS_OFFSET_MOVED_EVENT, 1)
        self._put_system(C.RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM)
        if cfg.trace_topic_enable:
            self._put_system(cfg.msg_trace_topic_name, 1)
        self._put_system(f"{cfg.broker_cluster_name}_{C.REPLY_TOPIC_POSTFIX}", 1)

    def is_system_topic(self, topic: str) -> bool:
        return topic in self.system_topics or topic.startswith(C.SYSTEM_TOPIC_PREFIX)

    # -- look-ups -------------------------------------------------------------------------------------
    def select_topic_config(self, topic: str) -> TopicConfig | None:
        return self.topic_config_table.get(topic)

    def is_order_topic(self, topic: str) -> bool:
        tc = self.topic_config_table.get(topic)
        return tc is not None and tc.order

    # -- creation -------------------------------------------------------------------------------------
    def create_topic_in_send_message_method(
        self,
        topic: str,
        default_topic: str,
        remote_addr: str,
        client_default_queue_nums: int,
        topic_sys_flag: int,
    ) -> TopicConfig | None:
        """Create `topic` from its template `default_topic` (TBW102) when the template may be inherited."""
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        template = self.topic_config_table.get(default_topic)
        if template is None:
            log.warning(
                "cannot create topic %s: the default topic %s does not exist (producer %s)",
                topic,
                default_topic,
                remote_addr,
            )
            return None
        if (
            default_topic == C.AUTO_CREATE_TOPIC_KEY_TOPIC
            and not self._broker_config.auto_create_topic_enable
        ):
            template.perm = RW  # Java strips INHERIT from a TBW102 left over from when auto-create was on
        if not PermName.is_inherited(template.perm):
            log.warning(
                "cannot create topic %s: the default topic %s has perm %d, no INHERIT (producer %s)",
                topic,
                default_topic,
                template.perm,
                remote_addr,
            )
            return None
        queues = max(0, min(client_default_queue_nums, template.write_queue_nums))
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=template.perm & ~PermName.PERM_INHERIT,
            topic_filter_type=template.topic_filter_type,
            topic_sys_flag=topic_sys_flag,
        )
        log.info(
            "created topic %s from default topic %s for producer %s: %s",
            topic,
            default_topic,
            remote_addr,
            config,
        )
        self._created(config)
        return config

    def create_topic_in_send_message_back_method(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int
    ) -> TopicConfig:
        """Create a retry / DLQ (or other internal) topic with the given shape if it does not exist."""
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=perm,
            topic_sys_flag=topic_sys_flag,
        )
        log.info("created topic %s", config)
        self._created(config)
        return config

    def _created(self, config: TopicConfig) -> None:
        self.topic_config_table[config.topic_name] = config
        self.data_version.next_version(self._clock.now_ms())
        self.mark_dirty()
        if self.on_topics_changed is not None:
            self.on_topics_changed()

    # -- admin changes (the admin processor registers the change incrementally itself) ------------------
    def update_topic_config(self, config: TopicConfig) -> None:
        old = self.topic_config_table.get(config.topic_name)
        self.topic_config_table[config.topic_name] = config
        if old is not None:
            log.info("updated topic config, old %s, new %s", old, config)
        else:
            log.info("created topic %s", config)
        self.data_version.next_version(self._clock.now_ms())
        self.mark_dirty()

    def delete_topic_config(self, topic: str) -> bool:
        old = self.topic_config_table.pop(topic, None)
        if old is None:
            log.warning("delete topic %s: no such topic", topic)
            return False
        log.info("deleted topic %s", old)
        self.data_version.next_version(self._clock.now_ms())
        self.mark_dirty()
        return True

    def update_order_topic_config(self, order_table: KVTable | None) -> None:
        """Mark topics ordered or not from the NameServer's ORDER_TOPIC_CONFIG namespace."""
        if order_table is None:
            return
        order_topics = set(order_table.table)
        changed = False
        for name, config in self.topic_config_table.items():
            should = name in order_topics
            if config.order != should:
                config.order = should
                changed = True
                log.info("topic %s is %s ordered", name, "now" if should else "no longer")
        if changed:
            self.data_version.next_version(self._clock.now_ms())
            self.mark_dirty()

    # -- serialization ----------------------------------------------------------------------------------
    def build_serialize_wrapper(self) -> TopicConfigSerializeWrapper:
        """The whole table with its data version (registration, GET_ALL_TOPIC_CONFIG); shares the objects."""
        return TopicConfigSerializeWrapper(
            topic_config_table=dict(self.topic_config_table), data_version=self.data_version.copy()
        )

    def encode(self) -> dict[str, Any]:
        return self.build_serialize_wrapper().to_json()

    def decode(self, data: Any) -> None:
        wrapper = TopicConfigSerializeWrapper.from_json(data)
        self.topic_config_table.update(wrapper.topic_config_table)
        self.data_version.assign_new_one(wrapper.data_version)
        for config in wrapper.topic_config_table.values():
            log.debug("loaded topic %s", config)
        log.info(
            "loaded %d topics, data version %s",
            len(wrapper.topic_config_table),
            wrapper.data_version.to_json(),
        )
