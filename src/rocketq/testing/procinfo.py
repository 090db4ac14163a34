"""What a daemon process uses, read from /proc (Linux): resident memory and open descriptors."""

from __future__ import annotations

import os
from pathlib import Path


def status_kib(pid: int, field: str) -> int:
    """A KiB figure of /proc/<pid>/status (VmRSS, RssAnon, VmHWM...); ProcessLookupError when it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        raise ProcessLookupError(pid) from None
    prefix = field + ":"
    for line in text.splitlines():
        if line.startswith(prefix):
            return int(line.split()[1])
    raise ProcessLookupError(f"{pid} has no {field} (a zombie?)")


def rss_kib(pid: int) -> int:
    """VmRSS of `pid` in KiB: resident memory, mapped store files' pages included."""
    return status_kib(pid, "VmRSS")


def anon_kib(pid: int) -> int:
    """RssAnon of `pid` in KiB: the heap and buffers, without the page cache of mapped files."""
    return status_kib(pid, "RssAnon")


def open_fds(pid: int) -> int:
    """How many descriptors `pid` has open."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def open_sockets(pid: int) -> int:
    """How many of `pid`'s descriptors are sockets."""
    count = 0
    fd_dir = f"/proc/{pid}/fd"
    for name in os.listdir(fd_dir):
        try:
            if os.readlink(f"{fd_dir}/{name}").startswith("socket:"):
                count += 1
        except OSError:
            continue  # closed while we looked
    return count


_TCP_STATES = {
    "01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
    "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING",
}  # fmt: skip


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    for name in os.listdir(fd_dir):
        try:
            link = os.readlink(f"{fd_dir}/{name}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    return inodes


def _hex_port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1], 16)


def tcp_sockets(pid: int) -> list[tuple[int, int, str]]:
    """(local port, remote port, state) of each TCP socket `pid` holds (IPv4 and IPv6), for diagnostics."""
    inodes = _socket_inodes(pid)
    out = []
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[9] in inodes:
                out.append((_hex_port(parts[1]), _hex_port(parts[2]), _TCP_STATES.get(parts[3], parts[3])))
    return sorted(out)


def limit_address_space(pid: int, limit_bytes: int) -> None:
    """Cap `pid`'s address space (RLIMIT_AS), so a runaway allocation fails with MemoryError there
    instead of taking the machine's memory; a no-op where prlimit is unavailable."""
    try:
        import resource

        resource.prlimit(pid, resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    except (ImportError, AttributeError, OSError, ValueError):
        pass


def _stat_fields(pid: int) -> list[str]:
    # The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    return Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()


def process_cpu_seconds(pid: int) -> tuple[float, float]:
    """(own, reaped) CPU seconds of `pid`: its user + system time, and that of the children it waited for.

    A short-lived child (a Python worker, a per-query process) is gone before a benchmark looks, but its
    CPU stays counted in its parent's reaped figure; OSError when `pid` is gone.
    """
    fields = _stat_fields(pid)
    tick = os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime: fields 14-17, in clock ticks
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def children_of() -> dict[int, list[int]]:
    """Each live process's parent -> its children, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                children.setdefault(int(_stat_fields(int(entry))[1]), []).append(int(entry))  # field 4: ppid
            except OSError:
                continue
    return children


def tree_cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) of `pid` and its live descendants; 0 for a process gone meanwhile."""
    children = children_of()
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = _stat_fields(current)
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15), in clock ticks
        todo.extend(children.get(current, []))
    return total / os.sysconf("SC_CLK_TCK")


def cpu_ns(pid: int) -> int:
    """CPU time of `pid`'s live threads in nanoseconds, from the scheduler's own count (/proc/<pid>/task/*/schedstat).

    Exact to the nanosecond where /proc/<pid>/stat counts 10 ms clock ticks: what a benchmark of a few
    microseconds per message needs. Threads that ended are not counted (stat's figure has them).
    """
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # the thread ended while we read
    return total
