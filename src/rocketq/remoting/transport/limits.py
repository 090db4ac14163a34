"""Memory and connection limits a server puts on its peers (what one abusive client may take).

No Java counterpart: Netty's NettyRemotingServer has a frame-size cap, write-buffer water marks and
an idle handler, but nothing that bounds the sum over connections. What is bounded here
(docs/limits.md lists the keys and defaults):

- Input: a frame larger than `RESERVE_ABOVE_BYTES` reserves its announced length from one budget
  shared by every connection (`maxTotalBufferedInputBytes`) when its length field arrives; a
  connection whose frame does not fit stops being read (pause_reading) until other frames complete
  and free their share. Reservations are whole frames, so an admitted frame can always complete:
  partial frames cannot deadlock the budget. Small frames are bounded by the read size already.
- Output: a connection above its high-water mark reports its unsent bytes here each time it is
  answered; once the sum over such connections passes `maxTotalBufferedOutputBytes`, one holding
  more than its share (the cap divided among them) is closed.
- Connections per remote address (`maxConnectionsPerAddress`): one more is closed at once.

Every limit names itself in one log line per offending connection (or address).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("rocketq.remoting")

# Frames up to this size need no reservation: one read holds at most a few of them.
RESERVE_ABOVE_BYTES = 256 * 1024


class BufferBudget:
    """Shared by the connections of one server; input calls come from any io loop (locked)."""

    __slots__ = (
        "_lock",
        "_out",
        "_waiters",
        "input_limit",
        "input_used",
        "output_limit",
        "output_used",
    )

    def __init__(self, input_limit: int, output_limit: int) -> None:
        self.input_limit = input_limit
        self.output_limit = output_limit
        self.input_used = 0
        self.output_used = 0
        self._lock = threading.Lock()
        self._waiters: dict[int, Callable[[], None]] = {}  # insertion-ordered: first come, first retried
        self._out: dict[Any, int] = {}

    # -- input (any io loop) ------------------------------------------------------------------------
    def reserve_input(self, nbytes: int, key: int, retry: Callable[[], None]) -> bool:
        """Take `nbytes` for a frame; False (and `retry` is called once room returns) when it does not fit.

        A frame larger than the whole budget is admitted when nothing else is reserved, so a lone
        large frame is never refused for good.
        """
        with self._lock:
            if self.input_used + nbytes <= self.input_limit or self.input_used == 0:
                self.input_used += nbytes
                self._waiters.pop(key, None)
                return True
            self._waiters[key] = retry
            return False

    def release_input(self, nbytes: int) -> None:
        with self._lock:
            self.input_used = max(0, self.input_used - nbytes)
            waiters = list(self._waiters.values()) if self._waiters else []
            self._waiters.clear()
        for retry in waiters:  # each tries again; those that still do not fit queue up again
            retry()

    def forget_input_waiter(self, key: int) -> None:
        with self._lock:
            self._waiters.pop(key, None)

    # -- output (owner loop only) -------------------------------------------------------------------
    def note_output(self, conn: Any, unsent: int) -> bool:
        """Record a congested connection's unsent bytes; True when it must be closed (over its share)."""
        old = self._out.get(conn, 0)
        if unsent <= 0:
            if old:
                del self._out[conn]
                self.output_used -= old
            return False
        self._out[conn] = unsent
        self.output_used += unsent - old
        if self.output_used <= self.output_limit:
            return False
        return unsent > self.output_limit // len(self._out)


def default_connections_per_address() -> int:
    """Half the soft open-file limit (at least 64); 0 (no cap) where the platform has no such limit."""
    try:
        import resource
    except ImportError:  # not a Unix
        return 0
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 0
    return max(64, soft // 2)


class AddressCounter:
    """Connections per remote IP (owner loop only)."""

    __slots__ = ("_counts", "_warned", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._counts: dict[str, int] = {}
        self._warned: set[str] = set()

    @staticmethod
    def ip_of(remote_addr: str) -> str:
        return remote_addr.rpartition(":")[0] or remote_addr

    def admit(self, ip: str) -> bool:
        """Count a new connection from `ip`; False (logged once while over) when it is one too many."""
        count = self._counts.get(ip, 0)
        if self.limit > 0 and count >= self.limit:
            if ip not in self._warned:
                self._warned.add(ip)
                log.warning(
                    "%s already has %d connections (maxConnectionsPerAddress); closing its new ones "
                    "until it has fewer",
                    ip,
                    count,
                )
            return False
        self._counts[ip] = count + 1
        return True

    def release(self, ip: str) -> None:
        count = self._counts.get(ip, 0) - 1
        if count > 0:
            self._counts[ip] = count
        else:
            self._counts.pop(ip, None)
        if count < self.limit:
            self._warned.discard(ip)

    def count(self, ip: str) -> int:
        return self._counts.get(ip, 0)
