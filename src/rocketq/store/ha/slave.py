"""The slave's side of replication: connect to the master's HA port, append what it sends, report back.

Port of HAService.HAClient (RocketMQ 4.9.8): on connect the slave reports its max commit-log offset
(8 bytes); every frame's bytes are appended at the frame's offset, which must be the end of the
slave's log (a slave with an empty log takes the first offset it is sent); after data it reports its
new end, and every haSendHeartbeatInterval anyway. A frame at another offset, a malformed stream, or
haHousekeepingInterval without a byte from the master closes the connection; the client connects
again at once after a close, every 5 s while the master cannot be reached, and to a new address as
soon as one is set (from haMasterAddress or the NameServer's registration answer).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from typing import Protocol

from rocketq.common.service import PeriodicService
from rocketq.store.config import MessageStoreConfig
from rocketq.store.ha.codec import FrameReader, HAProtocolError, encode_offset

log = logging.getLogger("rocketq.store.ha")

RECONNECT_INTERVAL_S = 5.0
CONNECT_TIMEOUT_S = 3.0
READ_CHUNK = 256 * 1024


class SlaveStore(Protocol):
    config: MessageStoreConfig

    def get_max_phy_offset(self) -> int: ...
    def append_replica(self, offset: int, data: bytes) -> int: ...


class HAClient:
    def __init__(
        self, store: SlaveStore, master_address: str | None = None, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.store = store
        self.ssl_context = ssl_context  # TLS to the master's HA port (the broker's tlsEnable)
        self.config = store.config
        self.master_address = master_address
        self.connected = False
        self.sessions = 0  # connections made so far (tests wait on it)
        # One connection (session) a round; woken when the master's address changes.
        self._service = PeriodicService("ha-client", RECONNECT_INTERVAL_S, self._connect_once)
        self._writer: asyncio.StreamWriter | None = None

    def update_master_address(self, address: str | None) -> None:
        """Connect to `address` from now on (Java updateHaMasterAddress); None keeps the current one."""
        if not address or address == self.master_address:
            return
        log.info("HA master address: %s (was %s)", address, self.master_address)
        self.master_address = address
        self._service.wakeup()
        if self._writer is not None:
            self._writer.close()  # the session ends; the next one goes to the new address

    async def start(self) -> None:
        await self._service.start()

    async def shutdown(self) -> None:
        await self._service.stop()

    async def _connect_once(self) -> float | None:
        """One session with the master; the seconds until the next (None: the reconnect interval)."""
        address = self.master_address
        if not address:
            return None
        host, _, port = address.rpartition(":")
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                if self.ssl_context is None:
                    reader, writer = await asyncio.open_connection(host, int(port))
                else:
                    reader, writer = await asyncio.open_connection(
                        host, int(port), ssl=self.ssl_context, server_hostname=host
                    )
        except (OSError, TimeoutError, ValueError) as exc:
            log.info("HA: cannot connect to master %s: %s", address, exc)
            return None
        self._writer = writer
        self.connected = True
        self.sessions += 1
        failed = False
        try:
            await self._session(reader, writer)
        except (OSError, HAProtocolError, ValueError) as exc:
            log.warning("HA connection to master %s: %s", address, exc)
        except Exception:  # a bug, or the store failing: logged, and tried again after a pause
            log.exception("HA connection to master %s failed", address)
            failed = True
        finally:
            self.connected = False
            self._writer = None
            writer.close()
            try:
                await asyncio.wait_for(writer.wait_closed(), 1)
            except (OSError, TimeoutError):
                pass
        log.info("HA connection to master %s closed", address)
        return None if failed else 0.0

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        cfg = self.config
        store = self.store
        heartbeat_s = cfg.ha_send_heartbeat_interval_ms / 1000
        housekeeping_s = cfg.ha_housekeeping_interval_ms / 1000
        frames = FrameReader(
            max_body=max(cfg.ha_transfer_batch_size_bytes, cfg.mapped_file_size_commit_log_bytes)
        )
        reported = store.get_max_phy_offset()
        writer.write(encode_offset(reported))
        await writer.drain()
        last_report = last_read = time.monotonic()
        while True:
            now = time.monotonic()
            wait_s = max(0.0, min(last_report + heartbeat_s, last_read + housekeeping_s) - now)
            try:
                async with asyncio.timeout(wait_s):
                    data = await reader.read(READ_CHUNK)
                if not data:
                    return
                last_read = time.monotonic()
                for frame in frames.feed(data):
                    end = store.get_max_phy_offset()
                    if end != 0 and frame.offset != end:
                        raise ValueError(
                            f"the master sent offset {frame.offset}, this slave's commit log ends at {end}"
                        )
                    if frame.body:
                        store.append_replica(frame.offset, frame.body)
            except TimeoutError:
                pass
            now = time.monotonic()
            if now - last_read >= housekeeping_s:
                log.warning("HA: nothing from the master for %.0f s; reconnecting", housekeeping_s)
                return
            end = store.get_max_phy_offset()
            if end > reported or now - last_report >= heartbeat_s:
                writer.write(encode_offset(end))
                await writer.drain()
                reported, last_report = end, now
