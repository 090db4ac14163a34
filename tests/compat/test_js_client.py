"""A foreign RocketMQ 4.x client against our daemons: ali-ons (pure JavaScript, pinned in js/package-lock.json).

Each test starts `rocketq namesrv` and `rocketq broker` as subprocesses (cluster_factory) and drives ali-ons
through the small Node scripts in js/ (produce.js, consume.js: a JSON spec in, one JSON line per event out;
their stderr, ali-ons' own log, goes to a file shown when a test fails). Nothing of ali-ons is changed or
worked around: what it sends and expects is what an unmodified RocketMQ client does.

The JS dependencies come from `make test` (`npm ci --prefix tests/compat/js`, when node and npm exist);
without node, or without that install, the tests skip and say why.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from interop import python_receive, python_send

from rocketq.client import Admin, Message
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.headers.namesrv import PutKVConfigRequestHeader
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.fixtures import cluster_factory
from rocketq.testing.namesrv_client import NamesrvTestClient
from rocketq.testing.waiting import WaitTimeoutError, wait_for
from rocketq.testing.wire import RawConnection

__all__ = ["cluster_factory"]

JS_DIR = Path(__file__).parent / "js"
NODE = shutil.which("node")
CLUSTER = "DefaultCluster"
# Short delay levels: level 3 + reconsume times is the broker's retry back-off (RECONSUME_LATER), level 2 is
# what the delay test asks for.
DELAY_LEVELS = "1s 2s 1s 1s 1s 1s 1s 1s"

if NODE is None:
    pytestmark = pytest.mark.skip(
        reason="node is not installed (the ali-ons interop tests need Node.js >= 14)"
    )
elif not (JS_DIR / "node_modules" / "ali-ons" / "package.json").is_file():
    pytestmark = pytest.mark.skip(
        reason="ali-ons is not installed: run `make test` (or `npm ci --prefix tests/compat/js`)"
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def settle(condition: Callable[[], bool], timeout_s: float) -> bool:
    """Whether `condition` came true within `timeout_s` (a bounded wait that does not fail the test)."""
    try:
        await wait_for(condition, timeout_s=timeout_s, interval_s=0.02, what="")
    except WaitTimeoutError:
        return False
    return True


class JsProcess:
    """One Node script: JSON lines from its stdout collected by a thread, stderr to a file, stop by its pid."""

    def __init__(self, script: str, spec: dict[str, Any], log_dir: Path) -> None:
        self.name = f"{script}-{spec.get('group', '')}-{spec.get('instanceName', '')}".rstrip("-")
        self.stderr_path = log_dir / f"{self.name}.{time.monotonic_ns()}.stderr.log"
        self.events: list[dict[str, Any]] = []
        self.lines: list[str] = []
        assert NODE is not None
        arg = json.dumps(spec)
        if len(arg) > 64 * 1024:  # more than one argument may hold: the scripts read `@file`
            spec_path = log_dir / f"{self.name}.{time.monotonic_ns()}.spec.json"
            spec_path.write_text(arg, encoding="utf-8")
            arg = f"@{spec_path}"
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(
                [NODE, str(JS_DIR / script), arg],
                cwd=JS_DIR,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
            )
        self._reader = threading.Thread(target=self._read, name=f"stdout-{self.name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", errors="replace").strip()
                self.lines.append(line)
                try:
                    self.events.append(json.loads(line))
                except ValueError:
                    pass  # not ours (ali-ons logs to stderr, but a dependency may print)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in list(self.events) if e.get("event") == kind]

    def fatal(self) -> str | None:
        fatal = self.of("fatal")
        if fatal:
            return str(fatal[0]["message"])
        if self.proc.poll() is not None and not self.of("closed") and not self.of("done"):
            return f"exited with {self.proc.returncode}"
        return None

    async def wait(self, condition: Callable[[], Any], timeout_s: float, what: str) -> Any:
        def check() -> Any:
            if (reason := self.fatal()) is not None:
                raise AssertionError(f"{self.name} failed: {reason}\n{self.stderr_tail()}")
            return condition()

        try:
            return await wait_for(check, timeout_s=timeout_s, interval_s=0.05, what=f"{self.name}: {what}")
        except AssertionError as e:
            raise AssertionError(f"{e}\n---- {self.name} stderr tail:\n{self.stderr_tail()}") from None

    async def close(self, timeout_s: float = 20.0) -> None:
        """Ask the script to close its client (a consumer commits its offsets), then wait for its exit."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.write(b"close\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
        await settle(lambda: self.proc.poll() is not None, timeout_s)
        await self.kill()
        assert self.proc.returncode == 0, (
            f"{self.name} exited with {self.proc.returncode}\n{self.stderr_tail()}"
        )

    async def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        await settle(lambda: self.proc.poll() is not None, 10.0)
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        await settle(lambda: not self._reader.is_alive(), 5.0)

    def stderr_lines(self) -> list[str]:
        """Everything the script logged so far (ali-ons' log)."""
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []

    def stderr_tail(self, lines: int = 40) -> str:
        return "\n".join(self.stderr_lines()[-lines:])


