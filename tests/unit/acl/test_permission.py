"""Which resources each request code needs (PlainAccessValidator.parse) and permission checks."""

from __future__ import annotations

from typing import Any

import pytest

from rocketq.remoting.acl import permission as P
from rocketq.remoting.protocol.codes import RequestCode as RC


@pytest.mark.parametrize(
    ("code", "fields", "expected"),
    [
        (RC.SEND_MESSAGE, {"topic": "T", "producerGroup": "PG"}, {"T": P.PUB}),
        (RC.SEND_MESSAGE_V2, {"a": "PG", "b": "T"}, {"T": P.PUB}),
        (RC.SEND_BATCH_MESSAGE, {"a": "PG", "b": "T"}, {"T": P.PUB}),
        (RC.SEND_BATCH_MESSAGE, {"topic": "T"}, {"T": P.PUB}),
        (RC.SEND_MESSAGE_V2, {"a": "G", "b": "%RETRY%G"}, {"%RETRY%G": P.SUB}),
        (RC.CONSUMER_SEND_MSG_BACK, {"group": "G"}, {"%RETRY%G": P.SUB}),
        (RC.PULL_MESSAGE, {"topic": "T", "consumerGroup": "G"}, {"T": P.SUB, "%RETRY%G": P.SUB}),
        (RC.QUERY_MESSAGE, {"topic": "T"}, {"T": P.SUB}),
        (RC.UNREGISTER_CLIENT, {"consumerGroup": "G"}, {"%RETRY%G": P.SUB}),
        (RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G"}, {"%RETRY%G": P.SUB}),
        (RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "G", "topic": "T"}, {"%RETRY%G": P.SUB, "T": P.SUB}),
        (RC.POP_MESSAGE, {"consumerGroup": "G", "topic": "T"}, {"T": P.SUB, "%RETRY%G": P.SUB}),
        (RC.ACK_MESSAGE, {"consumerGroup": "G", "topic": "T"}, {"T": P.SUB, "%RETRY%G": P.SUB}),
        (RC.GET_BROKER_RUNTIME_INFO, {}, {}),
        (RC.UNREGISTER_CLIENT, {}, {}),  # a producer's unregister: no group
    ],
)
def test_needed_perms_per_code(code: int, fields: dict[str, str], expected: dict[str, int]) -> None:
    assert P.needed_perms(code, fields) == expected


def test_heartbeat_needs_its_groups_and_subscriptions() -> None:
    perms = P.needed_perms(RC.HEART_BEAT, {}, [("G", ["T1", "%RETRY%G"])])
    assert perms == {"%RETRY%G": P.SUB, "T1": P.SUB}


@pytest.mark.parametrize(
    ("needed", "owned", "ok"),
    [
        (P.PUB, P.PUB, True),
        (P.PUB, P.SUB, False),
        (P.SUB, P.PUB | P.SUB, True),
        (P.PUB, P.DENY, False),
        (P.ANY, P.SUB, True),
        (P.ANY, P.DENY, False),
        (P.PUB, P.DENY | P.PUB, False),
    ],
)
def test_check_permission(needed: int, owned: int, ok: bool) -> None:
    assert P.check_permission(needed, owned) is ok


def test_parse_perm_as_java() -> None:
    assert P.parse_perm("PUB") == P.PUB
    assert P.parse_perm(" SUB|PUB ") == P.PUB | P.SUB
    assert P.parse_perm("nonsense") == P.DENY
    assert P.parse_perm(None) == P.DENY


def test_admin_codes_hold_javas_and_the_acl_verbs() -> None:
    assert P.JAVA_ADMIN_CODES <= P.ADMIN_CODES
    assert {
        RC.UPDATE_AND_CREATE_ACL_CONFIG,
        RC.DELETE_ACL_CONFIG,
        RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
    } <= P.ADMIN_CODES
    assert RC.SEND_MESSAGE not in P.ADMIN_CODES
    assert P.NAMESRV_WRITE_CODES.isdisjoint({RC.GET_ROUTEINFO_BY_TOPIC, RC.GET_BROKER_CLUSTER_INFO})


class _Recording(dict[str, str]):
    """Fields that answer every key and note which ones were read."""

    def __init__(self, value: str | None) -> None:
        super().__init__()
        self.value, self.read = value, set[str]()

    def get(self, key: str, default: object = None) -> Any:  # type: ignore[override]
        self.read.add(key)
        return self.value

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return self.value is not None

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        if self.value is None:
            raise KeyError(key)
        return self.value


@pytest.mark.parametrize("code", sorted(set(RC) - {RC.HEART_BEAT}))
def test_needed_perms_reads_only_the_fields_the_validator_keeps_passes_by(code: int) -> None:
    # the validator keeps a passed check by what RESOURCE_VALUES[code] reads: any other field
    # needed_perms read would let one request reuse another's pass
    for value in ("T", "%RETRY%G", None):
        fields, kept_by = _Recording(value), _Recording(value)
        P.needed_perms(code, fields)
        reader = P.RESOURCE_VALUES.get(code)
        if reader is not None:
            reader(kept_by.get)
        assert fields.read <= kept_by.read, (code, value)


class _Fields(dict):  # type: ignore[type-arg]  # a dict subclass: the compiled compare does not decide it
    pass


def test_same_values_compiled_and_pure_agree() -> None:
    a = {"b": "topicB", "a": "PG", "x": "1"}
    cases = [
        (a, dict(a), ("b", "a")),
        (a, {**a, "x": "2"}, ("b", "a")),  # a field not named differs: the same
        (a, {**a, "b": "topicA"}, ("b", "a")),
        (a, {"b": "topicB"}, ("b", "a")),  # absent in one
        ({"x": "1"}, {"x": "2"}, ("b", "a")),  # absent in both
        (a, {**a, "b": "topic" + "B"[:1]}, ("b",)),  # equal, not the same object
        (a, dict(a), ()),
    ]
    for fields, previous, names in cases:
        pure = P._same_values(fields, previous, names)
        assert pure == (tuple(map(fields.get, names)) == tuple(map(previous.get, names)))
        if P._csign is not None:
            assert P._csign.same_values(fields, previous, names) is pure, (fields, previous, names)
    if P._csign is not None:
        assert P._csign.same_values(_Fields(a), dict(a), ("b",)) is None


def test_resource_fields_are_what_each_reader_reads() -> None:
    assert P.RESOURCE_FIELDS[RC.SEND_MESSAGE_V2] == ("b", "a", "topic", "producerGroup")
    assert P.RESOURCE_FIELDS[RC.PULL_MESSAGE] == ("topic", "consumerGroup")
    assert set(P.RESOURCE_FIELDS) == set(P.RESOURCE_VALUES)
