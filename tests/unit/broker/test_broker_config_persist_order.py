"""topics.json writes: persist_changes() returns once the change is on disk; an older snapshot never wins."""

from __future__ import annotations

import json
from pathlib import Path

from rocketq.broker.config import BrokerConfig
from rocketq.broker.topic_config import TopicConfigManager
from rocketq.remoting.protocol.bodies.register import TopicConfig


def _topics_on_disk(path: Path) -> set[str]:
    return set(json.loads(path.read_text())["topicConfigTable"])


async def test_persist_changes_writes_before_it_returns_and_only_when_something_changed(
    tmp_path: Path,
) -> None:
    manager = TopicConfigManager(BrokerConfig(), tmp_path)
    manager.update_topic_config(TopicConfig("Orders", 4, 4))
    assert await manager.persist_changes()
    assert "Orders" in _topics_on_disk(tmp_path / "topics.json")
    writes: list[bytes] = []
    original = manager.write
    manager.write = lambda data: (writes.append(data), original(data))  # type: ignore[method-assign, assignment]
    assert await manager.persist_changes()  # nothing changed since: no write
    assert writes == []


def test_an_older_snapshot_written_last_does_not_replace_a_newer_file(tmp_path: Path) -> None:
    """Writer threads may finish out of order: the one holding the older snapshot must not win."""
    manager = TopicConfigManager(BrokerConfig(), tmp_path)
    manager.update_topic_config(TopicConfig("Older", 1, 1))
    older = manager._take_snapshot()
    manager.update_topic_config(TopicConfig("Newer", 1, 1))
    newer = manager._take_snapshot()
    assert older is not None and newer is not None
    manager._write_snapshot(*newer)
    manager._write_snapshot(*older)
    assert "Newer" in _topics_on_disk(tmp_path / "topics.json")
    assert not manager.dirty
