"""Request verification: PlainAccessValidator.parse + PlainPermissionManager.validate (RocketMQ 4.9.8).

Order, as Java: a global whitelist match lets the request through; else the AccessKey must name an
account; the account's own whitelist lets it through; else the Signature must match; a PUB on
RMQ_SYS_TRACE_TOPIC passes (message traces); then admin codes need an admin account and every
resource the code touches needs its permission (the account's own, else its default).
The signed content leaves out Signature and `_UNIQUE_KEY_QUERY` as Java's validator does; since
Java's client signs the latter, a request carrying it is also accepted when signed with it.
"""

from __future__ import annotations

from typing import Any

from rocketq.common.constants import RETRY_GROUP_TOPIC_PREFIX, RMQ_SYS_TRACE_TOPIC
from rocketq.remoting.acl import permission as P
from rocketq.remoting.acl.errors import AclError
from rocketq.remoting.acl.permission import (
    ADMIN_CODES,
    PUB,
    RESOURCE_FIELDS,
    RESOURCE_VALUES,
    check_permission,
    same_values,
)
from rocketq.remoting.acl.plain_config import Account, AclTables
from rocketq.remoting.acl.signing import ACCESS_KEY, run_passer, signature_checker
from rocketq.remoting.protocol.bodies.heartbeat import HeartbeatData
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand

# An access key is echoed in remarks and logs; a longer one is cut (a huge key must not be mirrored).
_SHOWN_KEY_CHARS = 64


def shown_key(access_key: str) -> str:
    return access_key if len(access_key) <= _SHOWN_KEY_CHARS else access_key[:_SHOWN_KEY_CHARS] + "..."


def client_ip(remote_addr: str) -> str:
    """The address without its port, as PlainAccessValidator.parse strips it."""
    return remote_addr[: remote_addr.rfind(":")] if ":" in remote_addr else remote_addr


def _heartbeat_groups(body: bytes) -> list[tuple[str, list[str]]]:
    try:
        data = HeartbeatData.decode(body)
    except Exception as exc:  # any decoding problem is the client's: refuse, naming it
        raise AclError(f"cannot read the heartbeat body to check its permissions: {exc}") from exc
    return [(c.group_name, [s.topic for s in c.subscription_data_set]) for c in data.consumer_data_set]


def check_perm(code: int, needed: dict[str, int], account: Account) -> None:
    """PlainPermissionManager.checkPerm; the AclError names the resource and the permission missing."""
    if code in ADMIN_CODES and not account.admin:
        raise AclError(
            f"Need admin permission for request code={code}, but accessKey={shown_key(account.access_key)} is not"
        )
    perms = account.perms
    if not perms and account.admin:
        return
    for resource, perm in needed.items():
        owned = perms.get(resource)
        if owned is None:  # the account's default (a group is its retry topic)
            retry = resource.startswith(RETRY_GROUP_TOPIC_PREFIX)
            owned = account.default_group_perm if retry else account.default_topic_perm
        if not check_permission(perm, owned):
            raise AclError(
                f"No default permission for {P.print_resource(resource)}: {P.perm_name(perm)} needed, "
                f"accessKey={shown_key(account.access_key)} has {P.perm_name(owned)}"
            )


_HEART_BEAT = int(RequestCode.HEART_BEAT)  # a plain int: compared on every request

# What the address and the account decide, before the signature: whitelisted by the global list,
# whitelisted by the account's own list, or the signature must be checked against the account.
_GLOBAL_WHITE, _ACCOUNT_WHITE, _SIGNED = 0, 1, 2
# Bounded: cleared when full, so many addresses cannot grow it.
_MAX_VERDICTS = 4096
_MAX_KEPT_NAMES_CHARS = 1024  # topic and group names of a kept pass, together


def _address_verdict(tables: AclTables, remote_addr: str, access_key: str | None) -> tuple[int, Any]:
    """The global whitelist, the account, the account's whitelist (AclError when refused)."""
    ip = client_ip(remote_addr)
    for match in tables.global_white:
        if match(ip):
            return _GLOBAL_WHITE, None
    if access_key is None:
        raise AclError("No accessKey is configured")
    account = tables.accounts.get(access_key)
    if account is None:
        raise AclError(f"No acl config for {shown_key(access_key)}")
    if account.white(ip):
        return _ACCOUNT_WHITE, account
    return _SIGNED, account


def _verdict(tables: AclTables, remote_addr: str, access_key: str | None) -> tuple[int, Any]:
    """_address_verdict, kept per connection and access key (refusals raise and are not kept; nor
    is a verdict on a key no account has: a huge key must not fill the cache)."""
    verdicts = tables.address_verdicts
    key = (remote_addr, access_key)
    verdict = verdicts.get(key)
    if verdict is None:
        verdict = _address_verdict(tables, remote_addr, access_key)
        if access_key is None or access_key in tables.accounts:  # a key of bounded size
            if len(verdicts) >= _MAX_VERDICTS:
                verdicts.clear()
            verdicts[key] = verdict
    return verdict


def validate(tables: AclTables, remote_addr: str, cmd: RemotingCommand) -> str | None:
    """Let `cmd` through or raise AclError; returns the access key used (None when whitelisted)."""
    refused = validate_run(tables, remote_addr, [cmd])
    if refused is not None:
        raise refused[0]  # type: ignore[misc]
    access_key = (cmd.ext_fields or {}).get(ACCESS_KEY)
    return None if _verdict(tables, remote_addr, access_key)[0] == _GLOBAL_WHITE else access_key


