"""Load (docs/fault-tests.md): 1,000 client connections held on one broker; 1,000 topics x 8 queues.

Only correctness is asserted: every connection is held and answers, every message lands where it was
sent and comes back byte for byte, every topic reaches the NameServer. The figures (connect time,
send throughput across 1,000 topics against one topic, and their ratio) are printed, never asserted.
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from collections import Counter
from collections.abc import Sequence

import pytest

from rocketq.common.record.codec import decode_records
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.testing.broker_probe import (
    SMALL_STORE_OVERRIDES,
    BrokerProbe,
    create_topic_request,
    pull_request,
    send_request,
)
from rocketq.testing.fixtures import ClusterFactory
from rocketq.testing.procinfo import open_fds, open_sockets, rss_kib, tcp_sockets
from rocketq.testing.waiting import WaitTimeoutError, wait_for
from rocketq.testing.wire import RawConnection

CONNECTIONS = 1_000
TOPICS = 1_000
QUEUES = 8
MESSAGES_PER_QUEUE = 2
SENDERS = 4  # connections sending at once
WINDOW = 32  # requests in flight per sending connection
FD_HEADROOM = 200  # descriptors beyond the connections themselves (files, pipes, the store)


def ensure_fd_limit(needed: int) -> None:
    """Raise this process's soft RLIMIT_NOFILE to `needed` (daemons started later inherit it), or skip."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"needs {needed} file descriptors; the hard RLIMIT_NOFILE is {hard}")
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    except (ValueError, OSError) as exc:
        pytest.skip(f"cannot raise RLIMIT_NOFILE to {needed}: {exc}")


