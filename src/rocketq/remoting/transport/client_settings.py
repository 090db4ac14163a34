"""ClientSettings: what a RemotingClient reads of its configuration, as a plain dataclass.

rocketq.remoting.transport.config.ClientConfig is the validated form (RocketMQ key aliases, bounds) and
takes its defaults from here; this one needs no pydantic, so a process that only pulls (a Spark reader's
Python worker, its stream-reader process) imports the transport without the configuration layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.frame import MAX_FRAME_LENGTH


@dataclass(frozen=True)
class ClientSettings:
    """The fields of ClientConfig, by the same names, at their defaults unless given (documented there)."""

    connect_timeout_ms: int = 3000
    client_worker_threads: int = 4
    client_queue_capacity: int = 10_000
    client_oneway_semaphore_value: int = 256
    client_async_semaphore_value: int = 65535
    client_channel_max_idle_time_s: float = 120
    client_close_socket_if_timeout: bool = False
    write_buffer_high_water_mark_bytes: int = 4 << 20
    write_buffer_low_water_mark_bytes: int = 1 << 20
    max_write_buffer_bytes: int = 64 << 20
    max_frame_length_bytes: int = MAX_FRAME_LENGTH
    response_scan_interval_ms: int = 1000
