"""ClientInstance logic without sockets: client ids, route look-ups shared, offline brokers, heartbeat data."""

from __future__ import annotations

import asyncio

from client_routes import two_brokers

from rocketq.client.config import ClientConfig
from rocketq.client.instance import ClientInstance, acquire_instance
from rocketq.common.msg_id import local_address, local_ipv4_addresses


def config(**kw: object) -> ClientConfig:
    return ClientConfig.build({"namesrv_addr": "127.0.0.1:9876", **kw})


async def test_client_ids_are_unique_and_stable_names_are_not_random() -> None:
    a, b = (
        ClientInstance(config(client_ip="127.0.0.1")),
        ClientInstance(config(client_ip="127.0.0.1"), index=1),
    )
    assert a.client_id != b.client_id and a.client_id.startswith("127.0.0.1@")
    assert b.client_id.endswith("#1")
    assert a.stable_name == "127.0.0.1@DEFAULT" and b.stable_name == "127.0.0.1@DEFAULT#1"
    named = ClientInstance(config(instance_name="svc", unit_name="u1", client_ip="127.0.0.1"))
    assert named.client_id == "127.0.0.1@svc@u1"
    await asyncio.gather(a.remoting.shutdown(), b.remoting.shutdown(), named.remoting.shutdown())


def test_the_default_client_ip_is_this_hosts_address_as_java() -> None:
    # RemotingUtil.getLocalAddress: an interface's IPv4 address, not 127.0.x.x / 192.168.x.x when another exists
    addresses = local_ipv4_addresses()
    ip = config().client_ip
    assert ip == local_address()
    if any(not a.startswith(("127.0", "192.168")) for a in addresses):
        assert not ip.startswith(("127.0", "192.168")) and ip in addresses
    else:
        assert ip == (addresses[-1] if addresses else "127.0.0.1")


async def test_registry_shares_an_instance_until_a_group_repeats() -> None:
    cfg = config(instance_name="reg-test")
    first = acquire_instance(cfg, consumer_group="g")
    first.consumers["g"] = object()  # type: ignore[assignment]
    assert acquire_instance(cfg, producer_group="p") is first
    second = acquire_instance(cfg, consumer_group="g")
    assert second is not first and second.client_id != first.client_id
    for inst in (first, second):
        inst.consumers.clear()
        await inst.shutdown()
    assert acquire_instance(cfg) not in (first, second)


async def test_concurrent_route_updates_share_one_lookup() -> None:
    inst = ClientInstance(config())
    calls = 0
    gate = asyncio.Event()

    async def fetch_route(topic: str, timeout_ms: int | None = None):
        nonlocal calls
        calls += 1
        await gate.wait()
        return two_brokers()

    inst.fetch_route = fetch_route  # type: ignore[method-assign]
    waiters = [asyncio.ensure_future(inst.update_topic_route("T")) for _ in range(50)]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*waiters)
    assert calls == 1 and all(results)
    assert set(inst.broker_addrs) == {"broker-a", "broker-b"}
    await inst.remoting.shutdown()


async def test_offline_brokers_are_dropped() -> None:
    inst = ClientInstance(config())
    inst.route_table["T"] = two_brokers()  # type: ignore[assignment]
    inst.broker_addrs = {
        "broker-a": {0: "127.0.0.1:10911"},
        "broker-b": {0: "127.0.0.1:10921"},
        "gone": {0: "127.0.0.1:1"},
    }

    class P:
        group = "p"

        def publish_topics(self):
            return {"T"}

    inst.producers["p"] = P()  # type: ignore[assignment]
    inst.clean_offline_brokers()
    assert set(inst.broker_addrs) == {"broker-a", "broker-b"}
    data = inst.heartbeat_data()
    assert [p.group_name for p in data.producer_data_set] == ["p", "CLIENT_INNER_PRODUCER"]
    inst.producers.clear()
    inst.clean_offline_brokers()
    assert inst.broker_addrs == {} and inst.route_table == {}
    await inst.remoting.shutdown()


async def test_unregister_survives_broker_table_changes_while_requests_are_out() -> None:
    """A route refresh may drop an address (or a broker) while UNREGISTER_CLIENT requests are awaited."""
    inst = ClientInstance(config())
    inst.broker_addrs = {
        "broker-a": {0: "127.0.0.1:10911", 1: "127.0.0.1:10912"},
        "broker-b": {0: "127.0.0.1:10921"},
    }
    asked: list[str] = []

    async def unregister_client(addr: str, client_id: str, producer_group=None, consumer_group=None) -> None:
        asked.append(addr)
        # What clean_offline_brokers / _apply_route do concurrently.
        inst.broker_addrs["broker-a"].pop(1, None)
        inst.broker_addrs.pop("broker-b", None)
        inst.broker_addrs["broker-c"] = {0: "127.0.0.1:10931"}
        await asyncio.sleep(0)

    inst.api.unregister_client = unregister_client  # type: ignore[method-assign]
    await inst._unregister_client(consumer_group="g")
    assert sorted(asked) == ["127.0.0.1:10911", "127.0.0.1:10912", "127.0.0.1:10921"]
    await inst.remoting.shutdown()