class Js:
    """Starts the Node scripts of one test and stops whatever is left of them at its end."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.procs: list[JsProcess] = []

    def start(self, script: str, spec: dict[str, Any]) -> JsProcess:
        proc = JsProcess(script, spec, self.log_dir)
        self.procs.append(proc)
        return proc

    async def produce(
        self, namesrv: str, group: str, messages: list[dict[str, Any]], timeout_s: float = 30, **spec: Any
    ) -> list[dict[str, Any]]:
        """Send with an ali-ons Producer; the send results in order (every one must have succeeded)."""
        proc = self.start("produce.js", {"namesrv": namesrv, "group": group, "messages": messages, **spec})
        await proc.wait(lambda: proc.of("done"), timeout_s, f"{len(messages)} sends")
        errors = proc.of("error")
        assert not errors, f"ali-ons sends failed: {errors[:3]}\n{proc.stderr_tail()}"
        await proc.close()
        return sorted(proc.of("sent"), key=lambda e: e["index"])

    def consumer(
        self, namesrv: str, group: str, topic: str, expression: str | dict[str, str] = "*", **spec: Any
    ) -> JsProcess:
        return self.start(
            "consume.js",
            {"namesrv": namesrv, "group": group, "topic": topic, "expression": expression, **spec},
        )

    async def close(self) -> None:
        for proc in self.procs:
            await proc.kill()


@pytest.fixture
async def js(tmp_path: Path) -> AsyncIterator[Js]:
    runner = Js(tmp_path)
    try:
        yield runner
    finally:
        await runner.close()


@asynccontextmanager
async def diagnosed(cluster: LocalCluster, js: Js) -> AsyncIterator[None]:
    """On a failure, print the daemons' and the Node scripts' log tails (pytest shows them with the failure)."""
    try:
        yield
    except BaseException:
        print(cluster.log_tails())
        for proc in js.procs:
            print(f"==== {proc.name} (exit {proc.proc.poll()}) stdout:\n" + "\n".join(proc.lines[-20:]))
            print(f"---- stderr:\n{proc.stderr_tail()}")
        raise


@asynccontextmanager
async def cluster_with_topic(
    cluster_factory: Any, js: Js, topic: str, **broker_overrides: Any
) -> AsyncIterator[str]:
    """A NameServer and a broker (short delay levels), `topic` created with 4 queues; the NameServer address.

    A failure inside prints the daemons' and the Node scripts' logs."""
    cluster = await cluster_factory(broker_overrides={"messageDelayLevel": DELAY_LEVELS, **broker_overrides})
    async with diagnosed(cluster, js):
        await create_topic(cluster.namesrv_addr, topic)
        yield cluster.namesrv_addr


async def create_topic(ns: str, topic: str, queues: int = 4) -> None:
    async with Admin(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, cluster=CLUSTER, read_queues=queues, write_queues=queues)
        await wait_for(lambda: admin.topic_route(topic), timeout_s=15, what=f"route of {topic}")


async def wait_offsets_caught_up(
    ns: str, group: str, topic: str, timeout_s: float = 30
) -> dict[tuple[str, int], int]:
    """Until the group's committed offset of every queue of `topic` on our broker equals the queue's max offset.

    Read with our Admin (GET_CONSUME_STATS); the committed offsets by (broker name, queue id)."""
    async with Admin(namesrv_addr=ns) as admin:

        async def caught_up() -> dict[tuple[str, int], int] | None:
            progress = await admin.consumer_progress(group, topic)
            ok = progress and all(p.consumer_offset == p.broker_offset for p in progress)
            return (
                {(p.queue.broker_name, p.queue.queue_id): p.consumer_offset for p in progress} if ok else None
            )

        result: dict[tuple[str, int], int] = await wait_for(
            caught_up, timeout_s=timeout_s, interval_s=0.2, what=f"{group} offsets on {topic}"
        )
        return result


def sees_both(proc: JsProcess) -> bool:
    lines = proc.stderr_lines()
    return any("with consumer ids" in line and "@one" in line and "@two" in line for line in lines)


def received(proc: JsProcess) -> list[dict[str, Any]]:
    return proc.of("message")


def bodies(events: Iterable[dict[str, Any]]) -> Counter[bytes]:
    return Counter(base64.b64decode(e["body"]) for e in events)


# -- 1. ali-ons Producer -> our broker -> our Python consumer --------------------------------------------


@pytest.mark.timeout(90)
async def test_ali_ons_producer_messages_reach_python_consumer_intact(cluster_factory: Any, js: Js) -> None:
    topic = "JsProduced"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        n = 40
        specs: list[dict[str, Any]] = []
        for i in range(n):
            body = bytes([i]) + f"body-{i}".encode() + b"\x00\xff\x01\x02"
            if i == 7:
                body = (
                    bytes(range(256)) * 20
                )  # >= 4 KiB: ali-ons deflates it and sets the compressed sys flag
            specs.append(
                {
                    "topic": topic,
                    "tags": f"Tag{i % 3}",
                    "keys": [f"key-{i}", f"order-{i // 4}"],
                    "body": b64(body),
                    "properties": {"seq": str(i), "origin": "ali-ons"},
                    "flag": i % 5,
                }
            )
        sent = await js.produce(ns, "pg-js", specs)
        assert [s["sendStatus"] for s in sent] == ["SEND_OK"] * n
        assert all(len(s["msgId"]) == 32 and int(s["msgId"], 16) >= 0 for s in sent), sent[:3]
        assert len({s["msgId"] for s in sent}) == n

        got = await python_receive(ns, "cg-py-of-js", topic, n)
        assert len(got) == n
        by_seq = {int(m.properties["seq"]): m for m in got}
        assert sorted(by_seq) == list(range(n))
        for i, spec in enumerate(specs):
            m, s = by_seq[i], sent[i]
            assert m.body == base64.b64decode(spec["body"]), f"body of message {i}"
            assert m.tags == spec["tags"]
            assert m.keys == spec["keys"]
            assert m.properties["origin"] == "ali-ons"
            assert m.flag == spec["flag"]
            assert m.topic == topic
            # ali-ons sets no UNIQ_KEY: its msgId is the broker's offset message id, the store address + offset.
            assert m.offset_msg_id == s["msgId"]
            assert (m.queue_id, m.queue_offset) == (int(s["queueId"]), s["queueOffset"])

        async with Admin(namesrv_addr=ns) as admin:
            found = await admin.query_message_by_id(sent[3]["msgId"])
            assert found.body == base64.b64decode(specs[3]["body"])
            by_key = await admin.query_message_by_key(topic, "key-5")
            assert [m.properties["seq"] for m in by_key] == ["5"]


@pytest.mark.timeout(90)
async def test_ali_ons_sharding_key_keeps_order_and_delay_level_is_honoured(
    cluster_factory: Any, js: Js
) -> None:
    topic = "JsOrdered"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        # ali-ons picks queue md5(key)[:4] % 4 but treats queue id 0 as "none" (then round-robins): these
        # keys hash to queues 1, 3 and 2.
        orders = ["order-1", "order-3", "order-5"]
        specs: list[dict[str, Any]] = [
            {
                "topic": topic,
                "tags": "Ord",
                "keys": [f"o{i}"],
                "body": b64(f"{orders[i % 3]}:{i}".encode()),
                "shardingKey": orders[i % 3],
                "properties": {"seq": str(i)},
            }
            for i in range(18)
        ]
        delayed = {
            "topic": topic,
            "tags": "Late",
            "keys": ["late"],
            "body": b64(b"late"),
            "delayTimeLevel": 2,
        }
        sent = await js.produce(ns, "pg-js-order", [*specs, delayed])
        assert {s["sendStatus"] for s in sent} == {"SEND_OK"}
        # The queue selector (a hash of the sharding key) puts each order on one queue...
        for order in orders:
            assert (
                len(
                    {
                        int(s["queueId"])
                        for s, spec in zip(sent, specs, strict=False)
                        if spec["shardingKey"] == order
                    }
                )
                == 1
            )

        got = await python_receive(ns, "cg-py-order", topic, len(specs) + 1)
        # ... where our broker keeps the send order.
        for order in orders:
            in_queue = sorted(
                (m for m in got if m.body.startswith(order.encode())), key=lambda m: m.queue_offset
            )
            assert [int(m.properties["seq"]) for m in in_queue] == [
                i for i in range(18) if i % 3 == orders.index(order)
            ]
        late = [m for m in got if m.tags == "Late"]
        assert len(late) == 1
        # Level 2 of the broker's messageDelayLevel is 2 s: stored again under the topic no earlier than that.
        assert late[0].store_timestamp - late[0].born_timestamp >= 1900
        assert late[0].properties.get("DELAY") == "2" and late[0].keys == ["late"]


# -- 2. our Python Producer -> ali-ons push Consumer ------------------------------------------------------


@pytest.mark.timeout(120)
async def test_ali_ons_consumer_tag_filter_and_offsets_committed_on_our_broker(
    cluster_factory: Any, js: Js
) -> None:
    topic, group = "PyProduced", "cg-js-filter"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        tags = ["TagA", "TagB", "TagC"]
        first = [
            Message(topic, f"first-{i}".encode() + b"\x00\xfe", tags=tags[i % 3], keys=[f"k{i}"], flag=i)
            for i in range(30)
        ]
        await python_send(ns, "pg-py", first)
        wanted = Counter(m.body for m in first if m.tags in ("TagA", "TagC"))

        consumer = js.consumer(ns, group, topic, "TagA || TagC")
        await consumer.wait(
            lambda: bodies(received(consumer)) == wanted, 40, f"{len(wanted)} TagA/TagC messages"
        )
        offsets = await wait_offsets_caught_up(ns, group, topic)
        assert sum(offsets.values()) == len(first)
        assert bodies(received(consumer)) == wanted, "only the subscribed tags, each once"
        assert all(e["tags"] in ("TagA", "TagC") and e["reconsumeTimes"] == 0 for e in received(consumer))
        by_body = {m.body: m for m in first}
        for e in received(consumer):
            m = by_body[base64.b64decode(e["body"])]
            assert (e["keys"], e["flag"]) == (m.properties["KEYS"], m.flag)

        async with Admin(namesrv_addr=ns) as admin:
            conn = await admin.consumer_connections(group)
            assert conn.message_model is not None and conn.message_model.name == "CLUSTERING"
            assert conn.consume_type is not None and conn.consume_type.name == "CONSUME_PASSIVELY"
            sub = conn.subscription_table[topic]
            assert sub.sub_string == "TagA || TagC" and sorted(sub.tags_set) == ["TagA", "TagC"]
            [client] = conn.connection_set
            assert (client.language.name, client.version) == ("JAVA", 121)  # what ali-ons says it is (V3_4_9)
        await consumer.close()

        # A restart resumes from the offsets committed on our broker: only what was sent since comes.
        second = [Message(topic, f"second-{i}".encode(), tags=tags[i % 3]) for i in range(9)]
        await python_send(ns, "pg-py", second)
        again = js.consumer(ns, group, topic, "TagA || TagC")
        wanted_again = Counter(m.body for m in second if m.tags in ("TagA", "TagC"))
        await again.wait(
            lambda: bodies(received(again)) == wanted_again, 40, "the messages sent after the restart"
        )
        await wait_offsets_caught_up(ns, group, topic)
        assert bodies(received(again)) == wanted_again, "nothing consumed before the restart came again"
        await again.close()


@pytest.mark.timeout(120)
async def test_ali_ons_two_consumers_share_the_queues_of_a_group(cluster_factory: Any, js: Js) -> None:
    topic, group = "PyShared", "cg-js-shared"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        one = js.consumer(ns, group, topic, "*", instanceName="one")
        two = js.consumer(ns, group, topic, "*", instanceName="two")
        async with Admin(namesrv_addr=ns) as admin:
            await wait_for(
                lambda: admin.consumer_connections(group), timeout_s=30, what="the group's connections"
            )

            async def both_connected() -> bool:
                return len((await admin.consumer_connections(group)).connection_set) == 2

            await wait_for(both_connected, timeout_s=30, what="both consumers connected")
        # Each takes half the queues once its rebalance sees both members (GET_CONSUMER_LIST_BY_GROUP).
        for proc in (one, two):
            await proc.wait(lambda p=proc: sees_both(p), 30, "a rebalance that sees both members")  # type: ignore[misc]
        msgs = [Message(topic, f"shared-{i}".encode(), tags="S") for i in range(40)]
        await python_send(ns, "pg-py-shared", msgs)
        wanted = {m.body for m in msgs}
        await one.wait(
            lambda: set(bodies(received(one)) + bodies(received(two))) >= wanted, 40, "every message"
        )
        # Once by position: a send our producer retried after a timeout (a loaded machine) is stored twice,
        # and each stored message reaches one member once.
        stored = sum((await wait_offsets_caught_up(ns, group, topic)).values())

        def positions() -> Counter[tuple[int, int]]:
            return Counter((e["queueId"], int(e["queueOffset"])) for e in received(one) + received(two))

        await one.wait(lambda: len(positions()) == stored, 20, f"all {stored} stored messages")
        assert max(positions().values()) == 1, "a stored message consumed twice"
        assert received(one) and received(two), "both members consumed"
        assert not {e["queueId"] for e in received(one)} & {e["queueId"] for e in received(two)}
        await one.close()
        await two.close()


# -- 3. retry, broadcast ----------------------------------------------------------------------------------


@pytest.mark.timeout(120)
async def test_ali_ons_reconsume_later_comes_back_through_send_msg_back(cluster_factory: Any, js: Js) -> None:
    topic, group = "PyRetry", "cg-js-retry"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        consumer = js.consumer(ns, group, topic, "*", retryFirstDeliveryOfTags=["Fail"])
        await consumer.wait(lambda: consumer.of("ready"), 30, "the consumer started")
        msgs = [
            Message(
                topic,
                f"retry-{i}".encode(),
                tags="Fail" if i % 2 else "Fine",
                keys=[f"r{i}"],
                properties={"n": str(i)},
            )
            for i in range(6)
        ]
        results = await python_send(ns, "pg-py-retry", msgs)
        failing = {m.body for m in msgs if m.tags == "Fail"}

        def redelivered() -> list[dict[str, Any]]:
            return [e for e in received(consumer) if e["reconsumeTimes"] == 1]

        await consumer.wait(
            lambda: {base64.b64decode(e["body"]) for e in redelivered()} == failing,
            60,
            "each failed message once more (CONSUMER_SEND_MSG_BACK, %RETRY% topic, back-off)",
        )
        firsts = [e for e in received(consumer) if e["reconsumeTimes"] == 0]
        assert bodies(firsts) == Counter(m.body for m in msgs)
        assert {e["action"] for e in firsts if e["tags"] == "Fail"} == {"retry"}
        offset_ids = {r.msg_id: r.offset_msg_id for r in results}
        by_body = {m.body: (m, r) for m, r in zip(msgs, results, strict=True)}
        for e in redelivered():
            m, r = by_body[base64.b64decode(e["body"])]
            assert e["topic"] == topic, "ali-ons restores the topic from RETRY_TOPIC"
            assert e["properties"]["RETRY_TOPIC"] == topic
            assert e["properties"]["ORIGIN_MESSAGE_ID"] in (r.msg_id, offset_ids[r.msg_id])
            assert (
                e["tags"] == "Fail"
                and e["keys"] == m.properties["KEYS"]
                and e["properties"]["n"] == m.properties["n"]
            )
        await wait_offsets_caught_up(ns, group, topic)
        await consumer.close()


@pytest.mark.timeout(120)
async def test_ali_ons_broadcast_consumers_each_receive_everything(cluster_factory: Any, js: Js) -> None:
    topic, group = "PyBroadcast", "cg-js-broadcast"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        spec = {"broadcast": True, "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET"}
        one = js.consumer(ns, group, topic, "B1 || B2", instanceName="b-one", **spec)
        two = js.consumer(ns, group, topic, "B1 || B2", instanceName="b-two", **spec)
        msgs = [
            Message(topic, f"broadcast-{i}".encode(), tags=["B1", "B2", "Other"][i % 3]) for i in range(24)
        ]
        await python_send(ns, "pg-py-broadcast", msgs)
        wanted = Counter(m.body for m in msgs if m.tags != "Other")
        await one.wait(lambda: bodies(received(one)) == wanted, 40, "all B1/B2 messages")
        await two.wait(lambda: bodies(received(two)) == wanted, 40, "all B1/B2 messages")
        await one.close()
        await two.close()


@pytest.mark.timeout(120)
async def test_ali_ons_message_beyond_max_reconsume_times_goes_to_the_dlq(
    cluster_factory: Any, js: Js
) -> None:
    topic, group = "PyDead", "cg-js-dead"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        consumer = js.consumer(
            ns, group, topic, "*", retryAlwaysTags=["Dead"], options={"maxReconsumeTimes": 1}
        )
        await consumer.wait(lambda: consumer.of("ready"), 30, "the consumer started")
        [result] = await python_send(
            ns, "pg-py-dead", [Message(topic, b"dead \x00 letter", tags="Dead", keys=["dl"])]
        )
        # Delivered, retried once (the header's maxReconsumeTimes=1 overrides the group's 16), then dead.
        await consumer.wait(
            lambda: sorted(e["reconsumeTimes"] for e in received(consumer)) == [0, 1], 60, "two deliveries"
        )
        [dead] = await python_receive(ns, "cg-py-dlq-reader", f"%DLQ%{group}", 1)
        assert dead.body == b"dead \x00 letter" and dead.tags == "Dead" and dead.keys == ["dl"]
        assert dead.reconsume_times == 2
        assert dead.properties["RETRY_TOPIC"] == topic
        assert dead.properties["ORIGIN_MESSAGE_ID"] == result.offset_msg_id
        await consumer.close()
        assert sorted(e["reconsumeTimes"] for e in received(consumer)) == [0, 1], "nothing after the DLQ"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("post_subscription", [True, False], ids=["sub-in-pull", "heartbeat-only"])
async def test_ali_ons_sql92_subscription_is_filtered_by_our_broker(
    cluster_factory: Any, js: Js, post_subscription: bool
) -> None:
    # heartbeat-only: the pulls carry no expression, our broker filters with the one the heartbeat registered.
    topic, group = "PySql", "cg-js-sql"
    async with cluster_with_topic(cluster_factory, js, topic, enablePropertyFilter=True) as ns:
        msgs = [
            Message(
                topic,
                f"sql-{i}".encode(),
                tags=["X", "Y"][i % 2],
                properties={"a": str(i), "b": "yes" if i % 3 else "no"},
            )
            for i in range(20)
        ]
        await python_send(ns, "pg-py-sql", msgs)
        expression = {
            "expressionType": "SQL92",
            "subString": "a >= 5 AND a < 15 AND b = 'yes' AND TAGS = 'X'",
        }
        consumer = js.consumer(
            ns, group, topic, expression, options={"postSubscriptionWhenPull": post_subscription}
        )
        wanted = Counter(m.body for i, m in enumerate(msgs) if 5 <= i < 15 and i % 3 and i % 2 == 0)
        await consumer.wait(
            lambda: bodies(received(consumer)) == wanted, 40, f"the {len(wanted)} matching messages"
        )
        await wait_offsets_caught_up(ns, group, topic)
        assert bodies(received(consumer)) == wanted
        await consumer.close()


@pytest.mark.timeout(120)
async def test_ali_ons_namespace_and_start_deliver_time(cluster_factory: Any, js: Js) -> None:
    namespace = "inst1"
    # ali-ons puts `<namespace>%` before topics and groups
    async with cluster_with_topic(cluster_factory, js, f"{namespace}%NsTopic") as ns:
        consumer = js.consumer(
            ns, "cg-ns", "NsTopic", "*", namespace=namespace, retryFirstDeliveryOfTags=["Again"]
        )
        await consumer.wait(lambda: consumer.of("ready"), 30, "the consumer started")
        specs: list[dict[str, Any]] = [
            {"topic": "NsTopic", "tags": "Now", "keys": ["n"], "body": b64(b"now")},
            {
                "topic": "NsTopic",
                "tags": "Timer",
                "keys": ["t"],
                "body": b64(b"timer"),
                "startDeliverAfterMs": 2000,
            },
            {"topic": "NsTopic", "tags": "Again", "keys": ["a"], "body": b64(b"again")},
        ]
        sent = await js.produce(ns, "pg-ns", specs, namespace=namespace)
        assert {s["sendStatus"] for s in sent} == {"SEND_OK"}
        await consumer.wait(
            lambda: len(received(consumer)) == 4, 40, "now, again twice and the timer message"
        )
        by_tag = {(e["tags"], e["reconsumeTimes"]): e for e in received(consumer)}
        assert set(by_tag) == {("Now", 0), ("Timer", 0), ("Again", 0), ("Again", 1)}
        assert all(e["topic"] == f"{namespace}%NsTopic" for e in received(consumer))
        timer = by_tag["Timer", 0]
        # ali-ons' __STARTDELIVERTIME: our broker holds the message until then (a timer message).
        assert (
            timer["storeTimestamp"]
            >= int(timer["properties"]["__STARTDELIVERTIME"])
            >= timer["bornTimestamp"] + 1900
        )
        await wait_offsets_caught_up(ns, f"{namespace}%cg-ns", f"{namespace}%NsTopic")
        await consumer.close()


@pytest.mark.timeout(120)
async def test_ali_ons_heartbeat_subscription_filters_unicode_tags(cluster_factory: Any, js: Js) -> None:
    # postSubscriptionWhenPull=false: the pulls carry no subscription, so our broker filters with the one of
    # the heartbeat, whose codeSet ali-ons computed (Java's String.hashCode over UTF-16 units).
    topic, group = "PyUnicode", "cg-js-unicode"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        tags = ["标签", "tag-😀", "Ünïcödé", "plain"]
        msgs = [
            Message(
                topic,
                f"u-{i}-✓".encode() + bytes(range(200)) * (30 if i == 3 else 1),
                tags=tags[i % 4],
                keys=[f"ключ-{i}"],
                properties={"ñame": f"välue-{i} ✓"},
            )
            for i in range(16)
        ]
        await python_send(ns, "pg-py-unicode", msgs)
        consumer = js.consumer(
            ns, group, topic, "标签 || tag-😀", options={"postSubscriptionWhenPull": False}
        )
        wanted = Counter(m.body for m in msgs if m.tags in ("标签", "tag-😀"))
        await consumer.wait(
            lambda: bodies(received(consumer)) == wanted, 40, f"the {len(wanted)} messages of two tags"
        )
        await wait_offsets_caught_up(ns, group, topic)
        assert bodies(received(consumer)) == wanted
        by_body = {m.body: m for m in msgs}
        for e in received(consumer):
            m = by_body[base64.b64decode(e["body"])]
            assert (e["tags"], e["keys"], e["properties"]["ñame"]) == (
                m.tags,
                m.keys[0],
                m.properties["ñame"],
            )
        await consumer.close()


@pytest.mark.timeout(120)
async def test_ali_ons_across_two_brokers(cluster_factory: Any, js: Js) -> None:
    cluster = await cluster_factory(broker_count=2, broker_overrides={"messageDelayLevel": DELAY_LEVELS})
    ns, topic, group = cluster.namesrv_addr, "JsTwoBrokers", "cg-js-two-brokers"
    async with diagnosed(cluster, js):
        await create_topic(ns, topic)  # 4 queues on each broker
        consumer = js.consumer(ns, group, topic, "Even")
        await consumer.wait(lambda: consumer.of("ready"), 30, "the consumer started")
        specs: list[dict[str, Any]] = [
            {
                "topic": topic,
                "tags": ["Even", "Odd"][i % 2],
                "keys": [f"b{i}"],
                "body": b64(f"two-{i}".encode()),
            }
            for i in range(40)
        ]
        sent = await js.produce(ns, "pg-js-two", specs)
        assert {s["brokerName"] for s in sent} == {"broker-a", "broker-b"}
        assert {s["sendStatus"] for s in sent} == {"SEND_OK"}
        wanted = Counter(base64.b64decode(s["body"]) for s in specs if s["tags"] == "Even")
        await consumer.wait(
            lambda: bodies(received(consumer)) == wanted, 40, "the Even messages of both brokers"
        )
        offsets = await wait_offsets_caught_up(ns, group, topic)
        assert {broker for broker, _ in offsets} == {"broker-a", "broker-b"} and len(offsets) == 8
        assert sum(offsets.values()) == len(specs)
        await consumer.close()


@pytest.mark.timeout(150)
async def test_ali_ons_consumer_carries_on_over_a_broker_restart(cluster_factory: Any, js: Js) -> None:
    cluster = await cluster_factory(broker_overrides={"messageDelayLevel": DELAY_LEVELS})
    ns, topic, group = cluster.namesrv_addr, "PyRestart", "cg-js-restart"
    async with diagnosed(cluster, js):
        await create_topic(ns, topic)
        consumer = js.consumer(ns, group, topic, "*")
        await consumer.wait(lambda: consumer.of("ready"), 30, "the consumer started")
        before = [Message(topic, f"before-{i}".encode(), tags="R") for i in range(12)]
        await python_send(ns, "pg-py-restart", before)
        await consumer.wait(
            lambda: set(bodies(received(consumer))) == {m.body for m in before}, 40, "the first batch"
        )
        await wait_offsets_caught_up(ns, group, topic)
        await cluster.brokers[0].restart()  # SIGTERM (offsets flushed), then the same port and store
        after = [Message(topic, f"after-{i}".encode(), tags="R") for i in range(12)]
        await python_send(ns, "pg-py-restart", after)
        # ali-ons reconnects (its pulls fail meanwhile and are retried) and goes on from its offsets.
        await consumer.wait(
            lambda: {m.body for m in after} <= set(bodies(received(consumer))), 60, "the second batch"
        )
        await wait_offsets_caught_up(ns, group, topic)
        counts = bodies(received(consumer))
        assert all(counts[m.body] == 1 for m in before), "nothing of the first batch again after the restart"
        await consumer.close()


def added_queues(proc: JsProcess, topic: str) -> int:
    """How many queues of `topic` the ali-ons consumer has computed its start offset for and pulls."""
    marker = f'add a new messageQueue, {{"topic":"{topic}"'
    return sum(marker in line for line in proc.stderr_lines())


@pytest.mark.timeout(150)
async def test_ali_ons_consume_from_last_offset_and_from_timestamp(cluster_factory: Any, js: Js) -> None:
    # accessMessageInMemoryMaxRatio=0: no stored message counts as "in memory", so a new group's
    # QUERY_CONSUMER_OFFSET on a queue with messages is QUERY_NOT_FOUND (Java's rule) and ali-ons applies
    # its ConsumeFromWhere: GET_MAX_OFFSET for LAST_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP for TIMESTAMP.
    topic = "PyWhere"
    async with cluster_with_topic(cluster_factory, js, topic, accessMessageInMemoryMaxRatio=0) as ns:
        old = [Message(topic, f"old-{i}".encode(), tags="W") for i in range(8)]
        await python_send(ns, "pg-py-where", old)
        # A whole second (ali-ons' consumeTimestamp is YYYYMMDDHHmmss, local time) at least 1.5 s after the
        # old messages: SEARCH_OFFSET_BY_TIMESTAMP answers the closest message, which must be a newer one.
        boundary_s = int(time.time() + 1.5) + 1
        await wait_for(lambda: time.time() >= boundary_s, timeout_s=5, what="the timestamp boundary")
        middle = [Message(topic, f"middle-{i}".encode(), tags="W") for i in range(8)]
        await python_send(ns, "pg-py-where", middle)
        stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(boundary_s))
        last = js.consumer(ns, "cg-js-last", topic, "*", consumeFromWhere="CONSUME_FROM_LAST_OFFSET")
        by_time = js.consumer(
            ns, "cg-js-time", topic, "*", consumeFromWhere="CONSUME_FROM_TIMESTAMP", consumeTimestamp=stamp
        )
        for proc in (last, by_time):
            await proc.wait(
                lambda p=proc: added_queues(p, topic) == 4,  # type: ignore[misc]
                30,
                "its start offsets of the 4 queues",
            )
        new = [Message(topic, f"new-{i}".encode(), tags="W") for i in range(8)]
        await python_send(ns, "pg-py-where", new)
        await last.wait(
            lambda: bodies(received(last)) == Counter(m.body for m in new),
            40,
            "the messages sent after its start",
        )
        await by_time.wait(
            lambda: bodies(received(by_time)) == Counter(m.body for m in middle + new),
            40,
            "the messages stored since the timestamp",
        )
        await wait_offsets_caught_up(ns, "cg-js-last", topic)
        await wait_offsets_caught_up(ns, "cg-js-time", topic)
        assert bodies(received(last)) == Counter(m.body for m in new)
        assert bodies(received(by_time)) == Counter(m.body for m in middle + new)
        await last.close()
        await by_time.close()


@pytest.mark.timeout(120)
async def test_ali_ons_ordered_topic_from_the_namesrv_order_config(cluster_factory: Any, js: Js) -> None:
    # With orderMessageEnable the NameServer puts the ORDER_TOPIC_CONFIG KV entry of a topic into its route
    # (orderTopicConf "broker:queues;..."); ali-ons then publishes to those queues only.
    cluster = await cluster_factory(
        broker_overrides={"messageDelayLevel": DELAY_LEVELS}, namesrv_overrides={"orderMessageEnable": True}
    )
    ns, topic = cluster.namesrv_addr, "JsOrderConf"
    async with diagnosed(cluster, js):
        await create_topic(ns, topic)
        async with NamesrvTestClient(ns) as namesrv:
            header = PutKVConfigRequestHeader(namespace="ORDER_TOPIC_CONFIG", key=topic, value="broker-a:2")
            assert (await namesrv.call(RequestCode.PUT_KV_CONFIG, header)).code == ResponseCode.SUCCESS
            route = await namesrv.route(topic, version=121)
            assert route is not None and route.order_topic_conf == "broker-a:2"
        specs: list[dict[str, Any]] = [
            {"topic": topic, "tags": "O", "keys": [f"oc{i}"], "body": b64(f"oc-{i}".encode())}
            for i in range(12)
        ]
        sent = await js.produce(ns, "pg-js-order-conf", specs)
        assert {s["sendStatus"] for s in sent} == {"SEND_OK"}
        assert {int(s["queueId"]) for s in sent} == {0, 1}
        got = await python_receive(ns, "cg-py-order-conf", topic, len(specs))
        assert Counter(m.body for m in got) == Counter(base64.b64decode(s["body"]) for s in specs)


@pytest.mark.timeout(120)
async def test_ali_ons_offsets_committed_on_close_reach_our_broker(cluster_factory: Any, js: Js) -> None:
    # No periodic commit and pulls that hold for 15 s: the offsets reach the broker only by the oneway
    # UPDATE_CONSUMER_OFFSETs ali-ons sends while closing, just before UNREGISTER_CLIENT and the socket close.
    topic, group = "PyCloseCommit", "cg-js-close-commit"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        consumer = js.consumer(
            ns,
            group,
            topic,
            "*",
            options={
                "persistConsumerOffsetInterval": 600_000,
                "brokerSuspendMaxTimeMillis": 15_000,
                "consumerTimeoutMillisWhenSuspend": 30_000,
            },
        )
        await consumer.wait(lambda: added_queues(consumer, topic) == 4, 30, "its 4 queues")
        msgs = [Message(topic, f"close-{i}".encode(), tags="C") for i in range(20)]
        await python_send(ns, "pg-py-close", msgs)
        await consumer.wait(
            lambda: bodies(received(consumer)) == Counter(m.body for m in msgs), 40, "every message"
        )
        await consumer.close()
        offsets = await wait_offsets_caught_up(ns, group, topic, timeout_s=10)
        assert sum(offsets.values()) == len(msgs)


@pytest.mark.timeout(120)
async def test_ali_ons_fallback_send_to_the_retry_topic(cluster_factory: Any, js: Js) -> None:
    # When CONSUMER_SEND_MSG_BACK fails, ali-ons sends the message itself to %RETRY%<group> with its
    # RECONSUME_TIME / MAX_RECONSUME_TIMES properties moved into the SEND_MESSAGE_V2 header (fields j, l):
    # at the maximum our broker redirects it to %DLQ%<group>, else it stays a retry message.
    group = "cg-fallback"
    retry_topic = f"%RETRY%{group}"
    async with cluster_with_topic(cluster_factory, js, retry_topic) as ns:
        common = {
            "RETRY_TOPIC": "Orders",
            "ORIGIN_MESSAGE_ID": "7F00000100002A9F0000000000000000",
            "DELAY": "0",
        }
        specs = [
            {
                "topic": retry_topic,
                "tags": "Fb",
                "keys": ["dead"],
                "body": b64(b"at the maximum"),
                "properties": {**common, "RECONSUME_TIME": "4", "MAX_RECONSUME_TIMES": "4"},
            },
            {
                "topic": retry_topic,
                "tags": "Fb",
                "keys": ["alive"],
                "body": b64(b"one more try"),
                "properties": {**common, "RECONSUME_TIME": "1", "MAX_RECONSUME_TIMES": "4"},
            },
        ]
        sent = await js.produce(ns, "pg-js-fallback", specs)
        assert {s["sendStatus"] for s in sent} == {"SEND_OK"}
        [dead] = await python_receive(ns, "cg-py-fb-dlq", f"%DLQ%{group}", 1)
        [alive] = await python_receive(ns, "cg-py-fb-retry", retry_topic, 1)
        assert (dead.body, dead.keys, dead.reconsume_times) == (b"at the maximum", ["dead"], 4)
        assert (alive.body, alive.keys, alive.reconsume_times) == (b"one more try", ["alive"], 1)
        for m in (dead, alive):
            assert (m.properties["RETRY_TOPIC"], m.properties["ORIGIN_MESSAGE_ID"]) == (
                "Orders",
                common["ORIGIN_MESSAGE_ID"],
            )


@pytest.mark.timeout(120)
async def test_ali_ons_pull_offset_moved_puts_the_consumer_back_in_range(
    cluster_factory: Any, js: Js
) -> None:
    # The group's committed offsets lie beyond the queues' ends: ali-ons pulls there, our broker answers
    # PULL_OFFSET_MOVED with nextBeginOffset = the max offset (4.9.8's correction on a master) and ali-ons
    # goes on from it: nothing old comes again, what is sent afterwards does.
    topic, group = "PyMoved", "cg-js-moved"
    cluster = await cluster_factory(broker_overrides={"messageDelayLevel": DELAY_LEVELS})
    ns = cluster.namesrv_addr
    async with diagnosed(cluster, js):
        await create_topic(ns, topic)
        old = [Message(topic, f"old-{i}".encode(), tags="M") for i in range(8)]
        await python_send(ns, "pg-py-moved", old)
        async with await RawConnection.open(cluster.brokers[0].addr) as conn:
            for queue_id in range(4):
                fields = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "commitOffset": 1000}
                assert (
                    await conn.call(RequestCode.UPDATE_CONSUMER_OFFSET, fields)
                ).code == ResponseCode.SUCCESS
        consumer = js.consumer(ns, group, topic, "*")
        await consumer.wait(
            lambda: sum("offset illegal" in line for line in consumer.stderr_lines()) >= 4,
            30,
            "PULL_OFFSET_MOVED on each queue",
        )
        offsets = await wait_offsets_caught_up(ns, group, topic)
        assert sum(offsets.values()) == len(old)
        new = [Message(topic, f"new-{i}".encode(), tags="M") for i in range(8)]
        await python_send(ns, "pg-py-moved", new)
        await consumer.wait(
            lambda: bodies(received(consumer)) == Counter(m.body for m in new), 40, "the new messages"
        )
        await wait_offsets_caught_up(ns, group, topic)
        assert bodies(received(consumer)) == Counter(m.body for m in new)
        await consumer.close()


@pytest.mark.timeout(120)
async def test_ali_ons_large_messages_both_ways(cluster_factory: Any, js: Js) -> None:
    # Incompressible bodies of 1.5 MiB: frames far beyond a pull's 256 KiB transfer budget (at least one
    # message per pull), in both directions.
    topic, group = "JsLarge", "cg-js-large"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        big = [os.urandom(1536 * 1024) for _ in range(3)]
        specs = [
            {"topic": topic, "tags": "Big", "keys": [f"big{i}"], "body": b64(b)} for i, b in enumerate(big)
        ]
        sent = await js.produce(ns, "pg-js-large", specs)
        assert {s["sendStatus"] for s in sent} == {"SEND_OK"}
        got = await python_receive(ns, "cg-py-large", topic, len(big))
        assert sorted(m.body for m in got) == sorted(big)

        consumer = js.consumer(ns, group, topic, "Back")
        back = [Message(topic, os.urandom(1536 * 1024), tags="Back") for _ in range(3)]
        await python_send(ns, "pg-py-large", back)
        await consumer.wait(
            lambda: bodies(received(consumer)) == Counter(m.body for m in back), 60, "the large messages"
        )
        await consumer.close()


@pytest.mark.timeout(150)
async def test_ali_ons_consumer_and_a_live_offset_reset(cluster_factory: Any, js: Js) -> None:
    # ali-ons answers no server request (its MQClient's handler of broker requests is commented out), so
    # it ignores RESET_CONSUMER_CLIENT_OFFSET and GET_CONSUMER_STATUS_FROM_CLIENT as an old Java client
    # would. What must hold: the broker counts it as online and tells it (a live reset, not the offline
    # fallback), the oneway request does not disturb it, a status request it never answers costs the
    # admin a timeout and an empty answer, not an error; and the offline way (close, reset, restart)
    # replays everything for it.
    topic, group = "PyResetJs", "cg-js-reset"
    async with cluster_with_topic(cluster_factory, js, topic) as ns:
        first = [Message(topic, f"reset-{i}".encode()) for i in range(12)]
        await python_send(ns, "pg-py-reset", first)
        consumer = js.consumer(ns, group, topic)
        await consumer.wait(
            lambda: bodies(received(consumer)) == Counter(m.body for m in first), 40, "every message"
        )
        await wait_offsets_caught_up(ns, group, topic)
        async with Admin(namesrv_addr=ns) as admin:
            reset = await admin.reset_offset_by_time(group, topic, 0)
            assert reset.live and set(reset.values()) == {0}
            status = await admin.consumer_status(group, topic)
            assert status == {}, "ali-ons does not answer GET_CONSUMER_STATUS_FROM_CLIENT"
            later = Message(topic, b"after-the-reset")
            await python_send(ns, "pg-py-reset", [later])
            await consumer.wait(
                lambda: b"after-the-reset" in bodies(received(consumer)), 30, "a message sent after the reset"
            )
            assert not consumer.of("error"), consumer.of("error")
            await consumer.close()
            await wait_offsets_caught_up(ns, group, topic)
            offline = await admin.reset_offset_by_time(group, topic, 0)
            assert not offline.live and set(offline.values()) == {0}
        again = js.consumer(ns, group, topic)
        everything = Counter(m.body for m in [*first, later])
        await again.wait(
            lambda: bodies(received(again)) == everything, 40, "the replay after the offline reset"
        )
        await again.close()
