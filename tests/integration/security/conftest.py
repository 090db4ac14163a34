"""Helpers of the security tests, handed out as fixtures (pytest runs in importlib mode)."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

ADMIN = ("adminKey1", "adminSecret1")
USER = ("userKey01", "userSecret1")
PUB_ONLY = ("pubOnly01", "pubSecret1")
SUB_ONLY = ("subOnly01", "subSecret1")

PLAIN_ACL = f"""
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: {ADMIN[0]}
    secretKey: {ADMIN[1]}
    admin: true
  - accessKey: {USER[0]}
    secretKey: {USER[1]}
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
  - accessKey: {PUB_ONLY[0]}
    secretKey: {PUB_ONLY[1]}
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - TopicAcl=PUB
  - accessKey: {SUB_ONLY[0]}
    secretKey: {SUB_ONLY[1]}
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - TopicAcl=SUB
    groupPerms:
      - cg-acl=SUB
  - accessKey: trusted01
    secretKey: trustedSecret
    whiteRemoteAddress: 127.0.0.1
  - accessKey: faraway01
    secretKey: farawaySecret
    whiteRemoteAddress: 192.168.1.*
"""


def write_acl(directory: Path, text: str = PLAIN_ACL) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "plain_acl.yml"
    path.write_text(text, encoding="utf-8")
    return path


def acl_overrides(acl_file: Path) -> dict[str, object]:
    """Daemon options: ACL on, files checked every 200 ms, the daemon signing as the admin."""
    return {
        "aclEnable": "true",
        "aclFilePath": str(acl_file),
        "aclFileWatchInterval": 200,
        "accessKey": ADMIN[0],
        "secretKey": ADMIN[1],
    }


@pytest.fixture
def sec() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        ADMIN=ADMIN, USER=USER, PUB_ONLY=PUB_ONLY, SUB_ONLY=SUB_ONLY, PLAIN_ACL=PLAIN_ACL,
        write_acl=write_acl, acl_overrides=acl_overrides,
    )  # fmt: skip
