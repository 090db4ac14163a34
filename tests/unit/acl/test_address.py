"""Whitelist patterns: the forms of Java's RemoteAddressStrategyFactory."""

from __future__ import annotations

import pytest

from rocketq.remoting.acl.address import address_matcher
from rocketq.remoting.acl.errors import AclError


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("*", ["1.2.3.4", "::1"], []),
        ("*.*.*.*", ["10.0.0.1"], []),
        ("", [], ["127.0.0.1"]),
        (None, [], ["127.0.0.1"]),
        ("192.168.0.1", ["192.168.0.1"], ["192.168.0.2", "192.168.0.10"]),
        ("192.168.0.*", ["192.168.0.0", "192.168.0.255"], ["192.168.1.1", "10.192.168.0"]),
        ("192.168.*.*", ["192.168.7.9"], ["192.169.0.1"]),
        ("10.10.103.1-100", ["10.10.103.1", "10.10.103.100"], ["10.10.103.0", "10.10.103.101"]),
        ("10.10.1-3.*", ["10.10.2.77"], ["10.10.4.1"]),
        ("192.168.1.{1,2,3}", ["192.168.1.1", "192.168.1.3"], ["192.168.1.4", "192.168.1.11"]),
        ("127.0.0.1,127.0.0.2", ["127.0.0.2"], ["127.0.0.3"]),
        ("::1", ["0:0:0:0:0:0:0:1"], ["::2"]),
        ("1050:0:0:0:5:600:300c:*", ["1050::5:600:300c:326b"], ["1050::5:600:300d:1"]),
        ("1050::5:600:300c:{1,2}", ["1050::5:600:300c:2"], ["1050::5:600:300c:3"]),
    ],
)
def test_pattern_matches(pattern: str | None, yes: list[str], no: list[str]) -> None:
    match = address_matcher(pattern)
    for addr in yes:
        assert match(addr), (pattern, addr)
    for addr in no:
        assert not match(addr), (pattern, addr)


def test_a_non_address_never_matches() -> None:
    assert not address_matcher("192.168.0.*")("not-an-ip")


@pytest.mark.parametrize(
    "bad",
    [
        "192.168.0",
        "300.1.1.1",
        "192.168.1.1,2,3",
        "192.168.*.1",
        "192.168.5-1.*",
        "1.2.3.4/24",
        "*.1.1.1",
        "host.example",
    ],
)
def test_bad_patterns_are_refused_naming_them(bad: str) -> None:
    with pytest.raises(AclError) as err:
        address_matcher(bad)
    assert str(err.value)
