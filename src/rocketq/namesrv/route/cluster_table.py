"""Cluster table: cluster name -> broker names (RouteInfoManager.clusterAddrTable)."""

from __future__ import annotations


class ClusterTable:
    __slots__ = ("_table",)

    def __init__(self) -> None:
        self._table: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._table)

    def add(self, cluster: str, broker_name: str) -> None:
        self._table.setdefault(cluster, set()).add(broker_name)

    def broker_names(self, cluster: str) -> set[str]:
        return set(self._table.get(cluster, ()))

    def remove(self, broker_name: str, cluster: str | None = None) -> str | None:
        """Drop the broker name from `cluster` (or from whichever cluster holds it); an emptied
        cluster goes too. Returns the cluster it was removed from."""
        names = [cluster] if cluster is not None else list(self._table)
        for name in names:
            members = self._table.get(name)
            if members is None or broker_name not in members:
                continue
            members.discard(broker_name)
            if not members:
                del self._table[name]
            return name
        return None

    def snapshot(self) -> dict[str, list[str]]:
        return {cluster: sorted(names) for cluster, names in self._table.items()}

    def clusters(self) -> list[str]:
        return list(self._table)
