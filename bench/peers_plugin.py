"""rocketq as a peer of the shared benchmark harness (../shared/peers): its ADAPTERS and SERVERS entries.

    cd /work/main
    .venv/bin/python ../shared/peers/bench.py --plugin bench/peers_plugin.py --peer rocketq --peer nats --peer redis

Run the harness with an interpreter that has rocketq installed (this project's .venv); the plugin also
puts this checkout's src/ first on sys.path. The server is one NameServer and one broker started as
subprocesses (`python -m rocketq namesrv|broker`), each in a fresh temporary directory; the adapter
drives them through rocketq.client (Producer, PushConsumer, Admin). Options (`--opt k=v`):
header_codec=auto|json|msgpack (default auto: msgpack once the broker accepts it), flush=ASYNC_FLUSH|SYNC_FLUSH (server side, via ROCKETQ_BENCH_FLUSH).
Ports: ROCKETQ_BENCH_NAMESRV_PORT (19876) and ROCKETQ_BENCH_BROKER_PORT (19911); ROCKETQ_BENCH_BROKER_CPUS
pins the broker to CPUs (taskset). The peer rocketq-metrics is
the same broker with its Prometheus exporter on (ROCKETQ_BENCH_METRICS_PORT, 15557): name both peers in one
run to see what metrics cost. The peer rocketq-acl is the same broker with ACL on (aclEnable, one PUB|SUB
account and one admin) and every client request signed: with rocketq in one run, what ACL costs
(docs/security.md).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import servers  # noqa: E402  (the harness's module; bench.py put its folder on sys.path)
from adapters.base import Adapter  # noqa: E402

from rocketq.client import Admin, ConsumeFromWhere, ConsumeResult, Message, Producer, PushConsumer  # noqa: E402

# Fixed ports, as the harness's other servers have; ROCKETQ_BENCH_NAMESRV_PORT / ROCKETQ_BENCH_BROKER_PORT
# move them when another run on the machine holds these.
NAMESRV_PORT = int(os.environ.get("ROCKETQ_BENCH_NAMESRV_PORT", "19876"))
BROKER_PORT = int(os.environ.get("ROCKETQ_BENCH_BROKER_PORT", "19911"))
METRICS_PORT = int(os.environ.get("ROCKETQ_BENCH_METRICS_PORT", "15557"))  # peer rocketq-metrics only
# ROCKETQ_BENCH_BROKER_CPUS (a taskset list such as "1") runs the broker, every thread of it, on those CPUs:
# with the harness itself under `taskset -c 0`, client and broker no longer share a core, so a broker-side
# cost (ACL's verify) is measured without the client's work interleaved on the same CPU.
BROKER_CPUS_PREFIX = (
    ("taskset", "-c", os.environ["ROCKETQ_BENCH_BROKER_CPUS"])
    if os.environ.get("ROCKETQ_BENCH_BROKER_CPUS")
    else ()
)


class RocketqServer(servers.ServerProc):
    """One NameServer and one broker (async flush by default, as RocketMQ's default broker)."""

    name = "rocketq"
    port = NAMESRV_PORT
    extra_broker_args: tuple[str, ...] = ()

    @property
    def durability(self) -> str:  # type: ignore[override]
        if os.environ.get("ROCKETQ_BENCH_FLUSH", "ASYNC_FLUSH") == "SYNC_FLUSH":
            return "SEND_OK after the commit log is fsynced (group commit)"
        return "SEND_OK after the write to the mapped commit log (page cache), flushed every 500 ms"

    def fresh_dir(self) -> Path:
        # A private temporary directory rather than the harness folder's .run/.
        d = Path(tempfile.mkdtemp(prefix="rocketq-peers-"))
        self.data = d
        return d

    def start(self) -> None:
        # The harness stops a server only after its start returned: a NameServer started before a broker that
        # failed (a port taken, a bad option) would be left running, so a failed start stops what it spawned.
        try:
            self.launch()
        except BaseException:
            self.stop()
            if self.data is not None:
                shutil.rmtree(self.data, ignore_errors=True)
            raise

    def launch(self) -> None:
        d = self.fresh_dir()
        python = os.environ.get("ROCKETQ_PYTHON", sys.executable)
        ns = self.spawn(
            [
                python,
                "-m",
                "rocketq",
                "namesrv",
                "--listen-port",
                str(NAMESRV_PORT),
                "--logDir",
                str(d / "namesrv-logs"),
                "--kvConfigPath",
                str(d / "kv.json"),
            ],
            log="namesrv.log",
        )
        servers.wait_port(NAMESRV_PORT, 30, ns)
        broker = self.spawn(
            [
                *BROKER_CPUS_PREFIX,
                python,
                "-m",
                "rocketq",
                "broker",
                "--listen-port",
                str(BROKER_PORT),
                "--namesrv-addr",
                f"127.0.0.1:{NAMESRV_PORT}",
                "--store-path-root-dir",
                str(d / "store"),
                "--flushDiskType",
                os.environ.get("ROCKETQ_BENCH_FLUSH", "ASYNC_FLUSH"),
                *self.extra_broker_args,
            ],
            log="broker.log",
        )
        servers.wait_port(BROKER_PORT, 30, broker)

    def stop(self) -> None:
        super().stop()

    def data_bytes(self) -> int:
        size = super().data_bytes()
        if self.data is not None:
            shutil.rmtree(self.data, ignore_errors=True)
        return size

    def version(self) -> str:
        import rocketq

        return f"rocketq {rocketq.__version__}"


class RocketqAdapter(Adapter):
    """rocketq.client: Producer.send (SEND_MESSAGE_V2), send_batch (SEND_BATCH_MESSAGE), PushConsumer."""

    name = "rocketq"
    native_batch = True
    batch_note = "native: SEND_BATCH_MESSAGE, one request per batch"
    consume_note = "PushConsumer, long polling, 32 per pull, offsets committed every 5 s"
    client_dists = ("rocketq",)

    @property
    def namesrv(self) -> str:
        return f"{self.host}:{self.port or NAMESRV_PORT}"

    # keyword arguments of every client (the ACL peer's credentials)
    credentials: dict[str, str] = {}
    admin_credentials: dict[str, str] = {}

    async def connect(self) -> None:
        self.codec = self.opts.get("header_codec", "auto")
        self.producer = Producer(
            "peers_bench_producer", namesrv_addr=self.namesrv, header_codec=self.codec, **self.credentials
        )
        await self.producer.start()

    async def create_topic(self, topic: str, group: str) -> None:
        async with Admin(namesrv_addr=self.namesrv, **self.admin_credentials) as admin:
            for _ in range(100):  # the broker registers with the NameServer just after it listens
                try:
                    await admin.create_topic(topic, read_queues=8, write_queues=8)
                    break
                except Exception:
                    await asyncio.sleep(0.1)
            await admin.update_subscription_group(group)
            for _ in range(100):
                try:
                    await admin.topic_route(topic)
                    return
                except Exception:
                    await asyncio.sleep(0.05)

    async def send(self, topic: str, body: bytes) -> None:
        await self.producer.send(Message(topic, body))

    async def send_batch(self, topic: str, bodies: list[bytes]) -> None:
        await self.producer.send_batch([Message(topic, b) for b in bodies])

    async def consume(
        self,
        topic: str,
        group: str,
        on_message: Callable[[bytes], None],
        stop: asyncio.Event,
        prefetch: int = 256,
        ready: asyncio.Event | None = None,
    ) -> None:
        async def listener(msgs):  # async: runs on the loop, no thread hop per message
            for m in msgs:
                on_message(m.body)
            return ConsumeResult.SUCCESS

        consumer = PushConsumer(
            group,
            namesrv_addr=self.namesrv,
            header_codec=self.codec,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            consume_message_batch_max_size=32,
            pull_batch_size=32,
            **self.credentials,
        )
        consumer.subscribe(topic, "*")
        consumer.register_listener(listener)
        await consumer.start()
        try:
            for _ in range(200):
                if consumer.assigned_queues():
                    break
                await asyncio.sleep(0.05)
            if ready is not None:
                ready.set()
            await stop.wait()
        finally:
            await consumer.shutdown()

    async def close(self) -> None:
        await self.producer.shutdown()


APACHE_NAMESRV_PORT = 29876
APACHE_BROKER_PORT = 29911
JAVA_PROJECT = ROOT / "tests" / "compat" / "java"
# 1 GiB heap, G1, and the options a 4.x broker needs on Java 9+ (tests/compat/apache_support.py says why).
sys.path.insert(0, str(ROOT / "tests" / "compat"))
from apache_support import BENCH_JVM_OPTIONS as APACHE_JVM  # noqa: E402


class ApacheRocketmqServer(RocketqServer):
    """Apache RocketMQ's NameServer and broker (ASYNC_FLUSH, its default) from the Maven jars; the temporary
    directory handling is RocketqServer's."""

    name = "apache-rocketmq"
    port = APACHE_NAMESRV_PORT

    @property
    def durability(self) -> str:  # type: ignore[override]
        return "SEND_OK after the write to the mapped commit log (page cache), flushed every 500 ms"

    def launch(self) -> None:
        classpath = JAVA_PROJECT / "target" / "classpath.txt"
        if not classpath.is_file():
            raise RuntimeError("Apache's jars are not resolved: run `make java` (Maven, tests/compat/java)")
        d = self.fresh_dir()
        (d / "conf").mkdir()
        logback = (JAVA_PROJECT / "home" / "conf" / "logback_tools.xml").read_text(encoding="utf-8")
        for role in ("namesrv", "broker"):
            (d / "conf" / f"logback_{role}.xml").write_text(logback, encoding="utf-8")
        (d / "namesrv.conf").write_text(f"listenPort={APACHE_NAMESRV_PORT}\n", encoding="utf-8")
        (d / "broker.conf").write_text(
            f"brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=0\nbrokerIP1=127.0.0.1\n"
            f"listenPort={APACHE_BROKER_PORT}\nnamesrvAddr=127.0.0.1:{APACHE_NAMESRV_PORT}\n"
            f"storePathRootDir={d / 'store'}\nstorePathCommitLog={d / 'store' / 'commitlog'}\nflushDiskType=ASYNC_FLUSH\n",
            encoding="utf-8",
        )
        java = shutil.which("java") or "java"
        base = [java, *APACHE_JVM, "-cp", classpath.read_text(encoding="utf-8").strip(), f"-Duser.home={d}",
                f"-Drocketmq.home.dir={d}"]  # fmt: skip
        ns = self.spawn(
            [*base, "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", str(d / "namesrv.conf")],
            log="namesrv.log",
        )
        servers.wait_port(APACHE_NAMESRV_PORT, 60, ns)
        broker = self.spawn(
            [*base, "org.apache.rocketmq.broker.BrokerStartup", "-c", str(d / "broker.conf")],
            log="broker.log",
        )
        servers.wait_port(APACHE_BROKER_PORT, 90, broker)

    def version(self) -> str:
        return "Apache RocketMQ 4.9.7 (NameServer + broker jars, OpenJDK 17, -Xmx1g G1)"


class ApacheRocketmqAdapter(RocketqAdapter):
    """Our SDK (rocketq.client, JSON headers) against Apache's broker."""

    name = "apache-rocketmq"

    @property
    def namesrv(self) -> str:
        return f"{self.host}:{self.port or APACHE_NAMESRV_PORT}"

    async def connect(self) -> None:
        self.opts = {
            **self.opts,
            "header_codec": "json",
        }  # Apache's broker reads JSON (or ROCKETMQ) headers only
        await super().connect()


class RocketqMetricsServer(RocketqServer):
    """The same broker with its Prometheus exporter on (`--peer rocketq --peer rocketq-metrics` in one run
    measures what metrics cost per message, docs/observability.md); nothing scrapes it during the run."""

    name = "rocketq-metrics"
    extra_broker_args = ("--metricsExporterType", "PROM", "--metricsPromExporterPort", str(METRICS_PORT))


class RocketqMetricsAdapter(RocketqAdapter):
    name = "rocketq-metrics"


ACL_USER = {"access_key": "peersBenchUser", "secret_key": "peersBenchUserSecret"}
ACL_ADMIN = {"access_key": "peersBenchAdmin", "secret_key": "peersBenchAdminSecret"}


class RocketqAclServer(RocketqServer):
    """The same broker with ACL on: a plain_acl.yml with an admin account (topic and group creation)
    and a PUB|SUB one (the sends and the consumer), in the run's directory."""

    name = "rocketq-acl"

    def fresh_dir(self) -> Path:
        d = super().fresh_dir()
        acl = d / "conf" / "plain_acl.yml"
        acl.parent.mkdir()
        acl.write_text(
            f"accounts:\n"
            f"  - accessKey: {ACL_ADMIN['access_key']}\n    secretKey: {ACL_ADMIN['secret_key']}\n    admin: true\n"
            f"  - accessKey: {ACL_USER['access_key']}\n    secretKey: {ACL_USER['secret_key']}\n"
            f"    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: PUB|SUB\n",
            encoding="utf-8",
        )
        self.extra_broker_args = ("--aclEnable", "true", "--aclFilePath", str(acl))
        return d


class RocketqAclAdapter(RocketqAdapter):
    name = "rocketq-acl"
    credentials = ACL_USER
    admin_credentials = ACL_ADMIN


ADAPTERS = {
    "rocketq": (RocketqAdapter, {}),
    "rocketq-metrics": (RocketqMetricsAdapter, {}),
    "rocketq-acl": (RocketqAclAdapter, {}),
    "apache-rocketmq": (ApacheRocketmqAdapter, {}),
}
SERVERS = {
    "rocketq": RocketqServer,
    "rocketq-metrics": RocketqMetricsServer,
    "rocketq-acl": RocketqAclServer,
    "apache-rocketmq": ApacheRocketmqServer,
}
