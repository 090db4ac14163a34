"""KVConfigManager: namespace -> key -> value, persisted after every change with an atomic write.

Port of org.apache.rocketmq.namesrv.kvconfig.KVConfigManager (4.9.8). The file keeps Java's
KVConfigSerializeWrapper shape, `{"configTable":{"ns":{"k":"v"}}}`, so a Java kvConfig.json loads.
Deviation: a file that does not parse is logged and ignored (Java does the same) but the .bak copy
is tried first.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rocketq.common.persist import atomic_write_json, read_json

log = logging.getLogger("rocketq.namesrv")


class KVConfigManager:
    """Holds the NameServer's KV config; `path` None keeps it in memory only (tests)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self._table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        if self.path is None:
            return
        data = read_json(self.path)
        if data is None:
            return
        table = data.get("configTable") if isinstance(data, dict) else None
        if not isinstance(table, dict):
            log.warning("KV config %s has no configTable; ignored", self.path)
            return
        for namespace, items in table.items():
            if isinstance(items, dict):
                self._table[str(namespace)] = {str(k): str(v) for k, v in items.items() if v is not None}
        log.info("load KV config table OK (%d namespaces)", len(self._table))

    def persist(self) -> None:
        if self.path is None:
            return
        try:
            atomic_write_json(self.path, {"configTable": self._table})
        except OSError as exc:
            log.error("persist kvconfig %s failed: %s", self.path, exc)

    def put(self, namespace: str, key: str, value: str) -> None:
        items = self._table.setdefault(namespace, {})
        previous = items.get(key)
        items[key] = value
        log.info(
            "putKVConfig %s config item, Namespace: %s Key: %s Value: %s",
            "update" if previous is not None else "create new",
            namespace,
            key,
            value,
        )
        self.persist()

    def get(self, namespace: str, key: str) -> str | None:
        return self._table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        items = self._table.get(namespace)
        if items is not None and key in items:
            value = items.pop(key)
            log.info(
                "deleteKVConfig delete a config item, Namespace: %s Key: %s Value: %s", namespace, key, value
            )
        self.persist()

    def namespace(self, namespace: str) -> dict[str, str] | None:
        """A copy of the namespace's table; None when the namespace was never created.

        As in Java an emptied namespace stays (an empty table, not None).
        """
        items = self._table.get(namespace)
        return None if items is None else dict(items)
