"""PlainAccessValidator's order and remarks, and the account files (load, reload, bad file, folders)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from rocketq.remoting.acl.errors import AclError
from rocketq.remoting.acl.plain_config import PlainAclConfig
from rocketq.remoting.acl.server_hook import AclServerHook
from rocketq.remoting.acl.signing import sign_request
from rocketq.remoting.acl.validator import validate, validate_run
from rocketq.remoting.protocol.bodies.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from rocketq.remoting.protocol.codes import RequestCode as RC
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport.hooks import RequestRefused

ACL = """
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: "12345678"
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: "12345678"
    whiteRemoteAddress: 192.168.1.*
    admin: true
"""

PEER = "127.0.0.1:50000"


@pytest.fixture
def acl(tmp_path: Path) -> PlainAclConfig:
    (tmp_path / "plain_acl.yml").write_text(ACL, encoding="utf-8")
    return PlainAclConfig(str(tmp_path / "plain_acl.yml"))


def signed(
    code: int, fields: dict[str, str], body: bytes = b"", ak: str = "RocketMQ", sk: str = "12345678"
) -> RemotingCommand:
    f = dict(fields)
    sign_request(f, body, ak, sk)
    return RemotingCommand(code=code, ext_fields=f, body=body)


def refused(acl: PlainAclConfig, cmd: RemotingCommand, peer: str = PEER) -> str:
    with pytest.raises(AclError) as err:
        validate(acl.tables, peer, cmd)
    return str(err.value)


def test_signed_request_with_permission_passes(acl: PlainAclConfig) -> None:
    assert (
        validate(acl.tables, PEER, signed(RC.SEND_MESSAGE_V2, {"a": "P", "b": "topicB"}, b"x")) == "RocketMQ"
    )


def test_refusals_name_what_is_wrong(acl: PlainAclConfig) -> None:
    assert (
        refused(acl, RemotingCommand(code=RC.SEND_MESSAGE_V2, ext_fields={"b": "topicB"}))
        == "No accessKey is configured"
    )
    assert (
        refused(acl, signed(RC.SEND_MESSAGE_V2, {"b": "topicB"}, ak="nobody12"))
        == "No acl config for nobody12"
    )
    assert "Check signature failed for accessKey=RocketMQ" in refused(
        acl, signed(RC.SEND_MESSAGE_V2, {"b": "topicB"}, sk="wrong-secret")
    )
    tampered = signed(RC.SEND_MESSAGE_V2, {"b": "topicB"}, b"body")
    tampered.body = b"BODY"
    assert "Check signature failed" in refused(acl, tampered)
    remark = refused(acl, signed(RC.SEND_MESSAGE_V2, {"b": "topicC"}))
    assert "topic:topicC" in remark and "PUB needed" in remark
    remark = refused(acl, signed(RC.PULL_MESSAGE, {"topic": "topicB", "consumerGroup": "groupA"}))
    assert "group:groupA" in remark
    remark = refused(acl, signed(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "X"}))
    assert remark == "Need admin permission for request code=17, but accessKey=RocketMQ is not"
    assert "12345678" not in remark


def test_default_perms_apply_to_unlisted_resources(acl: PlainAclConfig) -> None:
    assert "topic:other" in refused(acl, signed(RC.SEND_MESSAGE_V2, {"b": "other"}))  # defaultTopicPerm DENY
    # defaultGroupPerm SUB lets an unlisted group consume a listed SUB topic
    validate(acl.tables, PEER, signed(RC.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "g9"}))


def test_whitelists_skip_the_signature(acl: PlainAclConfig) -> None:
    unsigned = RemotingCommand(code=RC.UPDATE_AND_CREATE_TOPIC, ext_fields={"topic": "X"})
    assert validate(acl.tables, "10.10.103.7:1234", unsigned) is None  # global whitelist
    own = RemotingCommand(code=RC.UPDATE_AND_CREATE_TOPIC, ext_fields={"AccessKey": "rocketmq2"})
    assert validate(acl.tables, "192.168.1.20:1234", own) == "rocketmq2"  # the account's own
    assert "Check signature failed" in refused(acl, own, "192.168.2.20:1234")


def test_heartbeat_body_is_checked(acl: PlainAclConfig) -> None:
    hb = HeartbeatData(client_id="c", consumer_data_set=[
        ConsumerData(group_name="groupB", subscription_data_set=[SubscriptionData(topic="topicA")])
    ])  # fmt: skip
    assert "topic:topicA" in refused(acl, signed(RC.HEART_BEAT, {}, hb.encode()))
    assert "heartbeat body" in refused(acl, signed(RC.HEART_BEAT, {}, b"{not json"))


def test_huge_access_key_is_cut_in_the_remark(acl: PlainAclConfig) -> None:
    remark = refused(acl, signed(RC.SEND_MESSAGE_V2, {"b": "T"}, ak="K" * 100_000))
    assert len(remark) < 200


def test_unique_key_query_flag_signed_either_way(acl: PlainAclConfig) -> None:
    fields = {"topic": "topicC", "key": "k", "_UNIQUE_KEY_QUERY": "true"}
    validate(acl.tables, PEER, signed(RC.QUERY_MESSAGE, fields))  # Java's client signs the flag too


def test_bad_file_keeps_the_last_good_tables(acl: PlainAclConfig, caplog: pytest.LogCaptureFixture) -> None:
    path = Path(acl.default_file)
    path.write_text("accounts:\n  - accessKey: short\n    secretKey: x\n", encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    with caplog.at_level(logging.ERROR, "rocketq.acl"):
        assert acl.reload_if_changed() is False
    assert "RocketMQ" in acl.tables.accounts
    assert "length should longer than 6" in caplog.text
    path.write_text("accounts: [{accessKey: newkey12, secretKey: newsecret}]\n", encoding="utf-8")
    os.utime(path, ns=(2, 2))
    assert acl.reload_if_changed() is True
    assert set(acl.tables.accounts) == {"newkey12"}
    assert acl.reload_if_changed() is False  # unchanged: nothing read


def test_files_under_the_acl_folder_are_read_and_duplicates_refused(tmp_path: Path) -> None:
    (tmp_path / "plain_acl.yml").write_text(ACL, encoding="utf-8")
    (tmp_path / "acl").mkdir()
    (tmp_path / "acl" / "team.yaml").write_text(
        "accounts: [{accessKey: team1234, secretKey: teamsecret}]\n", encoding="utf-8"
    )
    acl = PlainAclConfig(str(tmp_path / "plain_acl.yml"))
    assert set(acl.tables.accounts) == {"RocketMQ", "rocketmq2", "team1234"}
    assert acl.tables.accounts["team1234"].file.endswith("team.yaml")
    (tmp_path / "acl" / "dup.yml").write_text(
        "accounts: [{accessKey: team1234, secretKey: teamsecret}]\n", encoding="utf-8"
    )
    assert acl.reload_if_changed() is False
    folder = PlainAclConfig(str(tmp_path / "acl"))  # a folder: its files only, the error named
    assert folder.tables.accounts == {}


def test_admin_edits_write_the_file_and_reload(acl: PlainAclConfig) -> None:
    acl.update_account(
        {"accessKey": "added123", "secretKey": "addedsecret", "topicPerms": ["T=PUB"], "admin": False}
    )
    assert acl.tables.accounts["added123"].perms == {"T": 4}
    acl.update_account({"accessKey": "RocketMQ", "defaultTopicPerm": "PUB"})
    assert acl.tables.accounts["RocketMQ"].default_topic_perm == 4
    assert acl.delete_account("added123") is True
    assert acl.delete_account("added123") is False
    acl.update_global_white(["127.0.0.*"])
    assert validate(acl.tables, PEER, RemotingCommand(code=RC.SEND_MESSAGE, ext_fields={})) is None
    with pytest.raises(AclError):
        acl.update_global_white(["1.2.3.4/8"])
    assert acl.tables.versions[acl.default_file]["counter"] == 4


def test_server_hook_answers_no_permission_and_logs_once_per_client(
    acl: PlainAclConfig, caplog: pytest.LogCaptureFixture
) -> None:
    now = [0.0]
    hook = AclServerHook(acl, clock=lambda: now[0])
    cmd = RemotingCommand(code=RC.SEND_MESSAGE, ext_fields={"topic": "T"})
    with caplog.at_level(logging.WARNING, "rocketq.acl"):
        for _ in range(5):
            with pytest.raises(RequestRefused) as err:
                hook.do_before_request(PEER, cmd)
            assert err.value.code == ResponseCode.NO_PERMISSION
        now[0] = 61.0
        with pytest.raises(RequestRefused):
            hook.do_before_request(PEER, cmd)
    lines = [r.getMessage() for r in caplog.records if "ACL refused" in r.getMessage()]
    assert len(lines) == 2
    assert "4 more refusals" in lines[1]
    AclServerHook(acl, checked=lambda code: False).do_before_request(PEER, cmd)  # not a checked code


def test_address_verdicts_are_cached_per_connection_until_the_files_reload(acl: PlainAclConfig) -> None:
    own = RemotingCommand(code=RC.UPDATE_AND_CREATE_TOPIC, ext_fields={"AccessKey": "rocketmq2"})
    assert validate(acl.tables, "192.168.1.20:1234", own) == "rocketmq2"
    assert validate(acl.tables, "192.168.1.20:1234", own) == "rocketmq2"  # from the cache
    assert list(acl.tables.address_verdicts) == [("192.168.1.20:1234", "rocketmq2")]
    refused(acl, signed(RC.SEND_MESSAGE_V2, {"b": "T"}, ak="K" * 100_000))  # unknown keys are not kept
    assert len(acl.tables.address_verdicts) == 1
    # the account loses its whitelist: the reloaded tables decide again (signature needed now)
    acl.update_account({"accessKey": "rocketmq2", "whiteRemoteAddress": "10.0.0.1"})
    assert acl.tables.address_verdicts == {}
    assert "Check signature failed" in refused(acl, own, "192.168.1.20:1234")


def test_permission_passes_are_kept_per_account_code_and_resource_until_the_files_reload(
    acl: PlainAclConfig,
) -> None:
    send_b = signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"}, b"x")
    assert validate(acl.tables, PEER, send_b) == "RocketMQ"
    assert validate(acl.tables, PEER, send_b) == "RocketMQ"  # from the kept pass
    assert acl.tables.permission_passes == {("RocketMQ", RC.SEND_MESSAGE_V2, ("topicB", "PG", None, None))}
    # another resource or another code is checked on its own, and a refusal is not kept
    assert "topic:topicA" in refused(acl, signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicA"}))
    assert "topic:topicC" in refused(acl, signed(RC.SEND_MESSAGE, {"topic": "topicC"}))
    assert "Need admin permission" in refused(acl, signed(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "topicB"}))
    assert len(acl.tables.permission_passes) == 1
    # a pass on names longer than any real one is not kept (a stranger's or an account's flood)
    huge = signed(RC.PULL_MESSAGE, {"topic": "T" * 100_000, "consumerGroup": "groupB"})
    acl.update_account({"accessKey": "RocketMQ", "defaultTopicPerm": "SUB", "topicPerms": ["topicB=PUB|SUB"]})
    assert validate(acl.tables, PEER, huge) == "RocketMQ"
    assert validate(acl.tables, PEER, send_b) == "RocketMQ"
    assert len(acl.tables.permission_passes) == 1
    # topicB loses PUB: the reloaded tables check again
    acl.update_account({"accessKey": "RocketMQ", "topicPerms": ["topicB=SUB"]})
    assert acl.tables.permission_passes == set()
    assert "topic:topicB" in refused(acl, send_b)


def _mixed_requests() -> list[RemotingCommand]:
    """Passes and every kind of refusal, of two accounts and none, in one sequence."""
    hb = HeartbeatData(client_id="c", consumer_data_set=[
        ConsumerData(group_name="groupB", subscription_data_set=[SubscriptionData(topic="topicA")])
    ])  # fmt: skip
    tampered = signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"}, b"body")
    tampered.body = b"BODY"
    return [
        signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"}, b"1"),
        signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"}, b"2"),  # the same pass again
        tampered,
        signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicA"}, b"3"),  # DENY after a pass
        signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"}, b"4"),
        signed(RC.SEND_MESSAGE_V2, {"b": "topicB"}, b"5", sk="wrong-secret"),
        RemotingCommand(code=RC.SEND_MESSAGE_V2, ext_fields={"b": "topicB"}),  # unsigned
        signed(RC.SEND_MESSAGE_V2, {"b": "topicB"}, ak="nobody12"),
        signed(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "X"}, ak="rocketmq2"),  # admin, signed
        signed(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "X"}),  # not admin
        signed(RC.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "g9"}),
        signed(RC.PULL_MESSAGE, {"topic": "topicB", "consumerGroup": "groupA"}),
        signed(RC.HEART_BEAT, {}, hb.encode()),
        signed(RC.HEART_BEAT, {}, b"{not json"),
        signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"}, b"6"),
        signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicA"}, b"7"),  # DENY right after the same code's pass
    ]


def _verdicts_alone(acl: PlainAclConfig, peer: str, requests: list[RemotingCommand]) -> list[str | None]:
    """validate's verdict on each of `requests`, one by one: None, or the refusal's remark."""
    alone: list[str | None] = []
    for cmd in requests:
        try:
            validate(acl.tables, peer, cmd)
            alone.append(None)
        except AclError as exc:
            alone.append(str(exc))
    return alone


@pytest.mark.parametrize("peer", [PEER, "192.168.1.20:1234", "10.10.103.7:1234"])
def test_a_run_gets_the_verdicts_of_its_requests_one_by_one(acl: PlainAclConfig, peer: str) -> None:
    """validate_run (the dispatcher's runs) refuses exactly what validate refuses, with its remark,
    from cold and from warm caches, and from whitelisted addresses."""
    requests = _mixed_requests()
    for _ in range(2):  # cold, then with the verdicts and passes kept
        alone = _verdicts_alone(acl, peer, requests)
        together = validate_run(acl.tables, peer, requests) or [None] * len(requests)
        assert [None if exc is None else str(exc) for exc in together] == alone
    if peer == PEER:
        assert alone.count(None) == 6  # the sends of topicB (all but the tampered), admin, one pull
    acl.tables.address_verdicts.clear()
    acl.tables.permission_passes.clear()
    assert validate_run(acl.tables, peer, requests[:2] + requests[4:5]) is None


def test_a_run_looks_its_access_key_up_once(acl: PlainAclConfig) -> None:
    looked_up: list[object] = []

    class Counting(dict):  # type: ignore[type-arg]
        def get(self, key: object, default: object = None) -> object:
            looked_up.append(key)
            return super().get(key, default)

    acl.tables.address_verdicts = Counting()
    sends = [signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"}, bytes([i])) for i in range(8)]
    other = signed(RC.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "g9"}, ak="rocketmq2")
    assert validate_run(acl.tables, PEER, [*sends[:4], other, *sends[4:]]) is None
    assert looked_up == [(PEER, "RocketMQ"), (PEER, "rocketmq2"), (PEER, "RocketMQ")]


def test_server_hook_refuses_in_a_run_what_it_refuses_alone(acl: PlainAclConfig) -> None:
    hook = AclServerHook(acl)
    requests = _mixed_requests()
    refusals = hook.do_before_requests(PEER, requests)
    assert refusals is not None and hook.refused == len(requests) - 6
    for cmd, exc in zip(requests, refusals, strict=True):
        if exc is None:
            hook.do_before_request(PEER, cmd)
            continue
        assert isinstance(exc, RequestRefused) and exc.code == ResponseCode.NO_PERMISSION
        with pytest.raises(RequestRefused) as alone:
            hook.do_before_request(PEER, cmd)
        assert alone.value.remark == exc.remark
    # a NameServer's hook checks its codes only, in a run as alone
    namesrv = AclServerHook(acl, checked=lambda code: code == RC.UPDATE_AND_CREATE_TOPIC)
    picked = namesrv.do_before_requests(PEER, requests)
    assert picked is not None
    assert [i for i, exc in enumerate(picked) if exc is not None] == [9]


def _runs_of_sends() -> list[RemotingCommand]:
    """Sends that pass as the one before them did, broken by every way one can differ from it."""
    sends = [signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"}, bytes([i])) for i in range(12)]
    tampered_body = signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"}, b"body")
    tampered_body.body = b"BODY"
    tampered_field = signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB", "e": "1"}, b"x")
    tampered_field.ext_fields["e"] = "2"  # type: ignore[index]
    # Java's client signs _UNIQUE_KEY_QUERY too: accepted, though the content without it does not match
    unique_query = signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB", "_UNIQUE_KEY_QUERY": "true"}, b"u")
    no_fields = RemotingCommand(code=RC.SEND_MESSAGE_V2, ext_fields=None)
    return [
        *sends[:3],
        tampered_body,
        *sends[3:5],
        signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicA"}, b"d"),  # DENY
        sends[5],
        signed(RC.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"}, b"o", ak="rocketmq2"),  # another account
        sends[6],
        tampered_field,
        unique_query,
        sends[7],
        signed(RC.SEND_MESSAGE, {"a": "PG", "b": "topicB"}, b"c"),  # another code, same resources
        sends[8],
        no_fields,
        sends[9],
        signed(RC.SEND_MESSAGE_V2, {"a": "PG2", "b": "topicB"}, b"g"),  # another group
        signed(RC.SEND_MESSAGE_V2, {"a": "PG2", "b": "topicB"}, b"h"),
        signed(RC.HEART_BEAT, {}),  # no body: its pass is by the code alone
        signed(RC.HEART_BEAT, {}, b"{not json"),
        *sends[10:],
    ]


def test_a_run_of_sends_gets_the_verdicts_of_its_requests_one_by_one(acl: PlainAclConfig) -> None:
    """The compiled twin passes the requests of a run that follow one that passed (Sha1Keys.passes);
    whatever differs from that request stops it, and the run's verdicts stay those of each request
    alone, from cold and from warm caches (the pure path runs the same test)."""
    requests = _runs_of_sends()
    for _ in range(2):
        alone = _verdicts_alone(acl, PEER, requests)
        together = validate_run(acl.tables, PEER, requests) or [None] * len(requests)
        assert [None if exc is None else str(exc) for exc in together] == alone
    assert [i for i, verdict in enumerate(alone) if verdict is not None] == [3, 6, 10, 15, 20]
    for start in range(len(requests)):  # every suffix: a run may start anywhere
        part = requests[start:]
        together = validate_run(acl.tables, PEER, part) or [None] * len(part)
        assert [None if exc is None else str(exc) for exc in together] == alone[start:]


def test_the_compiled_run_passer_stops_at_the_first_request_it_is_not_sure_of() -> None:
    from rocketq.remoting.acl import signing

    passer = signing.run_passer("12345678")
    if passer is None:
        pytest.skip("the compiled accelerators are not built (or ROCKETQ_NO_EXTENSIONS is set)")
    requests = _runs_of_sends()
    first = requests[0].ext_fields
    assert first is not None
    names = ("b", "a", "topic", "producerGroup")
    code = int(RC.SEND_MESSAGE_V2)
    assert passer(requests, 1, "RocketMQ", first, code, names) == 3  # the tampered body
    assert passer(requests, 4, "RocketMQ", first, code, names) == 6  # topicA
    assert passer(requests, 7, "RocketMQ", first, code, names) == 8  # another account
    assert passer(requests, 9, "RocketMQ", first, code, names) == 10  # a tampered field
    assert passer(requests, 11, "RocketMQ", first, code, names) == 11  # signed with _UNIQUE_KEY_QUERY
    assert passer(requests, 12, "RocketMQ", first, code, names) == 13  # SEND_MESSAGE
    assert passer(requests, 14, "RocketMQ", first, code, names) == 15  # no fields
    assert passer(requests, 16, "RocketMQ", first, code, names) == 17  # another group
    assert passer(requests, 21, "RocketMQ", first, code, names) == len(requests)
    assert passer(requests, 1, "rocketmq2", first, code, names) == 1  # not the key of the run
    assert passer(requests, 1, "RocketMQ", dict(first), code, names) == 3  # an equal copy of the pass
    assert passer(requests, 1, None, first, code, names) == 1
