"""Address whitelists: the pattern forms of RocketMQ 4.9's plain ACL.

Port of org.apache.rocketmq.acl.plain.RemoteAddressStrategyFactory. Forms: blank (matches nothing),
`*` / `*.*.*.*` (everything), one address, a comma list of addresses (`192.168.1.1,192.168.1.2`),
braces on the last part (`192.168.1.{1,2,3}`), and a range or `*` in one part with `*` after it
(`192.168.0.*`, `192.168.1-10.*`, `10.10.103.1-100`). IPv6 takes the same forms over its eight
groups. CIDR is not Java's, so not accepted. A bad pattern raises AclError naming it.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable

from rocketq.remoting.acl.errors import AclError

Matcher = Callable[[str], bool]


@functools.lru_cache(maxsize=4096)
def _expand(addr: str) -> str | None:
    """The canonical text of an IP address (IPv6 fully expanded, upper case), None if not one.

    Cached: a whitelist is matched on every request, and ipaddress costs microseconds per parse,
    while a broker sees few client addresses.
    """
    try:
        ip = ipaddress.ip_address(addr.strip())
    except ValueError:
        return None
    return ip.exploded.upper() if ip.version == 6 else str(ip)


def _one(addr: str) -> str:
    expanded = _expand(addr)
    if expanded is None:
        raise AclError(f"Netaddress examine Exception netaddress is {addr}")
    return expanded


def _range(pattern: str) -> Matcher:
    v6 = ":" in pattern
    sep, base, top = (":", 16, 0xFFFF) if v6 else (".", 10, 255)
    parts = [p.strip() for p in pattern.split(sep)]
    if (not v6 and len(parts) != 4) or (v6 and len(parts) != 8):
        raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
    index = next((i for i, p in enumerate(parts) if p == "*" or "-" in p), -1)
    if index < 1 or any(p != "*" for p in parts[index + 1 :]):
        raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
    try:
        head = [int(p, base) for p in parts[:index]]
        if parts[index] == "*":
            start, end = 0, top
        else:
            lo, _, hi = parts[index].partition("-")
            start, end = int(lo, base), int(hi, base)
    except ValueError:
        raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}") from None
    if not (all(0 <= h <= top for h in head) and 0 <= start <= end <= top):
        raise AclError(
            f"RangeRemoteAddressStrategy netaddress examine scope Exception start is {start} , end is {end}"
        )

    def match(addr: str) -> bool:
        expanded = _expand(addr)
        if expanded is None or (":" in expanded) != v6:
            return False
        got = [int(p, base) for p in expanded.split(sep)]
        return got[:index] == head and start <= got[index] <= end

    return match


def address_matcher(pattern: str | None) -> Matcher:
    """A predicate on a client's IP (no port) for a whitelist pattern; AclError when malformed."""
    if pattern is None or not str(pattern).strip():
        return lambda addr: False
    pattern = str(pattern).strip()
    if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return lambda addr: True
    if pattern.endswith("}"):
        prefix, brace, last = pattern.rpartition("{")
        if not brace or not prefix.endswith((".", ":")):
            raise AclError(
                f"MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress {pattern}"
            )
        wanted = {_one(prefix + part.strip()) for part in last[:-1].split(",") if part.strip()}
        return lambda addr: _expand(addr) in wanted
    if "," in pattern:
        wanted = {_one(part) for part in pattern.split(",") if part.strip()}
        return lambda addr: _expand(addr) in wanted
    if "*" in pattern or "-" in pattern:
        return _range(pattern)
    one = _one(pattern)
    return lambda addr: _expand(addr) == one
