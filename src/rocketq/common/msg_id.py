"""Message ids (docs/protocol.md 4.6): the broker's offset msgId and the client's UNIQ_KEY.

Offset msgId = hex(store host ip | port int32 | commit-log offset int64), 32 hex chars for IPv4, 56 for IPv6.
UNIQ_KEY = hex(client ip | pid int16 | per-process random int32 | ms since month start int32 | counter int16).
The client ip is the host's own address (local_address, as Java's RemotingUtil.getLocalAddress), so ids and
client ids from different hosts differ.
Deviation from Java: where Java uses the classloader hash we use 4 random bytes per process, so two
processes with the same pid in different containers (pid 1, 1) still differ.
"""

from __future__ import annotations

import datetime as _dt
import functools
import ipaddress
import itertools
import os
import socket
import struct
import threading

_SIOCGIFADDR = 0x8915
# Two hex digits of each byte value: an id's counter is two look-ups, not a formatted "{:04X}" (whose
# format-spec parsing cost a third of next_id).
_HEX_BYTES = tuple(f"{i:02X}" for i in range(256))


def local_ipv4_addresses() -> list[str]:
    """The IPv4 address of each network interface, in interface order (Linux: SIOCGIFADDR); [] elsewhere.
    Reads the kernel's interface table: the socket is never connected and sends nothing."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        return []
    found: list[str] = []
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for _index, name in socket.if_nameindex():
                try:
                    raw = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
                except OSError:  # no IPv4 address on this interface
                    continue
                found.append(socket.inet_ntoa(raw[20:24]))
    except OSError:
        return found
    return found


@functools.cache  # once per process, as Java's static MessageClientIDSetter
def local_address() -> str:
    """This host's address as Java's RemotingUtil.getLocalAddress picks it: the first IPv4 address that is
    neither 127.0.x.x nor 192.168.x.x, else the last IPv4 one, else 127.0.0.1."""
    addresses = local_ipv4_addresses()
    for ip in addresses:
        if not ip.startswith(("127.0", "192.168")):
            return ip
    return addresses[-1] if addresses else "127.0.0.1"


def host_bytes(ip: str) -> bytes:
    return ipaddress.ip_address(ip).packed


def create_offset_msg_id(store_ip: str, store_port: int, commit_log_offset: int) -> str:
    return (host_bytes(store_ip) + struct.pack(">iq", store_port, commit_log_offset)).hex().upper()


def parse_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """(ip, port, commit-log offset) of an offset msgId; ValueError when it is not one."""
    if len(msg_id) not in (32, 56):
        raise ValueError(f"an offset message id has 32 or 56 hex digits, not {len(msg_id)}")
    raw = bytes.fromhex(msg_id)
    ip_len = 4 if len(raw) == 16 else 16
    ip = str(ipaddress.ip_address(raw[:ip_len]))
    port, offset = struct.unpack(">iq", raw[ip_len:])
    if not 0 < port < 65536:
        # A client (UNIQ_KEY) message id has the same 32 digits, with the pid and a random number
        # where the port would be: refuse it here instead of dialling a made-up address.
        raise ValueError(f"port {port} out of range (a client message id? those are found by topic and id)")
    if offset < 0:
        raise ValueError(f"negative commit-log offset {offset}")
    return ip, port, offset


class UniqueIdGenerator:
    """Generates UNIQ_KEY ids: a fixed per-process prefix, then time-in-month and a counter."""

    def __init__(self, ip: str = "127.0.0.1") -> None:
        try:
            ip_raw = host_bytes(ip)
        except ValueError:
            ip_raw = bytes(4)
        # (short) pid, as MessageClientIDSetter: the low 16 bits
        self._prefix = (ip_raw + struct.pack(">H", os.getpid() & 0xFFFF) + os.urandom(4)).hex().upper()
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._month = (0, 0)  # (start of this month, start of the next) in ms, replaced as one object
        # (ms, prefix + that ms's time-in-month digits), replaced as one object: the ids of one
        # millisecond share all but their counter, so those digits are formatted once per millisecond.
        self._head = (-1, "")

    def _roll_month(self, now_ms: int) -> tuple[int, int]:
        now = _dt.datetime.fromtimestamp(now_ms / 1000)
        start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        nxt = (start + _dt.timedelta(days=32)).replace(day=1)
        self._month = month = (int(start.timestamp() * 1000), int(nxt.timestamp() * 1000))
        return month

    def next_id(self, now_ms: int) -> str:
        # As Java's MessageClientIDSetter: only the month roll is locked; the counter (itertools.count,
        # one C call) is atomic under the GIL.
        month = self._month
        if now_ms >= month[1]:
            with self._lock:
                month = self._month if now_ms < self._month[1] else self._roll_month(now_ms)
        counter = next(self._counter)
        # time-in-month as 8 hex digits, then the counter as Java's short (its two bytes, 4 hex digits)
        head = self._head
        if head[0] != now_ms:
            head = self._head = (now_ms, f"{self._prefix}{(now_ms - month[0]) & 0xFFFFFFFF:08X}")
        return f"{head[1]}{_HEX_BYTES[(counter >> 8) & 0xFF]}{_HEX_BYTES[counter & 0xFF]}"  # one allocation
