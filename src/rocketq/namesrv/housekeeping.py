"""BrokerHousekeeping: a closed, failed or idle connection removes the broker registered over it at once.

Port of org.apache.rocketmq.namesrv.routeinfo.BrokerHousekeepingService (4.9.8). Listener callbacks
run on the NameServer's loop, the same one that runs the processors, so the tables need no lock.
"""

from __future__ import annotations

import logging

from rocketq.namesrv.route_info import RouteInfoManager
from rocketq.remoting.transport import Connection, ConnectionListener

log = logging.getLogger("rocketq.namesrv")


class BrokerHousekeeping(ConnectionListener):
    def __init__(self, routes: RouteInfoManager) -> None:
        self.routes = routes

    def _destroyed(self, conn: Connection, why: str) -> None:
        removed = self.routes.on_connection_closed(conn.remote_addr, conn)
        if removed is not None:
            log.info("broker %s removed: its connection %s %s", removed, conn.remote_addr, why)

    def on_close(self, conn: Connection) -> None:
        self._destroyed(conn, "closed")

    def on_exception(self, conn: Connection) -> None:
        self._destroyed(conn, "failed")

    def on_idle(self, conn: Connection) -> None:
        self._destroyed(conn, "went idle")
