"""ConsumerOffsetManager: committed consumer offsets, `topic@group` -> queueId -> next offset to consume.

Port of org.apache.rocketmq.broker.offset.ConsumerOffsetManager (4.9.8), persisted as
`<storeRoot>/config/consumerOffset.json` in Java's shape `{"offsetTable": {"T@g": {"0": 10}}}` (keys
quoted, which Java's reader accepts). Deviation: a committed negative offset (clients commit -1 for "no
offset yet") removes the entry instead of storing -1; QUERY_CONSUMER_OFFSET then answers exactly as
Java does for -1 (not found).
"""

from __future__ import annotations

import logging
from typing import Any

from rocketq.broker.config_file import ConfigFileManager

log = logging.getLogger("rocketq.broker.offsets")

TOPIC_GROUP_SEPARATOR = "@"


def offset_key(topic: str, group: str) -> str:
    return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"


def split_key(key: str) -> tuple[str, str] | None:
    """(topic, group) of a table key, None when it is malformed. Topics and groups never hold '@'."""
    parts = key.split(TOPIC_GROUP_SEPARATOR)
    return (parts[0], parts[1]) if len(parts) == 2 else None


class ConsumerOffsetManager(ConfigFileManager):
    file_name = "consumerOffset.json"

    def __init__(self, config_dir: str | None = None) -> None:
        super().__init__(config_dir)
        self.offset_table: dict[str, dict[int, int]] = {}

    # -- commit / query -----------------------------------------------------------------------------
    def commit_offset(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = offset_key(topic, group)
        queues = self.offset_table.get(key)
        if offset < 0:
            if queues is not None and queues.pop(queue_id, None) is not None:
                if not queues:
                    del self.offset_table[key]
                self.mark_dirty(urgent=False)
            return
        if queues is None:
            queues = self.offset_table[key] = {}
        previous = queues.get(queue_id)
        if previous == offset:
            return
        queues[queue_id] = offset
        if previous is not None and offset < previous:
            log.info(
                "offset of %s queue %d moved back from %d to %d by %s",
                key,
                queue_id,
                previous,
                offset,
                client_host,
            )
        self.mark_dirty(urgent=False)

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group has none for that queue."""
        queues = self.offset_table.get(offset_key(topic, group))
        if queues is None:
            return -1
        return queues.get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.offset_table.get(offset_key(topic, group), {}))

    # -- admin views ----------------------------------------------------------------------------------
    def which_topics_by_consumer(self, group: str) -> set[str]:
        return {tg[0] for key in self.offset_table if (tg := split_key(key)) is not None and tg[1] == group}

    def which_groups_by_topic(self, topic: str) -> set[str]:
        return {tg[1] for key in self.offset_table if (tg := split_key(key)) is not None and tg[0] == topic}

    def remove_offset(self, group: str) -> None:
        """Drop every offset of `group` (DELETE_SUBSCRIPTIONGROUP with removeOffset)."""
        doomed = [k for k in self.offset_table if (tg := split_key(k)) is not None and tg[1] == group]
        for key in doomed:
            del self.offset_table[key]
            log.warning("removed the offsets of %s", key)
        if doomed:
            self.mark_dirty()

    def remove_topic(self, topic: str) -> None:
        """Drop every group's offsets of `topic` (the topic was deleted)."""
        doomed = [k for k in self.offset_table if (tg := split_key(k)) is not None and tg[0] == topic]
        for key in doomed:
            del self.offset_table[key]
        if doomed:
            self.mark_dirty()

    def clone_offset(self, src_group: str, dest_group: str, topic: str) -> None:
        offsets = self.offset_table.get(offset_key(topic, src_group))
        if offsets is not None:
            self.offset_table[offset_key(topic, dest_group)] = dict(offsets)
            self.mark_dirty()

    # -- persistence ----------------------------------------------------------------------------------
    def encode(self) -> dict[str, Any]:
        return {
            "offsetTable": {
                key: {str(qid): off for qid, off in sorted(queues.items())}
                for key, queues in self.offset_table.items()
            }
        }

    def decode(self, data: Any) -> None:
        table = data.get("offsetTable") if isinstance(data, dict) else None
        if not isinstance(table, dict):
            return
        loaded: dict[str, dict[int, int]] = {}
        for key, queues in table.items():
            if not isinstance(queues, dict) or split_key(str(key)) is None:
                log.warning("ignoring malformed offset entry %r", key)
                continue
            entry: dict[int, int] = {}
            for qid, off in queues.items():
                try:
                    queue_id, offset = int(qid), int(off)
                except (TypeError, ValueError):
                    log.warning("ignoring malformed offset %r=%r of %s", qid, off, key)
                    continue
                if offset >= 0:
                    entry[queue_id] = offset
            if entry:
                loaded[str(key)] = entry
        self.offset_table = loaded
