"""Transport settings for the remoting server and client (units in the names, RocketMQ keys as aliases).

Port of org.apache.rocketmq.remoting.netty.NettyServerConfig / NettyClientConfig. Deviations: the
server binds `bindAddress` (default 127.0.0.1) instead of every interface; `serverSelectorThreads`
counts extra asyncio loop threads (0 = everything on the main loop, which measures fastest in
CPython, see bench/remoting.py); `clientCloseSocketIfTimeout` defaults to false, because closing a
multiplexed connection on one timeout fails every other request in flight on it; executor queues are
bounded (Java's public executor queue is not). ConnectionLimits are ours (no Java counterpart, see
rocketq.remoting.transport.limits and docs/limits.md); the broker and NameServer configs take the same
keys and hand them to their server.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rocketq.common.config import RocketConfig
from rocketq.remoting.protocol.frame import MAX_FRAME_LENGTH
from rocketq.remoting.transport.client_settings import ClientSettings

LoopName = Literal["auto", "asyncio", "uvloop"]


class ConnectionLimits(RocketConfig):
    """What one peer, or all of them together, may make a server hold (0 turns a limit off)."""

    max_in_flight_requests_per_connection: int = Field(1024, alias="maxInFlightRequestsPerConnection", ge=0)
    """Requests of one connection being processed or queued at once; past it, reading that connection
    pauses until one is answered (so do requests while its unsent answers are above the high-water mark)."""
    max_total_buffered_input_bytes: int = Field(256 << 20, alias="maxTotalBufferedInputBytes", ge=0)
    """Bytes of large frames being received, over all connections; a frame that does not fit waits
    (its connection is not read) until others complete."""
    max_total_buffered_output_bytes: int = Field(256 << 20, alias="maxTotalBufferedOutputBytes", ge=0)
    """Unsent bytes over all connections above their high-water mark; past it, a connection holding
    more than its share is closed."""
    max_write_buffer_bytes: int = Field(64 << 20, alias="maxWriteBufferBytes", ge=1)
    """Unsent bytes of one connection, checked at every answer: a peer that stops reading past it is closed."""
    frame_read_timeout_ms: int = Field(30_000, alias="frameReadTimeoutMillis", ge=0)
    """A frame must arrive whole this long after its first bytes, or the connection is closed; bytes
    of an incomplete frame do not count as activity for the idle timer."""
    max_connections_per_address: int = Field(0, alias="maxConnectionsPerAddress", ge=0)
    """Connections from one remote IP address; one more is closed at once. 0 (the default) = half the
    process's open-file limit (RLIMIT_NOFILE), so one address cannot use up the descriptors."""

    def limit_values(self) -> dict[str, int]:
        """These settings by field name (what a role config hands to its ServerConfig)."""
        return {name: getattr(self, name) for name in ConnectionLimits.model_fields}


