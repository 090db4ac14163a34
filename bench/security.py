"""Cost of ACL and of TLS: the pipelined produce and the consume phase against three clusters running
side by side (plain, ACL on with a signing client, TLS enforcing with a TLS client), in alternating
rounds, reported as ratios to the plain one.

    .venv/bin/python bench/security.py [--count 10000] [--rounds 3] [--size 1024] [--json]
    .venv/bin/python bench/security.py --phases replay --clusters plain,acl --rounds 7
    .venv/bin/python bench/security.py --in-process [--rounds 30]

`--in-process` times the broker's ACL step alone, with no daemons: the hook that verifies a request
(parse AccessKey and Signature, build the signed content, HMAC-SHA1, compare, permission check) run
on SEND_MESSAGE_V2 requests decoded from signed frames as the broker decodes them, its parts, and the
ways of computing the HMAC that were compared; microseconds of process CPU per request, the minimum
and the median of the rounds, the functions alternating within each round.

A third phase, `replay`, separates the broker's cost from the client's: the same SEND_MESSAGE_V2
frames (signed for the ACL cluster, with the same header otherwise) are built and signed once before
the round and written over a raw socket with a fixed number in flight, so both brokers get the same
offered load and the client's signing cost is out of the measured window.

Each cluster is one NameServer and one broker (real daemons, rocketq.testing.LocalCluster). Figures:
messages per second seen by the client, and the broker's CPU time (user + system, from
/proc/<pid>/stat) per message over each phase, less its idle rate measured just before. Counts and durations are bounded; the machine is
shared, so compare the ratios of one run, not absolute figures across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import binascii
import gc
import hmac
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rocketq.client import Admin
from rocketq.client.bench import consume, produce
from rocketq.remoting.acl import permission, signing
from rocketq.remoting.acl.plain_config import PlainAclConfig
from rocketq.remoting.acl.server_hook import AclServerHook
from rocketq.remoting.acl.signing import combine_request_content, sign_request, signature_matches
from rocketq.remoting.acl.validator import check_perm
from rocketq.remoting.protocol.bodies.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from rocketq.remoting.protocol.codes import RequestCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.frame import decode_frame_payload, encode_frame
from rocketq.remoting.transport.loops import run
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.procinfo import cpu_ns
from rocketq.testing.tls_certs import make_test_ca

IDLE_SAMPLE_S = 1.0
ADMIN = ("benchAdmin1", "benchAdminSecret")
USER = ("benchUser01", "benchUserSecret")
ACL = f"""accounts:
  - accessKey: {ADMIN[0]}
    secretKey: {ADMIN[1]}
    admin: true
  - accessKey: {USER[0]}
    secretKey: {USER[1]}
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
"""


def cpu_s(pid: int) -> float:
    """The process' CPU time in seconds, from its threads' run time in ns (schedstat: 10 ms clock ticks
    would be 1 us a message over 10 000)."""
    return cpu_ns(pid) / 1e9


def variants(tmp: Path) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """name -> (daemon options, client keyword arguments)."""
    acl_file = tmp / "conf" / "plain_acl.yml"
    acl_file.parent.mkdir(parents=True)
    acl_file.write_text(ACL, encoding="utf-8")
    ca = make_test_ca(tmp / "pki")
    leaf = ca.issue("server")
    acl = {"aclEnable": "true", "aclFilePath": str(acl_file), "accessKey": ADMIN[0], "secretKey": ADMIN[1]}
    tls = {"tlsMode": "enforcing", "tlsServerCertPath": leaf.cert, "tlsServerKeyPath": leaf.key,
           "tlsEnable": "true", "tlsClientTrustCertPath": ca.ca}  # fmt: skip
    return {
        "plain": ({}, {}),
        "acl": (acl, {"access_key": USER[0], "secret_key": USER[1]}),
        "tls": (tls, {"use_tls": True, "tls_ca_file": ca.ca}),
    }


PHASES = ("pipelined", "consume", "replay")
REPLAY_INFLIGHT = 256


def replay_frames(count: int, size: int, client: dict[str, Any]) -> list[bytes]:
    """`count` SEND_MESSAGE_V2 frames as the SDK sends them, signed when `client` has keys."""
    frames = []
    body = b"x" * size
    for seq in range(count):
        fields = {"a": "bench_replay", "b": "BenchSecurity", "c": "TBW102", "d": "4", "e": str(seq % 8),
                  "f": "0", "g": str(int(time.time() * 1000)), "h": "0", "j": "0", "k": "false", "m": "false",
                  "i": f"UNIQ_KEY\x01{seq:032X}\x02WAIT\x01true\x02"}  # fmt: skip
        if "access_key" in client:
            sign_request(fields, body, client["access_key"], client["secret_key"])
        frames.append(encode_frame(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, body)))
    return frames


async def replay(addr: str, frames: list[bytes]) -> int:
    """Write `frames` keeping REPLAY_INFLIGHT unanswered; returns the number of responses read."""
    host, port = addr.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    window = asyncio.Semaphore(REPLAY_INFLIGHT)
    answered = 0

    async def read_all() -> None:
        nonlocal answered
        try:
            while answered < len(frames):
                length = int.from_bytes(await reader.readexactly(4), "big")
                response = decode_frame_payload(await reader.readexactly(length))
                if response.code != 0:  # a refused send would make the ACL broker look cheap
                    raise RuntimeError(f"replayed send answered {response.code}: {response.remark}")
                answered += 1
                window.release()
        finally:
            for _ in range(len(frames)):  # the writer must not wait forever on a failed reader
                window.release()

    reading = asyncio.ensure_future(read_all())
    try:
        for i in range(0, len(frames), 32):  # 32 frames per write, as the pipelined client batches
            chunk = frames[i : i + 32]
            for _ in chunk:
                await window.acquire()
            if reading.done():
                break
            writer.write(b"".join(chunk))
        await asyncio.wait_for(reading, 120)
    finally:
        reading.cancel()
        writer.close()
    return answered


async def phase(
    cluster: LocalCluster, client: dict[str, Any], args: argparse.Namespace, name: str, rnd: int
) -> dict[str, Any]:
    ns = argparse.Namespace(
        namesrv_addr=cluster.namesrv_addr, topic="BenchSecurity", group=f"bench_{name}_{rnd}", size=args.size,
        count=args.count, duration_s=args.duration_s, mode="pipelined", inflight=256, batch=32, header_codec="json",
        quiet=True, **{"access_key": None, "secret_key": None, "use_tls": False, "tls_ca_file": None, **client},
    )  # fmt: skip
    pid = cluster.brokers[0].pid
    # The broker's background work (flush, dispatch, scans) costs CPU by the second, not by the
    # message: measured idle over a second and taken off, so a slower run is not charged for it.
    idle_before = cpu_s(pid)
    await asyncio.sleep(IDLE_SAMPLE_S)
    idle_rate = (cpu_s(pid) - idle_before) / IDLE_SAMPLE_S
    frames = replay_frames(args.count, args.size, client) if name == "replay" else []
    before, started = cpu_s(pid), time.monotonic()
    if name == "replay":
        n = await replay(cluster.brokers[0].addr, frames)
        result = {"messages": n, "msgs_per_s": round(n / max(time.monotonic() - started, 1e-9))}
    else:
        result = await (produce(ns) if name == "pipelined" else consume(ns))
    used = cpu_s(pid) - before - idle_rate * (time.monotonic() - started)
    return {"msgs_per_s": result["msgs_per_s"], "messages": result["messages"],
            "broker_cpu_us_per_msg": round(max(used, 0.0) / max(result["messages"], 1) * 1e6, 1)}  # fmt: skip


async def main(args: argparse.Namespace) -> dict[str, Any]:
    """All three clusters run at once; rounds alternate between them, and each keeps its best round
    (highest throughput, lowest broker CPU), so that load from other processes hits all alike."""
    results: dict[str, dict[str, dict[str, Any]]] = {}
    per_round: dict[tuple[str, str], list[float]] = {}  # (cluster, phase) -> broker CPU per message, by round
    with tempfile.TemporaryDirectory(prefix="rocketq-bench-security-") as d:
        tmp = Path(d)
        clusters: dict[str, tuple[LocalCluster, dict[str, Any]]] = {}
        try:
            for name, (daemon, client) in variants(tmp).items():
                if name not in args.clusters and name != "plain":  # plain: the baseline of every ratio
                    continue
                cluster = await LocalCluster(
                    tmp / name, broker_overrides=daemon, namesrv_overrides=daemon
                ).start()
                clusters[name] = (cluster, client)
                admin_keys: dict[str, Any] = {}
                if "access_key" in client:
                    admin_keys = {"access_key": ADMIN[0], "secret_key": ADMIN[1]}
                tls_keys = {k: v for k, v in client.items() if k.startswith(("use_tls", "tls_"))}
                async with Admin(namesrv_addr=cluster.namesrv_addr, **admin_keys, **tls_keys) as admin:
                    await admin.create_topic("BenchSecurity", read_queues=8, write_queues=8)
            for rnd in range(args.rounds):
                for which in args.phases:
                    for name, (cluster, client) in clusters.items():
                        if which == "replay" and name == "tls":
                            continue  # the replay writes plain frames: the ACL cost alone
                        r = await phase(cluster, client, args, which, rnd)
                        per_round.setdefault((name, which), []).append(r["broker_cpu_us_per_msg"])
                        best = results.setdefault(name, {}).setdefault(which, r)
                        best["msgs_per_s"] = max(best["msgs_per_s"], r["msgs_per_s"])
                        best["broker_cpu_us_per_msg"] = min(
                            best["broker_cpu_us_per_msg"], r["broker_cpu_us_per_msg"]
                        )
        finally:
            for cluster, _client in clusters.values():
                await cluster.close()
    base = results["plain"]
    for name in ("acl", "tls"):
        for which in results.get(name, {}):
            r, b = results[name][which], base[which]
            r["throughput_ratio"] = round(r["msgs_per_s"] / max(b["msgs_per_s"], 1), 3)
            r["broker_cpu_ratio"] = round(
                r["broker_cpu_us_per_msg"] / max(b["broker_cpu_us_per_msg"], 0.1), 3
            )
            # the rounds paired (each ran right after the plain one): less swayed by one lucky round
            ours, plain = per_round[(name, which)], per_round[("plain", which)]
            ratios = [a / max(p, 0.1) for a, p in zip(ours, plain, strict=True)]
            r["broker_cpu_ratio_median"] = round(statistics.median(ratios), 3)
            # and the two other summaries of the same rounds: ratio of the medians, mean of the ratios
            r["broker_cpu_ratio_of_medians"] = round(
                statistics.median(ours) / max(statistics.median(plain), 0.1), 3
            )
            r["broker_cpu_ratio_mean"] = round(statistics.mean(ratios), 3)
    return results


def consume_requests(count: int, client: dict[str, Any]) -> dict[str, list[RemotingCommand]]:
    """`count` of each signed request a consumer sends (as the SDK's headers name their fields),
    decoded as the broker decodes them: a pull (32 messages), an offset commit, a heartbeat."""
    beat = HeartbeatData(client_id="127.0.0.1@bench", consumer_data_set=[ConsumerData(
        group_name="bench_consume", subscription_data_set=[SubscriptionData(topic="BenchSecurity")]
    )]).encode()  # fmt: skip
    out: dict[str, list[RemotingCommand]] = {"pull": [], "offset": [], "heartbeat": []}
    for seq in range(count):
        pull = {"consumerGroup": "bench_consume", "topic": "BenchSecurity", "queueId": str(seq % 8),
                "queueOffset": str(seq * 32), "maxMsgNums": "32", "sysFlag": "2", "commitOffset": str(seq * 32),
                "suspendTimeoutMillis": "15000", "subscription": "*", "subVersion": "1764150000000",
                "expressionType": "TAG"}  # fmt: skip
        offset = {"consumerGroup": "bench_consume", "topic": "BenchSecurity", "queueId": str(seq % 8),
                  "commitOffset": str(seq * 32)}  # fmt: skip
        for name, code, fields, body in (
            ("pull", RequestCode.PULL_MESSAGE, pull, b""),
            ("offset", RequestCode.UPDATE_CONSUMER_OFFSET, offset, b""),
            ("heartbeat", RequestCode.HEART_BEAT, {}, beat),
        ):
            sign_request(fields, body, client["access_key"], client["secret_key"])
            frame = encode_frame(RemotingCommand.request(code, fields, body))
            out[name].append(decode_frame_payload(frame[4:]))
    return out


def in_process(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """The ACL step on decoded signed sends, and its parts (see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="rocketq-bench-acl-") as d:
        acl_file = Path(d) / "plain_acl.yml"
        acl_file.write_text(ACL, encoding="utf-8")
        config = PlainAclConfig(str(acl_file))
    hook, account = AclServerHook(config), config.tables.accounts[USER[0]]
    passes, values_of = config.tables.permission_passes, permission.RESOURCE_VALUES
    client = {"access_key": USER[0], "secret_key": USER[1]}
    requests = [decode_frame_payload(f[4:]) for f in replay_frames(min(args.count, 2000), args.size, client)]
    secret, key = USER[1], USER[1].encode()
    keyed = hmac.new(key, digestmod="sha1")

    def keyed_copy(_request: RemotingCommand, content: bytes) -> str:
        mac = keyed.copy()
        mac.update(content)
        return binascii.b2a_base64(mac.digest(), newline=False).decode()

    requests = requests[: max(len(requests) // 32, 1) * 32]
    # every 32nd request stands for the run of the 32 requests ending with it; the others only miss
    runs = {id(requests[i]): requests[i - 31 : i + 1] for i in range(31, len(requests), 32)}
    contents = [combine_request_content(r.ext_fields or {}, r.body, skip_unique_query=True) for r in requests]
    # the consumer's requests, found by the send request they stand beside (a dict look-up more)
    consumer = consume_requests(len(requests), client)
    of = {name: {id(r): c for r, c in zip(requests, cs, strict=True)} for name, cs in consumer.items()}
    parts: dict[str, Any] = {
        "acl_step": lambda r, c: hook.do_before_request("127.0.0.1:50000", r),
        # the same step as the dispatcher runs it on a run of sends (one read's, taken together); timed
        # per request: each 32nd request runs the 32 before it
        "acl_step_in_runs": lambda r, c: (
            (run := runs.get(id(r))) is None or hook.do_before_requests("127.0.0.1:50000", run)
        ),
        # a pull brings up to 32 messages: per consumed message, a 32nd of this
        "acl_step_pull": lambda r, c: hook.do_before_request("127.0.0.1:50000", of["pull"][id(r)]),
        "acl_step_offset": lambda r, c: hook.do_before_request("127.0.0.1:50000", of["offset"][id(r)]),
        "acl_step_heartbeat": lambda r, c: hook.do_before_request("127.0.0.1:50000", of["heartbeat"][id(r)]),
        "signature": lambda r, c: signature_matches(r.ext_fields, r.body, secret),
        # the check itself, which runs the first time; then the validator finds the pass it kept
        "permission_check": lambda r, c: check_perm(
            r.code, permission.needed_perms(r.code, r.ext_fields), account
        ),
        "permission_kept": lambda r, c: (USER[0], r.code, values_of[r.code](r.ext_fields.get)) in passes,
        "hmac_one_shot": lambda r, c: binascii.b2a_base64(
            hmac.digest(key, c, "sha1"), newline=False
        ).decode(),
        "hmac_keyed_copy": keyed_copy,
        "hmac_sha1_states": lambda r, c: signing.hmac_sha1_base64(c, None, secret),  # what signing uses
        "signed_content": lambda r, c: combine_request_content(r.ext_fields, r.body, skip_unique_query=True),
    }
    for r in requests + [r for cs in consumer.values() for r in cs]:  # all pass: no part times a refusal
        hook.do_before_request("127.0.0.1:50000", r)
    times: dict[str, list[float]] = {name: [] for name in parts}
    pairs = list(zip(requests, contents, strict=True))
    for _ in range(args.rounds):
        for name, fn in parts.items():
            started = time.process_time_ns()
            for r, c in pairs:
                fn(r, c)
            times[name].append((time.process_time_ns() - started) / len(pairs) / 1000)
    return {
        name: {"min_us": round(min(t), 2), "median_us": round(statistics.median(t), 2)}
        for name, t in times.items()
    }


def send_frames(count: int, signed: bool) -> list[memoryview]:
    """bench/send_path.py's SEND_MESSAGE_V2 frames (msgpack header, 1 KiB body), signed by USER when
    `signed`, as the frame decoder hands them over."""
    from send_path import BODY, send_header

    out = []
    for i in range(count):
        fields = send_header(i)
        if signed:
            sign_request(fields, BODY, USER[0], USER[1])
        cmd = RemotingCommand.request(310, fields, BODY, serialize_type=SerializeType.MSGPACK)
        out.append(memoryview(encode_frame(cmd))[4:])
    return out


async def send_path(args: argparse.Namespace) -> dict[str, Any]:
    """The broker's send path in one process (bench/send_runs.py's: decode each SEND_MESSAGE_V2 frame,
    the send processor's process_requests over a real MessageStore on runs of --run requests, encode
    each answer), plain frames against signed ones with the ACL hook on each run as the dispatcher
    calls it; alternating rounds, the event-loop thread's CPU per message."""
    from inprocess_broker import Connection, unstarted_broker
    from send_path import WARM_UP

    with tempfile.TemporaryDirectory(prefix="rocketq-bench-acl-") as d:
        acl_file = Path(d) / "plain_acl.yml"
        acl_file.write_text(ACL, encoding="utf-8")
        hook = AclServerHook(PlainAclConfig(str(acl_file)))
    before_run = getattr(hook, "do_before_requests", None)  # an older tree: one by one
    total = WARM_UP + args.count * args.rounds
    work = {"plain": send_frames(total, False), "acl": send_frames(total, True)}
    run = args.run
    async with unstarted_broker() as broker:
        proc, conn = broker.processors["send"], Connection()

        async def one_round(name: str, part: list[memoryview]) -> None:
            for i in range(0, len(part), run):
                cmds = [decode_frame_payload(f) for f in part[i : i + run]]
                if name == "acl":
                    if before_run is not None:
                        assert before_run("127.0.0.1:50000", cmds) is None
                    else:
                        for cmd in cmds:
                            hook.do_before_request("127.0.0.1:50000", cmd)
                for resp in await proc.process_requests(conn, cmds):
                    assert resp is not None and resp.code == 0, resp
                    encode_frame(resp)

        for name in work:
            await one_round(name, work[name][:WARM_UP])
        await asyncio.sleep(0.5)
        gc.collect()
        figures: dict[str, list[float]] = {"plain": [], "acl": []}
        at = WARM_UP
        for _ in range(args.rounds):
            for name in ("plain", "acl") if len(figures["acl"]) % 2 else ("acl", "plain"):
                t0 = time.thread_time()
                await one_round(name, work[name][at : at + args.count])
                figures[name].append(1e6 * (time.thread_time() - t0) / args.count)
            at += args.count
    paired = [a / p for a, p in zip(figures["acl"], figures["plain"], strict=True)]
    return {
        **{name: {"best_us": round(min(v), 2), "median_us": round(statistics.median(v), 2)}
           for name, v in figures.items()},
        "acl_ratio_paired_median": round(statistics.median(paired), 3),
        "load_average": os.getloadavg()[0],
    }  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000, help="messages per phase and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--duration-s", type=float, default=60.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--in-process", action="store_true", help="the ACL step alone, no daemons")
    parser.add_argument(
        "--phases", type=lambda t: t.split(","), default=list(PHASES), help="e.g. replay,pipelined"
    )
    parser.add_argument(
        "--clusters", type=lambda t: t.split(","), default=["plain", "acl", "tls"], help="e.g. plain,acl"
    )
    parser.add_argument(
        "--loop", choices=["auto", "asyncio", "uvloop"], default="auto", help="the clients' event loop"
    )
    parser.add_argument(
        "--send-path", action="store_true", help="the broker's send path in process, ACL on/off"
    )
    parser.add_argument("--run", type=int, default=32, help="--send-path: requests taken together")
    a = parser.parse_args()
    if a.send_path:
        a.count = min(a.count, 4096)
        print(json.dumps(run(send_path(a), loop="auto"), indent=2))
        raise SystemExit(0)
    if a.in_process:
        steps = in_process(a)
        print(json.dumps(steps, indent=2) if a.json else "\n".join(f"{k:16} {v}" for k, v in steps.items()))
        raise SystemExit(0)
    res = run(main(a), loop=a.loop)  # the clients on uvloop when installed, as the daemons are
    if a.json:
        print(json.dumps(res, indent=2))
    else:
        for name, phases in res.items():
            for phase, r in phases.items():
                print(f"{name:6} {phase:10} " + "  ".join(f"{k}={v}" for k, v in r.items()))
