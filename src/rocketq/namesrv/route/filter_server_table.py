"""Filter-server table: broker address -> filter server addresses (always empty from 4.9.8 brokers).

Kept because TopicRouteData.filterServerTable is on the wire and old brokers may still send a list.
"""

from __future__ import annotations

from collections.abc import Iterable


class FilterServerTable:
    __slots__ = ("_table",)

    def __init__(self) -> None:
        self._table: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self._table)

    def update(self, broker_addr: str, servers: list[str] | None) -> None:
        """Java rule: None leaves the entry alone, an empty list removes it."""
        if servers is None:
            return
        if servers:
            self._table[broker_addr] = list(servers)
        else:
            self._table.pop(broker_addr, None)

    def remove(self, broker_addr: str) -> None:
        self._table.pop(broker_addr, None)

    def for_addrs(self, addrs: Iterable[str]) -> dict[str, list[str]]:
        return {addr: list(self._table[addr]) for addr in addrs if addr in self._table}
