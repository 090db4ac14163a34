"""Broker table: broker name -> BrokerData (cluster, addresses by broker id) (RouteInfoManager.brokerAddrTable)."""

from __future__ import annotations

from typing import NamedTuple

from rocketq.remoting.protocol.bodies.route import BrokerData


class AddrRemoval(NamedTuple):
    """Result of removing one address: the broker name it belonged to, and whether that name is gone."""

    broker_name: str | None
    name_removed: bool


class BrokerTable:
    __slots__ = ("_table",)

    def __init__(self) -> None:
        self._table: dict[str, BrokerData] = {}

    def __len__(self) -> int:
        return len(self._table)

    def get(self, broker_name: str) -> BrokerData | None:
        return self._table.get(broker_name)

    def items(self) -> list[tuple[str, BrokerData]]:
        return list(self._table.items())

    def put_addr(self, cluster: str, broker_name: str, broker_id: int, broker_addr: str) -> bool:
        """Map `broker_id` to `broker_addr`; True on a first registration of that name or id.

        Rule (slave switched to master): one address holds one id, so any other id mapped to
        `broker_addr` is removed first.
        """
        data = self._table.get(broker_name)
        first = data is None
        if data is None:
            data = BrokerData(cluster=cluster, broker_name=broker_name)
            self._table[broker_name] = data
        for other_id, addr in list(data.broker_addrs.items()):
            if addr == broker_addr and other_id != broker_id:
                del data.broker_addrs[other_id]
        old = data.broker_addrs.get(broker_id)
        data.broker_addrs[broker_id] = broker_addr
        return first or old is None

    def remove_id(self, broker_name: str, broker_id: int) -> AddrRemoval:
        """Drop one id of a broker name (UNREGISTER_BROKER); the name goes when no id is left."""
        data = self._table.get(broker_name)
        if data is None:
            return AddrRemoval(None, False)
        data.broker_addrs.pop(broker_id, None)
        if data.broker_addrs:
            return AddrRemoval(broker_name, False)
        del self._table[broker_name]
        return AddrRemoval(broker_name, True)

    def remove_addr(self, broker_addr: str) -> AddrRemoval:
        """Drop the address wherever it is mapped (connection closed or expired)."""
        for name, data in list(self._table.items()):
            ids = [broker_id for broker_id, addr in data.broker_addrs.items() if addr == broker_addr]
            if not ids:
                continue
            for broker_id in ids:
                del data.broker_addrs[broker_id]
            if data.broker_addrs:
                return AddrRemoval(name, False)
            del self._table[name]
            return AddrRemoval(name, True)
        return AddrRemoval(None, False)

    def has_addr(self, broker_addr: str) -> bool:
        return any(broker_addr in data.broker_addrs.values() for data in self._table.values())

    def first_addr(self) -> str | None:
        """Some registered address (GET_SYSTEM_TOPIC_LIST_FROM_NS names one in `brokerAddr`)."""
        for data in self._table.values():
            for addr in data.broker_addrs.values():
                return addr
        return None

    def snapshot(self) -> dict[str, BrokerData]:
        return {name: data.copy() for name, data in self._table.items()}
