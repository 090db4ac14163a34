"""KVConfigManager: namespaces, persistence in Java's file shape, reload."""

from __future__ import annotations

import json
from pathlib import Path

from rocketq.namesrv.kv_config import KVConfigManager


def test_put_get_delete_and_persist(tmp_path: Path) -> None:
    path = tmp_path / "kv" / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.load()
    assert kv.get("ORDER_TOPIC_CONFIG", "T") is None and kv.namespace("ORDER_TOPIC_CONFIG") is None
    kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4")
    assert json.loads(path.read_text()) == {"configTable": {"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}}}
    again = KVConfigManager(path)
    again.load()
    assert again.get("ORDER_TOPIC_CONFIG", "T") == "broker-a:4"
    again.delete("ORDER_TOPIC_CONFIG", "T")
    again.delete("nope", "x")
    assert again.namespace("ORDER_TOPIC_CONFIG") == {}
    assert json.loads(path.read_text()) == {"configTable": {"ORDER_TOPIC_CONFIG": {}}}


def test_bad_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text("[1, 2]")
    kv = KVConfigManager(path)
    kv.load()
    assert kv.namespace("x") is None


def test_in_memory_only() -> None:
    kv = KVConfigManager(None)
    kv.load()
    kv.put("n", "k", "v")
    assert kv.namespace("n") == {"k": "v"}
