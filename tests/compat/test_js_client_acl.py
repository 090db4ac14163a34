"""ali-ons (a foreign RocketMQ 4.x client, pure JavaScript) against a cluster with ACL on and TLS
permissive: ali-ons signs every request with its AccessKey / secret the way AclClientRPCHook does
(lib/channel.js beforeRequest, plus its own OnsChannel field, which is signed too), so an account
with its keys may send and a missing account is refused. ali-ons has no TLS, so it connects in plain
text on the same ports where our SDK uses TLS (tlsMode=permissive tells them apart by the first
byte). Skips without node / ali-ons as tests/compat/test_js_client.py does.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import Admin, ConsumeFromWhere, LitePullConsumer, MessageExt
from rocketq.testing.fixtures import cluster_factory
from rocketq.testing.tls_certs import make_test_ca

__all__ = ["cluster_factory"]

JS_DIR = Path(__file__).parent / "js"
NODE = shutil.which("node")
# The keys tests/compat/js/common.js gives ali-ons.
JS_KEYS = ("compat-test-key", "compat-test-secret")
ADMIN = ("adminKey1", "adminSecret1")

if NODE is None:
    pytestmark = pytest.mark.skip(
        reason="node is not installed (the ali-ons interop tests need Node.js >= 14)"
    )
elif not (JS_DIR / "node_modules" / "ali-ons" / "package.json").is_file():
    pytestmark = pytest.mark.skip(
        reason="ali-ons is not installed: run `make test` (or `npm ci --prefix tests/compat/js`)"
    )


def acl_text(with_js_account: bool) -> str:
    js = f"  - accessKey: {JS_KEYS[0]}\n    secretKey: {JS_KEYS[1]}\n    defaultTopicPerm: PUB\n    defaultGroupPerm: SUB\n"
    return f"accounts:\n  - accessKey: {ADMIN[0]}\n    secretKey: {ADMIN[1]}\n    admin: true\n" + (
        js if with_js_account else ""
    )


def produce(namesrv: str, topic: str, bodies: list[bytes], log: Path) -> list[dict[str, Any]]:
    spec = {
        "namesrv": namesrv,
        "group": "pg-js-acl",
        "messages": [{"topic": topic, "tags": "A", "body": base64.b64encode(b).decode()} for b in bodies],
    }
    assert NODE is not None
    with open(log, "ab") as stderr:
        done = subprocess.run(
            [NODE, str(JS_DIR / "produce.js"), json.dumps(spec)],
            cwd=JS_DIR,
            stdout=subprocess.PIPE,
            stderr=stderr,
            timeout=60,
            check=False,
        )
    return [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]


@pytest.mark.timeout(120)
async def test_ali_ons_signed_sends_on_an_acl_and_permissive_tls_cluster(
    cluster_factory: Any, tmp_path: Path
) -> None:
    ca = make_test_ca(tmp_path / "pki")
    leaf = ca.issue("server")
    acl_file = tmp_path / "conf" / "plain_acl.yml"
    acl_file.parent.mkdir()
    acl_file.write_text(acl_text(True), encoding="utf-8")
    secure = {"aclEnable": "true", "aclFilePath": str(acl_file), "aclFileWatchInterval": 200, "accessKey": ADMIN[0],
              "secretKey": ADMIN[1], "tlsMode": "permissive", "tlsServerCertPath": leaf.cert, "tlsServerKeyPath": leaf.key}  # fmt: skip
    cluster = await cluster_factory(broker_overrides=secure, namesrv_overrides=secure)
    ns, topic = cluster.namesrv_addr, "TopicJsAcl"
    ours: dict[str, Any] = {
        "access_key": ADMIN[0],
        "secret_key": ADMIN[1],
        "use_tls": True,
        "tls_ca_file": ca.ca,
    }
    async with Admin(namesrv_addr=ns, **ours) as admin:
        await admin.create_topic(topic, read_queues=2, write_queues=2)
    bodies = [b"from ali-ons %d" % i for i in range(5)]
    events = await asyncio.to_thread(produce, ns, topic, bodies, tmp_path / "produce.stderr.log")
    sent = [e for e in events if e.get("event") == "sent"]
    assert len(sent) == 5 and all(e["sendStatus"] == "SEND_OK" for e in sent), events
    got: list[MessageExt] = []
    async with LitePullConsumer(
        "cg-js-acl", namesrv_addr=ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **ours
    ) as lite:
        lite.subscribe(topic, "*")
        for _ in range(150):
            got.extend(await lite.poll(timeout_ms=200))
            if len(got) >= 5:
                break
    assert sorted(m.body for m in got) == sorted(bodies), "read back over TLS what ali-ons sent in plain text"
    # without its account, ali-ons is refused (NO_PERMISSION, "No acl config for compat-test-key")
    acl_file.write_text(acl_text(False), encoding="utf-8")
    await asyncio.sleep(0)  # the brokers see the change within aclFileWatchInterval; wait on it below

    def refused() -> bool:
        return "No acl config for compat-test-key" in cluster.brokers[0].log_text()

    for _ in range(50):
        events = await asyncio.to_thread(produce, ns, topic, [b"never"], tmp_path / "produce.stderr.log")
        if refused():
            break
    assert refused()
    assert not [e for e in events if e.get("event") == "sent"], events
