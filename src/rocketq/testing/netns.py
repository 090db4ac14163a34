"""A network namespace joined to this one by a veth pair: a daemon inside can be cut off and healed.

For partition tests (tests/fault/test_partition.py). `netns_problem()` says why this machine cannot do it (not Linux,
not root, no `ip`, namespaces refused), so a test can skip with that reason. `VethNamespace` creates
the namespace `rqp<pid>`, a veth pair (`rqp<pid>h` here, `rqp<pid>n` inside) and a private /30 from
10.213.0.0/16 that overlaps no address or route of this machine; the namespace has only its end of
the pair and loopback, so a daemon inside reaches nothing but this machine, and only over the pair.
`cut()` takes the inside end down: packets both ways are dropped silently (connections stay open,
as in a real partition) while this side's route stays in place; `heal()` brings it up again. As a
safety net an `unreachable` route for the /30 (high metric) is installed on this side, so even when
the link's own route disappears nothing addressed to the /30 ever takes the default route out of the
machine. `python_wrapper()` writes a script that runs the Python interpreter inside the namespace,
for DaemonProcess(python=...). `close()` removes the pair, the safety route and the namespace; it is
idempotent and runs from a `finally`.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Self

POOL = ipaddress.IPv4Network("10.213.0.0/16")
_IP_TIMEOUT_S = 10


class NetnsError(RuntimeError):
    """An `ip` command failed; the message holds the command and its stderr."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=_IP_TIMEOUT_S)
    if check and done.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def netns_problem() -> str | None:
    """Why a network namespace with a veth pair cannot be made here, or None when it can."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux-only (this is {sys.platform})"
    if os.geteuid() != 0:
        return "creating a network namespace needs root (CAP_NET_ADMIN); run the fault suite as root to include it"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    probe = f"rqprobe{os.getpid()}"
    try:
        made = _ip("netns", "add", probe, check=False)
        if made.returncode != 0:
            return f"`ip netns add` is refused here: {made.stderr.strip() or made.returncode}"
        veth = _ip("link", "add", f"{probe}a", "type", "veth", "peer", "name", f"{probe}b", check=False)
        if veth.returncode != 0:
            return f"a veth pair cannot be created here: {veth.stderr.strip() or veth.returncode}"
        _ip("link", "del", f"{probe}a", check=False)
        return None
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`ip` cannot be run: {exc}"
    finally:
        _ip("netns", "del", probe, check=False)


def _used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network this machine has an address or a route in."""
    used: list[ipaddress.IPv4Network] = []
    for line in _ip("-4", "-o", "addr", "show").stdout.splitlines():
        parts = line.split()
        if "inet" in parts:
            used.append(ipaddress.IPv4Interface(parts[parts.index("inet") + 1]).network)
    for line in _ip("-4", "route", "show", "table", "all").stdout.splitlines():
        parts = line.split()
        for word in parts[:2]:
            try:
                net = ipaddress.IPv4Network(word, strict=False)
            except ValueError:
                continue
            if net.prefixlen > 0:
                used.append(net)
    return used


def free_slash30(seed: int) -> ipaddress.IPv4Network:
    """A /30 of POOL overlapping nothing this machine uses, chosen from `seed` (spreads parallel runs)."""
    used = _used_networks()
    subnets: list[ipaddress.IPv4Network] = list(POOL.subnets(new_prefix=30))
    for step in range(len(subnets)):
        candidate = subnets[(seed + step * 7919) % len(subnets)]
        if not any(candidate.overlaps(net) for net in used):
            return candidate
    raise NetnsError(f"no free /30 left in {POOL}")


class VethNamespace:
    """A namespace `name` linked to this one by a veth pair; `host_ip` here, `ns_ip` inside."""

    def __init__(self, tag: str | None = None) -> None:
        tag = tag or str(os.getpid())
        self.name = f"rqp{tag}"
        self.host_if = f"rqp{tag}h"[:15]
        self.ns_if = f"rqp{tag}n"[:15]
        self.network: ipaddress.IPv4Network | None = None
        self.host_ip = ""
        self.ns_ip = ""
        self.is_cut = False
        self._created: list[str] = []  # what close() must undo, in creation order

    def create(self) -> Self:
        self.network = free_slash30(os.getpid())
        host, inside = list(self.network.hosts())
        self.host_ip, self.ns_ip = str(host), str(inside)
        prefix = f"/{self.network.prefixlen}"
        try:
            _ip("netns", "add", self.name)
            self._created.append("netns")
            _ip("route", "add", "unreachable", str(self.network), "metric", "4000")
            self._created.append("route")
            _ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
            self._created.append("veth")
            _ip("link", "set", self.ns_if, "netns", self.name)
            _ip("addr", "add", self.host_ip + prefix, "dev", self.host_if)
            _ip("link", "set", self.host_if, "up")
            self.exec_ip("addr", "add", self.ns_ip + prefix, "dev", self.ns_if)
            self.exec_ip("link", "set", self.ns_if, "up")
            self.exec_ip("link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        return self

    def exec_ip(self, *args: str) -> None:
        _ip("netns", "exec", self.name, "ip", *args)

    def cut(self) -> None:
        """Partition: the inside end goes down; nothing passes either way, connections stay open."""
        self.exec_ip("link", "set", self.ns_if, "down")
        self.is_cut = True

    def heal(self) -> None:
        self.exec_ip("link", "set", self.ns_if, "up")
        self.is_cut = False

    def python_wrapper(self, directory: Path, python: str = sys.executable) -> str:
        """A script that runs `python` inside the namespace with the arguments it is given."""
        script = directory / f"python-in-{self.name}"
        script.write_text(f'#!/bin/sh\nexec ip netns exec {self.name} {python} "$@"\n')
        script.chmod(0o755)
        return str(script)

    def close(self) -> list[str]:
        """Remove the veth pair, the safety route and the namespace; the failures, if any (never raises)."""
        problems = []
        if "veth" in self._created:
            done = _ip("link", "del", self.host_if, check=False)
            if done.returncode != 0 and "Cannot find" not in done.stderr:
                problems.append(done.stderr.strip())
        if "route" in self._created and self.network is not None:
            _ip("route", "del", "unreachable", str(self.network), "metric", "4000", check=False)
        if "netns" in self._created:
            done = _ip("netns", "del", self.name, check=False)
            if done.returncode != 0:
                problems.append(done.stderr.strip())
        self._created.clear()
        return problems

    def __enter__(self) -> Self:
        return self.create()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
