"""ACL against real daemons: each refusal is NO_PERMISSION with the remark naming why, on requests
made by hand (RawConnection) so that every field can be wrong in exactly one way; whitelists; bad
input (malformed signature, Signature without AccessKey, huge AccessKey, non-UTF-8 header); the
account file changed while the broker runs."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from pathlib import Path
from types import SimpleNamespace

from prometheus_client.parser import text_string_to_metric_families

from rocketq.remoting.acl.signing import sign_request
from rocketq.remoting.protocol.codes import RequestCode as RC
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.waiting import wait_for
from rocketq.testing.wire import RawConnection, raw_frame

NO_PERMISSION = ResponseCode.NO_PERMISSION


def signed(code: int, fields: dict[str, str], body: bytes, key: tuple[str, str]) -> RemotingCommand:
    f = dict(fields)
    sign_request(f, body, key[0], key[1])
    return RemotingCommand.request(code, f, body)


def send_fields(topic: str = "TopicAcl") -> dict[str, str]:
    # SendMessageRequestHeaderV2 as a Java producer writes it
    return {"a": "pg-acl", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0",
            "i": "", "j": "0", "k": "false", "m": "false"}  # fmt: skip


async def expect(
    conn: RawConnection, cmd: RemotingCommand, code: int, remark_part: str | None = None
) -> RemotingCommand:
    response = await conn.request(cmd)
    assert response.code == code, (response.code, response.remark)
    if remark_part is not None:
        assert remark_part in (response.remark or ""), response.remark
    return response


async def test_each_refusal_is_no_permission_with_its_remark(
    cluster_factory: ClusterFactory, tmp_path: Path, sec: SimpleNamespace
) -> None:
    acl_file = sec.write_acl(tmp_path / "conf")
    cluster = await cluster_factory(
        broker_overrides=sec.acl_overrides(acl_file), namesrv_overrides=sec.acl_overrides(acl_file)
    )
    broker = cluster.brokers[0]
    async with await RawConnection.open(broker.addr) as conn:
        create = signed(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "TopicAcl", "defaultTopic": "TBW102", "readQueueNums": "4",
                        "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
                        "order": "false"}, b"", sec.ADMIN)  # fmt: skip
        await expect(conn, create, ResponseCode.SUCCESS)
        body = b"hello acl"
        await expect(conn, signed(RC.SEND_MESSAGE_V2, send_fields(), body, sec.USER), ResponseCode.SUCCESS)
        # unsigned
        await expect(
            conn,
            RemotingCommand.request(RC.SEND_MESSAGE_V2, send_fields(), body),
            NO_PERMISSION,
            "No accessKey is configured",
        )
        # wrong secret, unknown access key
        await expect(conn, signed(RC.SEND_MESSAGE_V2, send_fields(), body, (sec.USER[0], "not-the-secret")), NO_PERMISSION,
                     f"Check signature failed for accessKey={sec.USER[0]}")  # fmt: skip
        await expect(conn, signed(RC.SEND_MESSAGE_V2, send_fields(), body, ("stranger1", "whatever1")), NO_PERMISSION,
                     "No acl config for stranger1")  # fmt: skip
        # tampered field, tampered body
        cmd = signed(RC.SEND_MESSAGE_V2, send_fields(), body, sec.USER)
        assert cmd.ext_fields is not None
        cmd.ext_fields["b"] = "TopicOther"
        await expect(conn, cmd, NO_PERMISSION, "Check signature failed")
        cmd = signed(RC.SEND_MESSAGE_V2, send_fields(), body, sec.USER)
        cmd.body = b"hello ACL"
        await expect(conn, cmd, NO_PERMISSION, "Check signature failed")
        # PUB-only pulling, SUB-only sending, non-admin running an admin code
        pull = {"consumerGroup": "cg-acl", "topic": "TopicAcl", "queueId": "0", "queueOffset": "0", "maxMsgNums": "1",
                "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0"}  # fmt: skip
        await expect(
            conn,
            signed(RC.PULL_MESSAGE, pull, b"", sec.PUB_ONLY),
            NO_PERMISSION,
            "topic:TopicAcl: SUB needed",
        )
        await expect(
            conn,
            signed(RC.SEND_MESSAGE_V2, send_fields(), body, sec.SUB_ONLY),
            NO_PERMISSION,
            "topic:TopicAcl: PUB needed",
        )
        response = await conn.request(signed(RC.PULL_MESSAGE, pull, b"", sec.SUB_ONLY))
        assert response.code != NO_PERMISSION, (
            response.remark
        )  # past ACL (the pull itself needs a heartbeat first)
        await expect(conn, signed(RC.DELETE_TOPIC_IN_BROKER, {"topic": "TopicAcl"}, b"", sec.USER), NO_PERMISSION,
                     f"Need admin permission for request code={RC.DELETE_TOPIC_IN_BROKER}, but accessKey={sec.USER[0]} is not")  # fmt: skip
        await expect(conn, signed(RC.UPDATE_AND_CREATE_ACL_CONFIG, {"accessKey": "sneaky123", "secretKey": "sneaky123", "admin": "true"},
                     b"", sec.USER), NO_PERMISSION, "Need admin permission")  # fmt: skip
        # whitelists: the account's own address pattern skips the signature; another pattern does not
        await expect(
            conn,
            RemotingCommand.request(RC.GET_BROKER_RUNTIME_INFO, {"AccessKey": "trusted01"}),
            ResponseCode.SUCCESS,
        )
        await expect(conn, RemotingCommand.request(RC.GET_BROKER_RUNTIME_INFO, {"AccessKey": "faraway01"}), NO_PERMISSION,
                     "Check signature failed for accessKey=faraway01")  # fmt: skip
        # bad input: malformed signature, Signature without AccessKey, huge AccessKey
        cmd = signed(RC.SEND_MESSAGE_V2, send_fields(), body, sec.USER)
        assert cmd.ext_fields is not None
        cmd.ext_fields["Signature"] = "%%% not base64 \u00e9" * 1000
        await expect(conn, cmd, NO_PERMISSION, "Check signature failed")
        cmd = RemotingCommand.request(RC.SEND_MESSAGE_V2, {**send_fields(), "Signature": "AAAA"}, body)
        await expect(conn, cmd, NO_PERMISSION, "No accessKey is configured")
        huge = signed(RC.SEND_MESSAGE_V2, send_fields(), body, ("K" * 1_000_000, "whatever1"))
        response = await expect(conn, huge, NO_PERMISSION, "No acl config for KKKK")
        assert len(response.remark or "") < 200, "a huge access key is not echoed whole"
        # the connection is still good after all that
        await expect(conn, signed(RC.SEND_MESSAGE_V2, send_fields(), body, sec.USER), ResponseCode.SUCCESS)
    # non-UTF-8 in a header field: that connection is refused or closed, others go on
    async with await RawConnection.open(broker.addr) as bad:
        header = json.dumps({"code": RC.SEND_MESSAGE_V2, "language": "JAVA", "version": 409, "opaque": 7, "flag": 0,
                             "extFields": {"AccessKey": "XX"}}).encode().replace(b"XX", b"\xff\xfe")  # fmt: skip
        await bad.send_bytes(raw_frame(header))
        how = await asyncio.wait_for(_answer_or_close(bad), 10)
        assert how in ("closed", NO_PERMISSION, ResponseCode.SYSTEM_ERROR), how
    async with await RawConnection.open(broker.addr) as conn:
        await expect(conn, signed(RC.SEND_MESSAGE_V2, send_fields(), body, sec.USER), ResponseCode.SUCCESS)
    # the daemon's own lines (the harness heads the file with the command line, which has its options)
    log = "\n".join(line for line in broker.log_text().splitlines() if not line.startswith("---- "))
    assert "ACL refused request code" in log
    for secret in (sec.USER[1], sec.ADMIN[1], "not-the-secret"):
        assert secret not in log, "no secret in the log"
    assert "K" * 1000 not in log


async def _answer_or_close(conn: RawConnection) -> object:
    waiter = asyncio.get_running_loop().create_future()
    conn._pending[7] = waiter
    closed = asyncio.ensure_future(conn.wait_closed())
    done, _ = await asyncio.wait([waiter, closed], return_when=asyncio.FIRST_COMPLETED)
    closed.cancel()
    if waiter in done and waiter.exception() is None:
        return waiter.result().code
    return "closed"


async def test_global_whitelist_and_file_changes_take_effect_while_running(
    cluster_factory: ClusterFactory, tmp_path: Path, sec: SimpleNamespace
) -> None:
    acl_file = sec.write_acl(tmp_path / "conf")
    cluster = await cluster_factory(
        broker_overrides=sec.acl_overrides(acl_file), namesrv_overrides=sec.acl_overrides(acl_file)
    )
    addr = cluster.brokers[0].addr
    newcomer = ("newcomer1", "newcomerSecret")
    async with await RawConnection.open(addr) as conn:
        info = RemotingCommand.request(RC.GET_BROKER_RUNTIME_INFO)
        await expect(
            conn, info, NO_PERMISSION, "No accessKey is configured"
        )  # 127.0.0.1 is not in 10.10.103.*
        await expect(
            conn,
            signed(RC.GET_BROKER_RUNTIME_INFO, {}, b"", newcomer),
            NO_PERMISSION,
            "No acl config for newcomer1",
        )
        acl_file.write_text(
            sec.PLAIN_ACL.replace("  - 10.10.103.*", "  - 10.10.103.*\n  - 127.0.0.*")
            + f"  - accessKey: {newcomer[0]}\n    secretKey: {newcomer[1]}\n    defaultTopicPerm: SUB\n",
            encoding="utf-8",
        )

        async def accepted() -> bool:
            r = await conn.request(signed(RC.GET_BROKER_RUNTIME_INFO, {}, b"", newcomer))
            return r.code == ResponseCode.SUCCESS

        await wait_for(accepted, timeout_s=15, what="the new account, without a restart")
        await expect(
            conn, RemotingCommand.request(RC.GET_BROKER_RUNTIME_INFO), ResponseCode.SUCCESS
        )  # whitelisted now
        # a broken file keeps the accounts loaded before (and says why in the log)
        acl_file.write_text("accounts: [this is: not valid", encoding="utf-8")
        await wait_for(
            lambda: "ACL files not loaded" in cluster.brokers[0].log_text(),
            timeout_s=15,
            what="the bad file logged",
        )
        await expect(conn, signed(RC.GET_BROKER_RUNTIME_INFO, {}, b"", newcomer), ResponseCode.SUCCESS)


async def test_refusals_and_unsupported_codes_are_in_rpc_latency(
    cluster_factory: ClusterFactory, tmp_path: Path, sec: SimpleNamespace
) -> None:
    """As 5.x's writeResponse: answers written without a processor are timed under their code."""
    prom = {"metricsExporterType": "PROM", "metricsPromExporterPort": 0}
    acl_file = sec.write_acl(tmp_path / "conf")
    cluster = await cluster_factory(broker_overrides={**sec.acl_overrides(acl_file), **prom})
    broker = cluster.brokers[0]
    async with await RawConnection.open(broker.addr) as conn:
        for _ in range(3):
            unsigned = RemotingCommand.request(RC.SEND_MESSAGE_V2, send_fields(), b"x")
            await expect(conn, unsigned, NO_PERMISSION, "No accessKey is configured")
        await expect(conn, signed(9999, {}, b"", sec.ADMIN), ResponseCode.REQUEST_CODE_NOT_SUPPORTED)
    addr = re.search(r"^METRICS broker (\S+)$", broker.stdout_text(), re.MULTILINE)
    assert addr, broker.stdout_text()
    text = await asyncio.to_thread(
        lambda: urllib.request.urlopen(f"http://{addr.group(1)}/metrics", timeout=5).read().decode()
    )
    counts = {
        (s.labels["request_code"], s.labels["response_code"], s.labels["result"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == "rocketmq_rpc_latency"
        for s in family.samples
        if s.name == "rocketmq_rpc_latency_count"
    }
    assert counts[(str(int(RC.SEND_MESSAGE_V2)), str(int(NO_PERMISSION)), "success")] == 3
    assert counts[("9999", str(int(ResponseCode.REQUEST_CODE_NOT_SUPPORTED)), "success")] == 1
