"""Broker live table: broker address -> last registration, DataVersion, connection, HA address.

Port of RouteInfoManager.brokerLiveTable / BrokerLiveInfo. Deviation: times are the injected
clock's monotonic milliseconds, not wall time, so a clock step cannot expire every broker at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.bodies.register import DataVersion


@dataclass(slots=True)
class BrokerLiveInfo:
    last_update_ms: int
    """Monotonic milliseconds of the broker's last REGISTER_BROKER (or unchanged QUERY_DATA_VERSION)."""
    data_version: DataVersion
    """The DataVersion of the topic table it last registered."""
    connection: object | None
    """The connection it registered over (closing it removes the broker); None when unknown."""
    ha_server_addr: str
    """`brokerIP2:haListenPort`, given to its slaves as their master's HA address."""


class LiveTable:
    __slots__ = ("_table",)

    def __init__(self) -> None:
        self._table: dict[str, BrokerLiveInfo] = {}

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, broker_addr: object) -> bool:
        return broker_addr in self._table

    def get(self, broker_addr: str) -> BrokerLiveInfo | None:
        return self._table.get(broker_addr)

    def put(self, broker_addr: str, info: BrokerLiveInfo) -> BrokerLiveInfo | None:
        previous = self._table.get(broker_addr)
        self._table[broker_addr] = info
        return previous

    def remove(self, broker_addr: str) -> BrokerLiveInfo | None:
        return self._table.pop(broker_addr, None)

    def is_changed(self, broker_addr: str, version: DataVersion) -> bool:
        """True when there is no DataVersion for the address or it differs (isBrokerTopicConfigChanged)."""
        info = self._table.get(broker_addr)
        return info is None or info.data_version != version

    def touch(self, broker_addr: str, now_ms: int) -> None:
        info = self._table.get(broker_addr)
        if info is not None:
            info.last_update_ms = now_ms

    def addr_of_connection(self, connection: object) -> str | None:
        for addr, info in self._table.items():
            if info.connection is connection:
                return addr
        return None

    def expired(self, now_ms: int, expiry_ms: int) -> list[tuple[str, BrokerLiveInfo]]:
        """Entries whose last update is more than `expiry_ms` before `now_ms`."""
        return [
            (addr, info) for addr, info in self._table.items() if info.last_update_ms + expiry_ms < now_ms
        ]

    def addrs(self) -> list[str]:
        return list(self._table)
