"""ConsumeQueueTable: every consume queue of the store, by topic and queue id, under consumequeue/.

Port of DefaultMessageStore.consumeQueueTable with findConsumeQueue, loadConsumeQueue and the per-topic
deletion of cleanUnusedTopic/deleteTopics. Directory layout: consumequeue/{topic}/{queueId}/{20 digits}.
Every queue maps its files within one MappingBudget (mapping_budget.py); `release_idle` unmaps the files
of queues idle since its last call.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

from rocketq.store.consume_queue import ConsumeQueue
from rocketq.store.mapping_budget import MappingBudget

log = logging.getLogger("rocketq.store")


class ConsumeQueueTable:
    def __init__(self, root: Path, file_size: int, max_mapped_files: int = 0) -> None:
        self.root = root
        self.file_size = file_size
        self.budget = MappingBudget(max_mapped_files)
        self._queues: dict[tuple[str, int], ConsumeQueue] = {}
        self._by_topic: dict[str, dict[int, ConsumeQueue]] = {}
        self.get_by_key = self._queues.get  # (topic, queue id) -> queue, for the put path

    def load(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        for topic in sorted(os.listdir(self.root)):
            topic_dir = self.root / topic
            if not topic_dir.is_dir():
                continue
            for name in sorted(os.listdir(topic_dir)):
                if not name.isdigit() or not (topic_dir / name).is_dir():
                    log.warning("ignoring %s: not a queue directory", topic_dir / name)
                    continue
                queue = ConsumeQueue(topic, int(name), topic_dir / name, self.file_size, self.budget)
                queue.load()
                self._add(queue)

    def _add(self, queue: ConsumeQueue) -> None:
        self._queues[(queue.topic, queue.queue_id)] = queue
        self._by_topic.setdefault(queue.topic, {})[queue.queue_id] = queue

    def get(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self._queues.get((topic, queue_id))

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        queue = self._queues.get((topic, queue_id))
        if queue is None:
            queue = ConsumeQueue(
                topic, queue_id, self.root / topic / str(queue_id), self.file_size, self.budget
            )
            self._add(queue)
        return queue

    def __iter__(self) -> Iterator[ConsumeQueue]:
        return iter(list(self._queues.values()))

    def __len__(self) -> int:
        return len(self._queues)

    def topics(self) -> set[str]:
        return set(self._by_topic)

    def queues_of(self, topic: str) -> dict[int, ConsumeQueue]:
        return dict(self._by_topic.get(topic, {}))

    def delete_topic(self, topic: str) -> int:
        """Destroy every queue of `topic`; returns how many there were."""
        queues = self._by_topic.pop(topic, {})
        for queue in queues.values():
            self._queues.pop((topic, queue.queue_id), None)
            queue.destroy()
        try:
            (self.root / topic).rmdir()
        except OSError:
            pass
        return len(queues)

    def flush(self, least_pages: int) -> None:
        """Flush every queue with dirty units (runs on a worker thread)."""
        for queue in list(self._queues.values()):
            if queue.queue.has_unflushed:
                queue.flush(least_pages)

    def durable_below(self, dispatched: int) -> int:
        """Below which commit-log offset every record's unit is flushed, given that the queues hold every
        record below `dispatched` (after a flush; thread-safe). -1 when a queue cannot tell now."""
        durable = dispatched
        for queue in list(self._queues.values()):
            first = queue.first_unflushed_phys()
            if first is None:
                continue
            if first < 0:
                return -1
            durable = min(durable, first)
        return durable

    def release_idle(self) -> int:
        """Unmap the files of every queue idle since the last call (loop thread); returns how many."""
        return sum(queue.release_if_idle() for queue in list(self._queues.values()))

    def close(self) -> None:
        for queue in self._queues.values():
            queue.close()
        self.budget.clear()