_UNSET = object()  # no access key looked up yet (None is a request without one)
# validate_run's state on a connection it has not seen (see there)
_COLD: tuple[Any, ...] = (_UNSET, _GLOBAL_WHITE, None, None, None, None, None, -1)


def validate_run(
    tables: AclTables, remote_addr: str, cmds: list[RemotingCommand]
) -> list[AclError | None] | None:
    """validate for each of one connection's consecutive requests (a run the dispatcher hands its
    processor together); None when all pass, else the refusal of each (None where it passed).

    The same verdicts as request by request; the address and account are looked up once per access
    key on the connection (the run starts with its last run's state, AclTables.run_states), and a
    permission pass found for the previous request is compared, not looked up (by the compiled twin,
    for the requests that follow it, in one call: _csign.Sha1Keys.passes).
    """
    refused: list[AclError | None] | None = None
    # The run starts where the connection's last one left off: what that holds depends on the tables
    # (replaced as a whole when the files load again, with this state), the client's address and the
    # access key, as a run's own state does.
    states = tables.run_states
    state = states.get(remote_addr)
    if state is not None:
        # A run the compiled twin lets through whole, as the previous request passed (a consumer's
        # pulls one by one, a producer's sends): the loop below would do the same and keep the same
        # state, so it is neither unpacked nor stored again (docs/security.md, "Session 9").
        passer, passed, passed_code = state[4], state[6], state[7]
        if (
            passed is not None
            and passer is not None
            and passed_code != _HEART_BEAT
            and passer(cmds, 0, state[0], passed, passed_code, RESOURCE_FIELDS.get(passed_code, ()))
            == len(cmds)
        ):
            return None
    else:
        state = _COLD
        if len(states) >= _MAX_VERDICTS:
            states.clear()
    # kind: the verdict on the run's access key so far; passer: the compiled twin's way past the
    # requests that pass as the last one did; passed: the fields of the last request that passed
    last_key, kind, account, matches, passer, last_pass, passed, passed_code = state
    i, count = 0, len(cmds)
    while i < count:
        if passed is not None and passer is not None and passed_code != _HEART_BEAT:
            # the requests that follow with the same key, code, resource values and a good signature,
            # in one call (the loop below would let each through without a look-up); it stops at the
            # first it is not sure of, which the loop decides
            i = passer(cmds, i, last_key, passed, passed_code, RESOURCE_FIELDS.get(passed_code, ()))
            if i == count:
                break
        cmd = cmds[i]
        i += 1
        fields = cmd.ext_fields or {}
        access_key = fields.get(ACCESS_KEY)
        try:
            if access_key != last_key:
                kind, account = _verdict(tables, remote_addr, access_key)
                last_key, passed = access_key, None
                if kind == _SIGNED:
                    matches = signature_checker(account.secret_key)
                    passer = run_passer(account.secret_key)
            if kind == _SIGNED:
                if not matches(fields, cmd.body):
                    raise _signature_refused(account)
                code = cmd.code
                if code == _HEART_BEAT and cmd.body:  # its resources come from its body: checked every time
                    groups = _heartbeat_groups(cmd.body)
                    _check_resources(code, P.needed_perms(code, fields, groups), account)
                    continue
                # What the permission check decides depends on the account, the code and the fields
                # its resources come from, and on nothing else until the files load again: a pass is
                # kept. A run's sends mostly need what the one before needed: compared first, field
                # by field (no key built), then by the key of the pass.
                if (
                    code == passed_code
                    and passed is not None
                    and same_values(fields, passed, RESOURCE_FIELDS.get(code, ()))
                ):
                    continue
                reader = RESOURCE_VALUES.get(code)
                pass_key = (access_key, code, None if reader is None else reader(fields.get))
                if pass_key != last_pass:
                    last_pass = _check_pass(tables, account, fields, pass_key)
                if last_pass is not None:
                    passed, passed_code = fields, code
        except AclError as exc:
            if refused is None:
                refused = [None] * count
            refused[i - 1] = exc
    states[remote_addr] = (last_key, kind, account, matches, passer, last_pass, passed, passed_code)
    return refused


def _signature_refused(account: Account) -> AclError:
    return AclError(f"Check signature failed for accessKey={shown_key(account.access_key)}")


def _check_pass(
    tables: AclTables, account: Account, fields: dict[str, str], pass_key: tuple[Any, ...]
) -> tuple[Any, ...] | None:
    """The permissions of a signed request from `account` (AclError when refused) unless its
    `pass_key` (access key, code, the values of its resource fields) was kept as passed; refusals are
    not kept. Returns `pass_key` when it is (now) kept."""
    passes = tables.permission_passes
    if pass_key in passes:
        return pass_key
    code = pass_key[1]
    _check_resources(code, P.needed_perms(code, fields), account)
    # kept unless its names are longer than real ones (the processor refuses those next; an account
    # allowed by default must not pin memory with them)
    if sum(len(v) for v in pass_key[2] or () if v) <= _MAX_KEPT_NAMES_CHARS:
        if len(passes) >= _MAX_VERDICTS:
            passes.clear()
        passes.add(pass_key)
        return pass_key
    return None


def _check_resources(code: int, needed: dict[str, int], account: Account) -> None:
    if needed.get(RMQ_SYS_TRACE_TOPIC) == PUB:  # message traces: let through, as Java does
        return
    check_perm(code, needed, account)
