"""Permissions and the resources each request code needs.

Port of org.apache.rocketmq.acl.common.Permission and of PlainAccessValidator.parse (4.9.8): which
topic (PUB or SUB) and which group (as its retry topic, SUB) a request touches. Deviation, deliberate:
Java's ADMIN_CODE holds five codes, which lets any signed account change the ACL itself, reset
offsets or wipe a broker's write permission; ADMIN_CODES here adds those, and broker registration
(so only an admin account can put a broker in the routes; see docs/security.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from rocketq.common.constants import RETRY_GROUP_TOPIC_PREFIX
from rocketq.common.record.accel import load_extension
from rocketq.remoting.acl.errors import AclError
from rocketq.remoting.acl.signing import CSIGN_API_VERSION
from rocketq.remoting.protocol.codes import RequestCode as RC

DENY: Final = 1
ANY: Final = 1 << 1
PUB: Final = 1 << 2
SUB: Final = 1 << 3

_BY_NAME: Final = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}

# Java's Permission.ADMIN_CODE.
JAVA_ADMIN_CODES: Final = frozenset(
    {
        RC.UPDATE_AND_CREATE_TOPIC,
        RC.UPDATE_BROKER_CONFIG,
        RC.DELETE_TOPIC_IN_BROKER,
        RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RC.DELETE_SUBSCRIPTIONGROUP,
    }
)

# What only an admin account may do here: Java's five, plus the ACL verbs themselves and the codes
# that rewrite other groups' offsets, the cluster's routes or the NameServer's configuration.
ADMIN_CODES: Final = JAVA_ADMIN_CODES | frozenset(
    {
        RC.UPDATE_AND_CREATE_ACL_CONFIG,
        RC.DELETE_ACL_CONFIG,
        RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
        RC.GET_BROKER_CLUSTER_ACL_CONFIG,
        RC.INVOKE_BROKER_TO_RESET_OFFSET,
        RC.RESET_CONSUMER_CLIENT_OFFSET,
        RC.CLONE_GROUP_OFFSET,
        RC.DELETE_TOPIC_IN_NAMESRV,
        RC.WIPE_WRITE_PERM_OF_BROKER,
        RC.ADD_WRITE_PERM_OF_BROKER,
        RC.PUT_KV_CONFIG,
        RC.DELETE_KV_CONFIG,
        RC.UPDATE_NAMESRV_CONFIG,
        RC.REGISTER_BROKER,
        RC.UNREGISTER_BROKER,
    }
)

# The NameServer verifies the codes that change it (Java 4.9's NameServer has no ACL at all); its
# reads (routes, cluster info, KV reads) stay open, since every client needs them before anything.
NAMESRV_WRITE_CODES: Final = frozenset(
    {
        RC.PUT_KV_CONFIG,
        RC.DELETE_KV_CONFIG,
        RC.REGISTER_BROKER,
        RC.UNREGISTER_BROKER,
        RC.WIPE_WRITE_PERM_OF_BROKER,
        RC.ADD_WRITE_PERM_OF_BROKER,
        RC.DELETE_TOPIC_IN_NAMESRV,
        RC.UPDATE_NAMESRV_CONFIG,
    }
)


def parse_perm(text: str | None) -> int:
    """Permission.parsePermFromString: unknown or missing text is DENY."""
    if text is None:
        return DENY
    return _BY_NAME.get(str(text).strip(), DENY)


def check_resource_perm(resource: str) -> None:
    """Permission.checkResourcePerms for one `Res=Perm` item; AclError naming the bad item."""
    items = [p for p in resource.split("=") if p]
    if len(items) != 2:
        raise AclError(
            f"Parse Resource format error for {resource}. The expected resource format is 'Res=Perm'. "
            "For example: topicA=SUB"
        )
    if items[1].strip() not in _BY_NAME:
        raise AclError(
            f"Parse resource permission error for {resource}. "
            "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
        )


def check_permission(needed: int, owned: int) -> bool:
    """Permission.checkPermission."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def perm_name(perm: int) -> str:
    return {PUB: "PUB", SUB: "SUB", PUB | SUB: "PUB|SUB", DENY: "DENY", ANY: "ANY"}.get(perm, str(perm))


def retry_topic(group: str | None) -> str | None:
    return None if group is None else RETRY_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str | None) -> bool:
    return topic is not None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def print_resource(resource: str) -> str:
    """PlainAccessResource.printStr: `group:G` for a retry topic, `topic:T` otherwise."""
    if is_retry_topic(resource):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX) :]}"
    return f"topic:{resource}"


# Java's switch has SEND_MESSAGE and SEND_MESSAGE_V2 only, so its batches need no permission at all.
_SEND_CODES: Final = frozenset({RC.SEND_MESSAGE, RC.SEND_MESSAGE_V2, RC.SEND_BATCH_MESSAGE})


_POP_CODES: Final = frozenset({RC.POP_MESSAGE, RC.ACK_MESSAGE, RC.CHANGE_MESSAGE_INVISIBLETIME})


