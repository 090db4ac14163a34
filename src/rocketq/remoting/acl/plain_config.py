"""plain_acl.yml: loading the accounts, reloading them when the files change, and editing them.

Port of org.apache.rocketmq.acl.plain.PlainPermissionManager (4.9.8): the keys are Java's
(globalWhiteRemoteAddresses, accounts[].accessKey, secretKey, whiteRemoteAddress, admin,
defaultTopicPerm, defaultGroupPerm, topicPerms, groupPerms, dataVersion). `aclFilePath` names either
one file, which is read together with every *.yml / *.yaml under an `acl` folder beside it (as Java
reads conf/plain_acl.yml and conf/acl/), or a folder, whose YAML files are all read. An access key
defined twice is an error. A load that fails keeps the tables of the last good load and logs why.
Java's AclFileWatchService polls every 5 s; `reload_if_changed` does the same check (mtime and size of
every file, and the set of files), driven by the daemon's periodic task.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rocketq.remoting.acl import permission as P
from rocketq.remoting.acl.address import Matcher, address_matcher
from rocketq.remoting.acl.errors import AclError

log = logging.getLogger("rocketq.acl")

# AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH: keys must be longer than this.
KEY_MIN_LENGTH = 6


@dataclass(slots=True)
class Account:
    """One account of a plain ACL file (PlainAccessResource as owned by the server)."""

    access_key: str
    secret_key: str
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    perms: dict[str, int]  # topics, and groups as their retry topics
    white: Matcher
    file: str


@dataclass(slots=True)
class AclTables:
    """Everything one load produced; replaced as a whole, never changed in place."""

    global_white: list[Matcher] = field(default_factory=list)
    accounts: dict[str, Account] = field(default_factory=dict)
    versions: dict[str, dict[str, int]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    # the validator's verdicts on (client address, access key): a cache of what the fields above
    # decide, dropped with them when the files are loaded again (validator.validate)
    address_verdicts: dict[tuple[str, str | None], tuple[int, Any]] = field(default_factory=dict)
    # and the permission checks passed, by (access key, code, the values of the code's resource fields)
    permission_passes: set[tuple[Any, ...]] = field(default_factory=set)
    # and where validator.validate_run left off on each connection (its access key, verdict, account
    # and last pass), so that the next run, or a request that comes alone, starts from there
    run_states: dict[str, tuple[Any, ...]] = field(default_factory=dict)


def _as_list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclError(f"{what} must be a list, got {type(value).__name__}")
    return value


def _parse_account(raw: Any, file: str) -> Account:
    if not isinstance(raw, dict):
        raise AclError(f"an account must be a mapping, got {type(raw).__name__}")
    ak, sk = raw.get("accessKey"), raw.get("secretKey")
    if ak is None or sk is None or len(str(ak)) <= KEY_MIN_LENGTH or len(str(sk)) <= KEY_MIN_LENGTH:
        raise AclError(f"The accessKey={ak} and secretKey cannot be null and length should longer than 6")
    perms: dict[str, int] = {}
    for is_topic, key in ((False, "groupPerms"), (True, "topicPerms")):
        for item in _as_list(raw.get(key), f"{key} of {ak}"):
            item = str(item)
            P.check_resource_perm(item)
            name, _, perm = item.partition("=")
            resource = name.strip() if is_topic else P.retry_topic(name.strip())
            perms[str(resource)] = P.parse_perm(perm)
    admin = raw.get("admin", False)
    return Account(
        access_key=str(ak),
        secret_key=str(sk),
        admin=admin is True or str(admin).lower() == "true",
        default_topic_perm=P.parse_perm(raw.get("defaultTopicPerm")),
        default_group_perm=P.parse_perm(raw.get("defaultGroupPerm")),
        perms=perms,
        white=address_matcher(raw.get("whiteRemoteAddress")),
        file=file,
    )


def read_yaml(path: str) -> dict[str, Any]:
    """One ACL file as a mapping ({} when empty); AclError naming the file when it is not YAML."""
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise AclError(f"cannot read ACL file {path}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise AclError(f"ACL file {path}: the top level must be a mapping")
    return data


def _version_of(data: dict[str, Any]) -> dict[str, int] | None:
    versions = data.get("dataVersion")
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        try:
            return {
                "counter": int(versions[0].get("counter", 0)),
                "timestamp": int(versions[0].get("timestamp", 0)),
            }
        except (TypeError, ValueError):
            return None
    return None


def load_tables(files: list[str]) -> AclTables:
    """Parse every file; AclError (naming the file) on the first problem."""
    tables = AclTables(files=list(files))
    for path in files:
        data = read_yaml(path)
        try:
            for pattern in _as_list(data.get("globalWhiteRemoteAddresses"), "globalWhiteRemoteAddresses"):
                tables.global_white.append(address_matcher(str(pattern)))
            for raw in _as_list(data.get("accounts"), "accounts"):
                account = _parse_account(raw, path)
                if account.access_key in tables.accounts:
                    raise AclError(f"Duplicate acl access key {account.access_key}")
                tables.accounts[account.access_key] = account
        except AclError as exc:
            raise AclError(f"ACL file {path}: {exc}") from exc
        tables.versions[path] = _version_of(data) or {"counter": 0, "timestamp": int(time.time() * 1000)}
    return tables


class PlainAclConfig:
    """The accounts of `acl_file_path` (a file or a folder), reloaded when the files change."""

    def __init__(self, acl_file_path: str) -> None:
        path = Path(acl_file_path).expanduser().resolve()
        self.path = path
        self.default_file = str(path) if not path.is_dir() else str(path / "plain_acl.yml")
        self.tables = AclTables()
        self._stamp: tuple[tuple[str, int, int], ...] | None = None
        self.load()

    def files(self) -> list[str]:
        found: list[str] = []
        folder = self.path if self.path.is_dir() else self.path.parent / "acl"
        if not self.path.is_dir() and self.path.exists():
            found.append(str(self.path))
        if folder.is_dir():
            for root, _dirs, names in sorted(os.walk(folder)):
                found.extend(str(Path(root) / n) for n in sorted(names) if n.endswith((".yml", ".yaml")))
        return found

    def _current_stamp(self) -> tuple[tuple[str, int, int], ...]:
        stamp = []
        for f in self.files():
            try:
                st = os.stat(f)
            except OSError:
                continue
            stamp.append((f, st.st_mtime_ns, st.st_size))
        return tuple(stamp)

    def load(self) -> bool:
        """Read every file now; True if the new tables are in use, False (logged) if the old stay."""
        stamp = self._current_stamp()
        self._stamp = stamp
        try:
            tables = load_tables([s[0] for s in stamp])
        except AclError as exc:
            log.error(
                "ACL files not loaded, keeping the %d accounts loaded before: %s",
                len(self.tables.accounts),
                exc,
            )
            return False
        self.tables = tables
        log.info(
            "ACL loaded: %d accounts, %d global whitelist patterns from %s",
            len(tables.accounts),
            len(tables.global_white),
            ", ".join(tables.files) or "(no file)",
        )
        return True

    def reload_if_changed(self) -> bool:
        """Reload when a file changed, appeared or went (AclFileWatchService's check); True if reloaded."""
        if self._current_stamp() == self._stamp:
            return False
        return self.load()

    def describe(self) -> dict[str, Any]:
        """Every file's whitelist and accounts as written, secret keys left out (getAccessConfig)."""
        white: list[str] = []
        accounts: list[dict[str, Any]] = []
        for path in self.tables.files:
            try:
                data = read_yaml(path)
            except AclError:
                continue
            white.extend(str(p) for p in data.get("globalWhiteRemoteAddresses") or [])
            for raw in data.get("accounts") or []:
                if isinstance(raw, dict):
                    accounts.append({k: v for k, v in raw.items() if k != "secretKey"})
        return {"globalWhiteAddrs": white, "plainAccessConfigs": accounts}

    # -- the mqadmin ACL verbs (AdminBrokerProcessor -> PlainPermissionManager) --------------------
    def _write(self, path: str, data: dict[str, Any]) -> None:
        version = _version_of(data) or {"counter": 0, "timestamp": 0}
        data["dataVersion"] = [{"counter": version["counter"] + 1, "timestamp": int(time.time() * 1000)}]
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".acl-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                yaml.safe_dump(data, f, sort_keys=False, allow_unicode=True)
            os.replace(tmp, path)  # readers see the old file or the new one, never half of it
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.load()

    def update_account(self, fields: dict[str, Any]) -> None:
        """Create or update an account (updateAclConfig); AclError when its keys are too short."""
        ak = fields.get("accessKey")
        if not ak or len(ak) <= KEY_MIN_LENGTH:
            raise AclError(f"The accessKey={ak} cannot be null and length should longer than 6")
        sk = fields.get("secretKey")
        if sk and len(sk) <= KEY_MIN_LENGTH:
            raise AclError("The secretKey value length should longer than 6")
        owner = self.tables.accounts.get(ak)
        path = owner.file if owner is not None else self.default_file
        data = read_yaml(path) if os.path.exists(path) else {}
        accounts = _as_list(data.get("accounts"), "accounts")
        entry = next((a for a in accounts if isinstance(a, dict) and a.get("accessKey") == ak), None)
        if entry is None:
            entry = {}
            accounts.append(entry)
        entry.update({k: v for k, v in fields.items() if v is not None})
        _parse_account(entry, path)  # refuse what the next load would refuse
        data["accounts"] = accounts
        self._write(path, data)

    def delete_account(self, access_key: str) -> bool:
        owner = self.tables.accounts.get(access_key)
        if owner is None:
            return False
        data = read_yaml(owner.file)
        accounts = _as_list(data.get("accounts"), "accounts")
        data["accounts"] = [
            a for a in accounts if not (isinstance(a, dict) and a.get("accessKey") == access_key)
        ]
        self._write(owner.file, data)
        return True

    def update_global_white(self, patterns: list[str], file: str | None = None) -> None:
        for pattern in patterns:
            address_matcher(pattern)  # AclError on a bad one, before anything is written
        path = file or self.default_file
        if str(Path(path).resolve()) not in {
            str(Path(f).resolve()) for f in [self.default_file, *self.tables.files]
        }:
            raise AclError(f"{path} is not one of this server's ACL files")
        data = read_yaml(path) if os.path.exists(path) else {}
        data["globalWhiteRemoteAddresses"] = list(patterns)
        self._write(path, data)