def process_fd_limit(pid: int) -> int:
    with open(f"/proc/{pid}/limits", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no 'Max open files' line")


async def pipelined(
    conns: Sequence[RawConnection], requests: Sequence[RemotingCommand]
) -> list[RemotingCommand]:
    """Send `requests` spread over `conns`, WINDOW in flight on each; the answers in request order."""
    answers: list[RemotingCommand | None] = [None] * len(requests)

    async def pump(conn: RawConnection, indexes: range) -> None:
        window = asyncio.Semaphore(WINDOW)
        pending = []
        for index in indexes:
            await window.acquire()
            future = conn.start_request(requests[index])
            future.add_done_callback(lambda _f: window.release())
            pending.append((index, future))
            await conn.writer.drain()
        for index, future in pending:
            answers[index] = await asyncio.wait_for(future, 30)

    await asyncio.gather(*(pump(conn, range(i, len(requests), len(conns))) for i, conn in enumerate(conns)))
    return [a for a in answers if a is not None]


@pytest.mark.timeout(120)
async def test_a_thousand_connections_are_held_and_answered(cluster_factory: ClusterFactory) -> None:
    ensure_fd_limit(CONNECTIONS * 2 + FD_HEADROOM)  # our ends and, inherited, the broker's
    cluster = await cluster_factory(namesrv_count=0, broker_overrides=SMALL_STORE_OVERRIDES)
    broker = cluster.brokers[0]
    if process_fd_limit(broker.pid) < CONNECTIONS + FD_HEADROOM:
        pytest.skip(f"the broker may open only {process_fd_limit(broker.pid)} files")
    probe = await BrokerProbe.open(broker.addr, topic="Bystander")
    try:
        await probe.create_topic("ManyClients", QUEUES)
        await hold_connections(broker.addr, broker.pid, probe)
    finally:
        await probe.close()


async def hold_connections(addr: str, pid: int, probe: BrokerProbe) -> None:
    fds_before = open_fds(pid)
    sockets_before = open_sockets(pid)

    started = time.monotonic()
    connecting = asyncio.Semaphore(100)  # a bounded burst of handshakes, well inside the listen backlog

    async def client(index: int) -> RawConnection:
        async with connecting:
            conn = await RawConnection.open(addr, timeout_s=30)
        opened.append(conn)
        answer = await conn.request(
            send_request("ManyClients", b"client-%04d" % index, queue_id=index % QUEUES), 30
        )
        assert answer.code == ResponseCode.SUCCESS, f"client {index}: {answer.code} {answer.remark}"
        return conn

    opened: list[RawConnection] = []
    try:
        conns = await asyncio.gather(*(client(i) for i in range(CONNECTIONS)))
        connect_s = time.monotonic() - started
        held = open_sockets(pid)
        assert held >= CONNECTIONS, f"the broker holds {held} sockets"
        # every connection is still open and answers a second request (all held at once)
        started = time.monotonic()
        second = await asyncio.gather(
            *(c.request(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 30) for c in conns)
        )
        round_s = time.monotonic() - started
        assert all(a.code == ResponseCode.SUCCESS for a in second)
        assert not any(c.is_closed for c in conns)
        await probe.roundtrip()
        stored = sum([await probe.max_offset("ManyClients", q) for q in range(QUEUES)])
        assert stored == CONNECTIONS
        bodies = []
        for queue_id in range(QUEUES):
            bodies += [m.body for m in await probe.pull_all("ManyClients", queue_id)]
        assert sorted(bodies) == [b"client-%04d" % i for i in range(CONNECTIONS)]
        print(
            f"\n{CONNECTIONS} connections held on one broker (it had {held} sockets, {open_fds(pid)} "
            f"descriptors, {fds_before} before): opened + one send each in {connect_s:.2f}s, "
            f"a second request on every one of them in {round_s:.2f}s"
        )
    finally:
        await asyncio.gather(*(c.close() for c in opened))
    try:
        await wait_for(
            lambda: open_sockets(pid) <= sockets_before, timeout_s=30, what="the connections to go"
        )
    except WaitTimeoutError:
        states = Counter(state for _, _, state in tcp_sockets(pid))
        raise AssertionError(f"the broker still holds sockets ({sockets_before} before): {states}") from None
    await probe.roundtrip()


async def send_phase(
    conns: Sequence[RawConnection], topics: Sequence[str], label: str
) -> tuple[float, dict[tuple[str, int], list[bytes]]]:
    """MESSAGES_PER_QUEUE messages into each queue of `topics`, round-robin; (msgs/s, what went where)."""
    total = TOPICS * QUEUES * MESSAGES_PER_QUEUE
    plan = []
    for n in range(total):
        topic = topics[n % len(topics)]
        queue_id = (n // len(topics)) % QUEUES
        plan.append((topic, queue_id, b"%s-%06d" % (label.encode(), n)))
    requests = [send_request(topic, body, queue_id=queue_id) for topic, queue_id, body in plan]
    started = time.monotonic()
    answers = await pipelined(conns, requests)
    elapsed = time.monotonic() - started
    bad = [(a.code, a.remark) for a in answers if a.code != ResponseCode.SUCCESS]
    assert len(answers) == total and not bad, f"{len(bad)} sends failed, e.g. {bad[:3]}"
    expected: dict[tuple[str, int], list[bytes]] = {}
    for topic, queue_id, body in plan:
        expected.setdefault((topic, queue_id), []).append(body)
    return total / elapsed, expected


async def check_stored(conns: Sequence[RawConnection], expected: dict[tuple[str, int], list[bytes]]) -> None:
    """Every queue holds exactly its messages, in send order (one pull per queue)."""
    keys = sorted(expected)
    answers = await pipelined(conns, [pull_request(t, q, 0, max_msgs=32) for t, q in keys])
    for (topic, queue_id), answer in zip(keys, answers, strict=True):
        assert answer.code == ResponseCode.SUCCESS, f"{topic}/{queue_id}: {answer.code} {answer.remark}"
        got = [m.body for m in decode_records(answer.body)]
        if len(got) < len(expected[(topic, queue_id)]):  # more than one pull's worth: read it all
            probe = BrokerProbe(conns[0])
            got = [m.body for m in await probe.pull_all(topic, queue_id)]
        assert got == expected[(topic, queue_id)], f"{topic}/{queue_id} holds other messages"


@pytest.mark.timeout(150)
async def test_a_thousand_topics_of_eight_queues(cluster_factory: ClusterFactory) -> None:
    # the store holds descriptors per mapped file (two at present): 8,000 consume-queue files
    ensure_fd_limit(TOPICS * QUEUES * 2 + FD_HEADROOM * 5)
    cluster = await cluster_factory(broker_overrides=SMALL_STORE_OVERRIDES)
    broker, namesrv = cluster.brokers[0], cluster.namesrvs[0]
    conns = [await RawConnection.open(broker.addr) for _ in range(SENDERS)]
    try:
        topics = [f"Scale-{i:04d}" for i in range(TOPICS)]
        started = time.monotonic()
        created = await pipelined(conns, [create_topic_request(t, QUEUES) for t in ["Single", *topics]])
        create_s = time.monotonic() - started
        assert all(a.code == ResponseCode.SUCCESS for a in created), [a.remark for a in created if a.code][:3]

        single_rate, single = await send_phase(conns, ["Single"], "one")
        # the first pass over 1,000 topics also creates their 8,000 consume-queue files; the second does not
        multi_rate, multi = await send_phase(conns, topics, "many")
        again_rate, again = await send_phase(conns, topics, "again")
        await check_stored(conns, single)
        await check_stored(conns, {key: multi[key] + again[key] for key in multi})

        async with await RawConnection.open(namesrv.addr) as ns:

            async def all_registered() -> bool:
                answer = await ns.call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
                listed = set(fastjson.loads(answer.body).get("topicList", []))
                return listed.issuperset(topics)

            await wait_for(all_registered, timeout_s=40, interval_s=0.5, what="every topic at the NameServer")
        messages = TOPICS * QUEUES * MESSAGES_PER_QUEUE
        print(
            f"\n{TOPICS} topics x {QUEUES} queues created in {create_s:.2f}s; {messages} sends "
            f"per phase ({SENDERS} connections x {WINDOW} in flight): 1 topic {single_rate:,.0f} msg/s; "
            f"{TOPICS} topics first pass {multi_rate:,.0f} msg/s (ratio {multi_rate / single_rate:.2f}), "
            f"second pass {again_rate:,.0f} msg/s (ratio {again_rate / single_rate:.2f}) "
            f"(broker RSS {rss_kib(broker.pid) // 1024} MiB, {open_fds(broker.pid)} descriptors; {os.cpu_count()} CPUs)"
        )
    finally:
        for conn in conns:
            await conn.close()