# The values of the header fields needed_perms reads, by request code, from the request's
# fields.get (HEART_BEAT's resources come from its body; a code not here reads no field): the
# validator keeps a passed check by them. Each reader gets the fields written out (a tuple of `get`s
# costs 0.25 us a send, `map` over a tuple of names 0.38). needed_perms reads fields only through
# .get, so an absent field and a null one are alike to it (and in the key). A unit test checks that
# needed_perms reads no field its code's reader does not.
_Get = Callable[[str], "str | None"]
RESOURCE_VALUES: Final[dict[int, Callable[[_Get], tuple[str | None, ...]]]] = {
    **dict.fromkeys(_SEND_CODES, lambda get: (get("b"), get("a"), get("topic"), get("producerGroup"))),
    RC.CONSUMER_SEND_MSG_BACK: lambda get: (get("group"),),
    RC.PULL_MESSAGE: lambda get: (get("topic"), get("consumerGroup")),
    RC.QUERY_MESSAGE: lambda get: (get("topic"),),
    RC.UNREGISTER_CLIENT: lambda get: (get("consumerGroup"),),
    RC.GET_CONSUMER_LIST_BY_GROUP: lambda get: (get("consumerGroup"),),
    **dict.fromkeys(_POP_CODES, lambda get: (get("topic"), get("consumerGroup"))),
    RC.UPDATE_CONSUMER_OFFSET: lambda get: (get("consumerGroup"), get("topic")),
}


def _fields_read(reader: Callable[[_Get], tuple[str | None, ...]]) -> tuple[str, ...]:
    names: list[str] = []
    reader(lambda name: names.append(name))
    return tuple(names)


# The names each RESOURCE_VALUES reader reads (they read the same fields whatever the values; a code
# not here reads none).
RESOURCE_FIELDS: Final[dict[int, tuple[str, ...]]] = {
    code: _fields_read(r) for code, r in RESOURCE_VALUES.items()
}


def _same_values(
    fields: Mapping[str, str], previous: Mapping[str, str], names: tuple[str, ...]
) -> bool | None:
    get, was = fields.get, previous.get
    for name in names:
        if get(name) != was(name):
            return False
    return True


# same_values(fields, previous, names): whether two requests' fields hold equal values (or both none)
# under each of `names`; with RESOURCE_FIELDS, whether a request needs what the previous one needed.
# The compiled one (_csign.same_values) builds no objects; it answers None for a dict subclass, which
# the caller takes as "not known to be the same".
_csign = load_extension("rocketq.remoting.acl._csign", CSIGN_API_VERSION)
same_values: Callable[[Mapping[str, str], Mapping[str, str], tuple[str, ...]], bool | None] = (
    _same_values if _csign is None else _csign.same_values
)


def _put(perms: dict[str, int], resource: str | None, perm: int) -> None:
    if resource is not None:
        perms[resource] = perm


def needed_perms(
    code: int, fields: Mapping[str, str], heartbeat_groups: list[tuple[str, list[str]]] | None = None
) -> dict[str, int]:
    """The resources (topics; groups as their retry topics) request `code` needs, and how.

    `heartbeat_groups`: for HEART_BEAT, the (consumer group, subscribed topics) of its body, which the
    caller decodes (the body codec lives above this module's concerns).
    """
    get = fields.get
    if code in _SEND_CODES:  # the hot path: written out, without the helpers' calls
        # V2 headers (SEND_MESSAGE_V2, and batches sent with them) name the topic "b", the group "a".
        topic = get("b")
        v2 = topic is not None
        if not v2:
            topic = get("topic")
        if topic is None:
            return {}
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return {topic: PUB}
        # Java reads a "group" field the V1 header does not have (so it checks nothing); the
        # producer group is what the header carries.
        group = get("a") if v2 else get("producerGroup")
        return {} if group is None else {RETRY_GROUP_TOPIC_PREFIX + group: SUB}
    perms: dict[str, int] = {}
    if code == RC.CONSUMER_SEND_MSG_BACK:
        _put(perms, retry_topic(get("group")), SUB)
    elif code == RC.PULL_MESSAGE:
        _put(perms, get("topic"), SUB)
        _put(perms, retry_topic(get("consumerGroup")), SUB)
    elif code == RC.QUERY_MESSAGE:
        _put(perms, get("topic"), SUB)
    elif code == RC.HEART_BEAT:
        for group, topics in heartbeat_groups or ():
            _put(perms, retry_topic(group), SUB)
            for topic in topics:
                _put(perms, topic, SUB)
    elif code in (RC.UNREGISTER_CLIENT, RC.GET_CONSUMER_LIST_BY_GROUP):
        _put(perms, retry_topic(get("consumerGroup")), SUB)
    elif code in _POP_CODES:
        # Not in Java 4.9 (no POP there); as RocketMQ 5 checks them: SUB on the topic and the group.
        _put(perms, get("topic"), SUB)
        _put(perms, retry_topic(get("consumerGroup")), SUB)
    elif code == RC.UPDATE_CONSUMER_OFFSET:
        _put(perms, retry_topic(get("consumerGroup")), SUB)
        _put(perms, get("topic"), SUB)
    return perms
