"""TLS against real daemons, with a CA and certificates made by openssl in the test.

Each tlsMode with a plain and a TLS client; a client trusting another CA is refused; an ACL + TLS
cluster used by the SDK; master/slave replication over TLS; and bad input on an enforcing port: a
peer that connects and says nothing, one that stalls in the middle of its ClientHello, and one that
sends plain bytes, each closed within the handshake timeout while other clients are served.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rocketq.client import Admin, ConsumeFromWhere, LitePullConsumer, Message, Producer
from rocketq.client.errors import NoRouteError
from rocketq.common.tls import client_context
from rocketq.remoting.errors import RemotingConnectError, RemotingError
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport import RemotingClient
from rocketq.remoting.transport.acl_hook import AclClientRPCHook
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.tls_certs import CertAuthority, make_test_ca
from rocketq.testing.waiting import wait_for

HANDSHAKE_TIMEOUT_MS = 1000
ADMIN = ("adminKey1", "adminSecret1")  # as conftest.py's


@pytest.fixture
def ca(tmp_path: Path) -> CertAuthority:
    return make_test_ca(tmp_path / "pki")


def tls_server(ca: CertAuthority, mode: str) -> dict[str, object]:
    leaf = ca.issue("server")
    return {"tlsMode": mode, "tlsServerCertPath": leaf.cert, "tlsServerKeyPath": leaf.key,
            "tlsHandshakeTimeout": HANDSHAKE_TIMEOUT_MS}  # fmt: skip


def tls_client(ca: CertAuthority) -> dict[str, object]:
    """A daemon's own connections (registration, slave to master) over TLS, verified against `ca`."""
    return {"tlsEnable": "true", "tlsClientTrustCertPath": ca.ca}


async def cluster_info(addr: str, ssl_ca: str | None, use_tls: bool) -> int:
    client = RemotingClient(ssl_context=client_context(ssl_ca) if use_tls else None)
    try:
        response = await client.invoke_sync(
            addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 3000
        )
        return response.code
    finally:
        await client.shutdown()


@pytest.mark.timeout(90)
async def test_each_mode_with_plain_and_tls_clients(
    cluster_factory: ClusterFactory, ca: CertAuthority, tmp_path: Path
) -> None:
    other_ca = make_test_ca(tmp_path / "other-pki", "another-ca")
    expected = {"disabled": (True, False), "permissive": (True, True), "enforcing": (False, True)}
    for mode, (plain_ok, tls_ok) in expected.items():
        cluster = await cluster_factory(broker_count=0, namesrv_overrides=tls_server(ca, mode))
        addr = cluster.namesrv_addr
        for use_tls, ok in ((False, plain_ok), (True, tls_ok)):
            if ok:
                assert await cluster_info(addr, ca.ca, use_tls) == ResponseCode.SUCCESS, (mode, use_tls)
            else:
                with pytest.raises(RemotingError):
                    await cluster_info(addr, ca.ca, use_tls)
        if mode != "disabled":
            with pytest.raises(RemotingConnectError, match="certificate verify failed"):
                await cluster_info(addr, other_ca.ca, True)
        await cluster.close()


@pytest.mark.timeout(120)
async def test_sdk_against_an_acl_and_tls_cluster(
    cluster_factory: ClusterFactory, ca: CertAuthority, tmp_path: Path, sec: SimpleNamespace
) -> None:
    acl_file = sec.write_acl(tmp_path / "conf")
    secure = {**tls_server(ca, "enforcing"), **sec.acl_overrides(acl_file)}
    cluster = await cluster_factory(broker_overrides={**secure, **tls_client(ca)}, namesrv_overrides=secure)
    ns, topic = cluster.namesrv_addr, "TopicTls"
    tls: dict[str, Any] = {"use_tls": True, "tls_ca_file": ca.ca}
    async with Admin(namesrv_addr=ns, access_key=sec.ADMIN[0], secret_key=sec.ADMIN[1], **tls) as admin:
        await admin.create_topic(topic, read_queues=2, write_queues=2)
    user = {"access_key": sec.USER[0], "secret_key": sec.USER[1], **tls}
    async with Producer("pg-tls", namesrv_addr=ns, **user) as producer:
        for i in range(10):
            await producer.send(Message(topic, b"secret-%d" % i))
    got = []
    async with LitePullConsumer(
        "cg-tls", namesrv_addr=ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **user
    ) as lite:
        lite.subscribe(topic, "*")
        for _ in range(150):
            got.extend(await lite.poll(timeout_ms=200))
            if len(got) >= 10:
                break
    assert sorted(m.body for m in got) == sorted(b"secret-%d" % i for i in range(10))
    # a plain client (right credentials, no TLS) is not served: the enforcing NameServer drops it
    async with Producer(
        "pg-plain", namesrv_addr=ns, instance_name="plain", access_key=sec.USER[0], secret_key=sec.USER[1]
    ) as plain:
        with pytest.raises(NoRouteError, match=r"name servers unreachable|no route"):
            await plain.send(Message(topic, b"x"))


