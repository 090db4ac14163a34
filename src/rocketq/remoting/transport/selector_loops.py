"""Selector loops: event loops on their own threads that own accepted connections (reads, decoding, writes).

Port of the `eventLoopGroupSelector` of org.apache.rocketmq.remoting.netty.NettyRemotingServer.
Deviation: the connections' commands are handed to the main loop (processors never run here), so
these threads only do socket I/O and frame decoding. In CPython the GIL makes that pay off only when
frame decoding dominates; bench/remoting.py measures it (ServerConfig.server_selector_threads).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Callable

from rocketq.common.tls import ServerTls, accept_connection
from rocketq.remoting.transport.loops import loop_factory

log = logging.getLogger("rocketq.remoting")


class SelectorLoop:
    """One event loop running on its own daemon thread."""

    def __init__(self, name: str, loop_name: str = "auto") -> None:
        self.name = name
        self._factory = loop_factory(loop_name)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._adopting: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self.loop is None:
            raise RuntimeError(f"selector loop {self.name} did not start")

    def _run(self) -> None:
        loop = self._factory()
        asyncio.set_event_loop(loop)
        self.loop = loop
        loop.call_soon(self._ready.set)
        try:
            loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            finally:
                loop.close()

    def adopt(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        tls: ServerTls | None = None,
    ) -> None:
        """Take over an accepted socket (thread-safe); with `tls`, plain or TLS by its first byte."""
        loop = self.loop
        assert loop is not None

        async def _connect() -> None:
            if tls is not None:
                await accept_connection(loop, sock, protocol_factory, tls)
                return
            try:
                await loop.connect_accepted_socket(protocol_factory, sock)
            except Exception as exc:
                log.warning("could not set up an accepted connection: %r", exc)
                sock.close()

        def _start() -> None:
            task = loop.create_task(_connect())
            self._adopting.add(task)  # a strong reference until it is done
            task.add_done_callback(self._adopting.discard)

        loop.call_soon_threadsafe(_start)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the loop and join its thread (blocking; call through asyncio.to_thread)."""
        if self.loop is not None and not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self.loop.stop)
            except RuntimeError:
                pass
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                log.warning("selector loop %s did not stop within %.1fs", self.name, timeout_s)