class ServerConfig(ConnectionLimits):
    """How a RemotingServer listens, reads, dispatches and writes."""

    listen_port: int = Field(8888, alias="listenPort", ge=0, le=65535)
    """TCP port; 0 picks a free one (RemotingServer.port tells which)."""
    bind_address: str = Field("127.0.0.1", alias="bindAddress")
    """Address to listen on; "0.0.0.0" or "::" for every interface."""
    server_selector_threads: int = Field(0, alias="serverSelectorThreads", ge=0, le=64)
    """Extra event-loop threads that own connections and decode frames; 0 or 1 = the main loop only."""
    server_worker_threads: int = Field(8, alias="serverWorkerThreads", ge=1)
    """Workers of the default executor (requests whose code was registered without an executor)."""
    server_default_queue_capacity: int = Field(10_000, alias="serverDefaultQueueCapacity", ge=1)
    """Queue bound of the default executor; a full queue answers SYSTEM_BUSY."""
    server_oneway_semaphore_value: int = Field(256, alias="serverOnewaySemaphoreValue", ge=1)
    """Server-initiated oneway requests in flight at most."""
    server_async_semaphore_value: int = Field(64, alias="serverAsyncSemaphoreValue", ge=1)
    """Server-initiated async requests in flight at most."""
    server_channel_max_idle_time_s: float = Field(120, alias="serverChannelMaxIdleTimeSeconds", ge=0)
    """A connection without reads or writes for this long is closed; 0 disables."""
    server_socket_snd_buf_size: int = Field(0, alias="serverSocketSndBufSize", ge=0)
    """SO_SNDBUF in bytes; 0 keeps the OS default."""
    server_socket_rcv_buf_size: int = Field(0, alias="serverSocketRcvBufSize", ge=0)
    """SO_RCVBUF in bytes; 0 keeps the OS default."""
    server_socket_backlog: int = Field(1024, alias="serverSocketBacklog", ge=1)
    """listen() backlog."""
    write_buffer_high_water_mark_bytes: int = Field(4 << 20, alias="writeBufferHighWaterMark", ge=1)
    """Above this many unsent bytes a connection reports not writable (flow control)."""
    write_buffer_low_water_mark_bytes: int = Field(1 << 20, alias="writeBufferLowWaterMark", ge=0)
    """Below this many unsent bytes it is writable again."""
    max_frame_length_bytes: int = Field(MAX_FRAME_LENGTH, alias="frameMaxLength", ge=16)
    """Largest frameLength accepted (Netty: 16 MiB including the 4-byte length field)."""
    response_scan_interval_ms: int = Field(1000, alias="responseScanIntervalMillis", ge=10)
    """Period of the scan that fails server-initiated requests past their timeout."""
    shutdown_timeout_ms: int = Field(5000, alias="shutdownTimeoutMillis", ge=0)
    """Graceful shutdown waits this long for running requests before cancelling them."""
    loop: LoopName = Field("auto", alias="eventLoop")
    """Event loop implementation of the selector threads."""


_D = ClientSettings()  # one set of defaults for both forms


class ClientConfig(RocketConfig):
    """How a RemotingClient connects, bounds its requests and serves server-initiated requests."""

    connect_timeout_ms: int = Field(_D.connect_timeout_ms, alias="connectTimeoutMillis", ge=1)
    """Bound on opening one TCP connection."""
    client_worker_threads: int = Field(_D.client_worker_threads, alias="clientWorkerThreads", ge=1)
    """Workers of the executor that runs client-side processors (requests the server sends us)."""
    client_queue_capacity: int = Field(_D.client_queue_capacity, alias="clientQueueCapacity", ge=1)
    """Queue bound of that executor."""
    client_oneway_semaphore_value: int = Field(
        _D.client_oneway_semaphore_value, alias="clientOnewaySemaphoreValue", ge=1
    )
    """Oneway requests in flight at most."""
    client_async_semaphore_value: int = Field(
        _D.client_async_semaphore_value, alias="clientAsyncSemaphoreValue", ge=1
    )
    """Async requests in flight at most."""
    client_channel_max_idle_time_s: float = Field(
        _D.client_channel_max_idle_time_s, alias="clientChannelMaxIdleTimeSeconds", ge=0
    )
    """A connection without reads or writes for this long is closed; 0 disables."""
    client_close_socket_if_timeout: bool = Field(
        _D.client_close_socket_if_timeout, alias="clientCloseSocketIfTimeout"
    )
    """Close the connection when a sync request times out (Java's default is true; see module doc)."""
    write_buffer_high_water_mark_bytes: int = Field(
        _D.write_buffer_high_water_mark_bytes, alias="writeBufferHighWaterMark", ge=1
    )
    """Above this many unsent bytes a connection reports not writable."""
    write_buffer_low_water_mark_bytes: int = Field(
        _D.write_buffer_low_water_mark_bytes, alias="writeBufferLowWaterMark", ge=0
    )
    """Below this many unsent bytes it is writable again."""
    max_write_buffer_bytes: int = Field(_D.max_write_buffer_bytes, alias="maxWriteBufferBytes", ge=1)
    """Hard bound on unsent bytes before the connection is dropped."""
    max_frame_length_bytes: int = Field(_D.max_frame_length_bytes, alias="frameMaxLength", ge=16)
    """Largest frameLength accepted."""
    response_scan_interval_ms: int = Field(
        _D.response_scan_interval_ms, alias="responseScanIntervalMillis", ge=10
    )
    """Period of the scan that fails requests past their timeout."""