async def _signed_call(addr: str, ca: CertAuthority, code: int) -> RemotingCommand:
    client = RemotingClient(ssl_context=client_context(ca.ca))
    client.register_rpc_hook(AclClientRPCHook(*ADMIN))
    try:
        response = await client.invoke_sync(addr, RemotingCommand.request(code), 3000)
    finally:
        await client.shutdown()
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response


async def _runtime(addr: str, ca: CertAuthority) -> dict[str, str]:
    response = await _signed_call(addr, ca, RequestCode.GET_BROKER_RUNTIME_INFO)
    return dict(fastjson.loads(response.body)["table"])


@pytest.mark.timeout(120)
async def test_master_slave_replication_over_tls_with_acl(
    cluster_factory: ClusterFactory, ca: CertAuthority, tmp_path: Path, sec: SimpleNamespace
) -> None:
    # ACL too: the slave's own requests to its master (topic configs, offsets) are signed
    acl = sec.acl_overrides(sec.write_acl(tmp_path / "conf"))
    both = {**tls_server(ca, "enforcing"), **tls_client(ca), **acl, "registerNameServerPeriod": 10_000}
    cluster = await cluster_factory(
        broker_overrides=both, namesrv_overrides={**tls_server(ca, "enforcing"), **acl}
    )
    ns, topic = cluster.namesrv_addr, "TopicTlsHa"
    tls: dict[str, Any] = {
        "use_tls": True,
        "tls_ca_file": ca.ca,
        "access_key": sec.ADMIN[0],
        "secret_key": sec.ADMIN[1],
    }
    async with Admin(namesrv_addr=ns, **tls) as admin:
        await admin.create_topic(topic, read_queues=2, write_queues=2)
    slave = await cluster.add_broker("broker-a", {**both, "brokerId": 1, "brokerRole": "SLAVE"})
    async with Producer("pg-tls-ha", namesrv_addr=ns, **tls) as producer:
        for i in range(20):
            await producer.send(Message(topic, b"replicated-%d" % i))
    master_end = int((await _runtime(cluster.brokers[0].addr, ca))["commitLogMaxOffset"])
    assert master_end > 0

    async def caught_up() -> bool:
        return int((await _runtime(slave.addr, ca))["commitLogMaxOffset"]) == master_end

    await wait_for(caught_up, timeout_s=30, what="the slave's commit log at the master's end, over TLS")
    assert "HA connection from slave" in cluster.brokers[0].log_text()
    assert "TLS" in cluster.brokers[0].log_text()  # the HA port said it listens with TLS

    # the slave copied the topic table from its master over the signed, encrypted connection
    async def slave_has_topic() -> bool:
        response = await _signed_call(slave.addr, ca, RequestCode.GET_ALL_TOPIC_CONFIG)
        return topic in fastjson.loads(response.body)["topicConfigTable"]

    await wait_for(slave_has_topic, timeout_s=30, what="the topic config synchronised to the slave")
    assert "ACL refused" not in slave.log_text() and "ACL refused" not in cluster.brokers[0].log_text()


@pytest.mark.timeout(60)
async def test_stalled_and_garbage_handshakes_close_only_their_connection(
    cluster_factory: ClusterFactory, ca: CertAuthority
) -> None:
    cluster = await cluster_factory(broker_count=0, namesrv_overrides=tls_server(ca, "enforcing"))
    host, _, port = cluster.namesrv_addr.rpartition(":")
    silent = await asyncio.open_connection(host, int(port))
    half_hello = await asyncio.open_connection(host, int(port))
    half_hello[1].write(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello that stops short
    garbage = await asyncio.open_connection(host, int(port))
    garbage[1].write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    began = time.monotonic()
    # others are served meanwhile
    assert await cluster_info(cluster.namesrv_addr, ca.ca, True) == ResponseCode.SUCCESS
    for name, (reader, writer) in {"silent": silent, "half hello": half_hello, "garbage": garbage}.items():
        try:
            data = await asyncio.wait_for(reader.read(), timeout=HANDSHAKE_TIMEOUT_MS / 1000 + 10)
        except ConnectionResetError:
            data = b""  # closed with a reset: as good as an EOF here
        assert data == b"", name  # closed, nothing served
        writer.close()
    assert time.monotonic() - began < HANDSHAKE_TIMEOUT_MS / 1000 + 10
    assert await cluster_info(cluster.namesrv_addr, ca.ca, True) == ResponseCode.SUCCESS
    log = cluster.namesrvs[0].log_text()
    assert "plain connection refused, tlsMode is enforcing" in log
    assert "no TLS handshake within" in log or "TLS handshake failed" in log
