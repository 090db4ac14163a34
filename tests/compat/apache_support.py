"""Apache RocketMQ's own NameServer and broker (4.9.7, from the Maven jars of java/pom.xml; or 5.3.3 from
java5/pom.xml, `ApacheCluster(..., classpath_file=CLASSPATH_5_FILE)`) as subprocesses.

The same classes its start scripts run (NamesrvStartup, BrokerStartup -c FILE), with a small heap, the serial
GC, and the options Java 9+ needs for a 4.x broker (--add-opens java.nio / sun.nio.ch and --add-exports
jdk.internal.ref: its mapped files are unmapped through them; Apache's later start scripts add the same). The
store, the logs and user.home are under the test's temporary directory; the broker registers 127.0.0.1:port
(brokerIP1) and every client connects to 127.0.0.1. Ports are picked free (the broker also takes listenPort - 2
for its VIP channel; its HA port is set to another free one). Start-up waits for the daemon's "boot success" line with a
deadline; stop is SIGTERM (its shutdown hook flushes the store and unregisters), then SIGKILL if it hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from java_support import CLASSPATH_FILE, JAVA, JAVA_DIR

from rocketq.client import Admin
from rocketq.testing.ports import free_port, port_is_free
from rocketq.testing.waiting import wait_for

# What a 4.x broker (and the old Netty of a 4.x client) needs on Java 9+.
OPEN_JAVA_BASE = [
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
]  # fmt: skip
JVM_OPTIONS = [
    "-Xms128m",
    "-Xmx256m",
    "-XX:MaxDirectMemorySize=256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    *OPEN_JAVA_BASE,
]
# For benchmarks (bench/peers_plugin.py, bench/apache_benchmark.py): Apache's runbroker.sh sizes the heap at 8 GiB; a
# 1 GiB heap fits a small machine. The --add-opens / --add-exports as above.
BENCH_JVM_OPTIONS = [
    "-server", "-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=1g", "-XX:+UseG1GC", "-XX:-OmitStackTraceInFastThrow",
    *OPEN_JAVA_BASE,
]  # fmt: skip
# Test stores are small (rocketq's cluster harness uses the same commit-log file size).
# Apache's 5.x NameServer and broker (java5/pom.xml: a Maven project of its own, its classpath apart from 4.x's).
CLASSPATH_5_FILE = JAVA_DIR.parent / "java5" / "target" / "classpath.txt"
COMMIT_LOG_FILE_BYTES = 16 * 1024 * 1024
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0


def broker_port() -> int:
    """A port p with p - 2 (the VIP channel) and p + 1 free as well."""
    for _ in range(50):
        port = free_port()
        if port > 1026 and port_is_free(port - 2) and port_is_free(port + 1):
            return port
    raise RuntimeError("no free port with free neighbours for Apache's broker")


class JavaDaemon:
    """One Apache daemon: its output (one log file) read by a thread, stopped by its pid."""

    def __init__(
        self,
        name: str,
        main_class: str,
        config: dict[str, Any],
        work_dir: Path,
        ready: str,
        classpath_file: Path = CLASSPATH_FILE,
        jvm_options: list[str] = JVM_OPTIONS,
    ) -> None:
        self.name = name
        self.work_dir = work_dir
        work_dir.mkdir(parents=True, exist_ok=True)
        (work_dir / "conf").mkdir(exist_ok=True)
        for role in ("namesrv", "broker"):  # what NamesrvStartup / BrokerStartup configure logging from
            (work_dir / "conf" / f"logback_{role}.xml").write_text(
                (JAVA_DIR / "home" / "conf" / "logback_tools.xml").read_text(encoding="utf-8"),
                encoding="utf-8",
            )
        conf = work_dir / f"{name}.conf"
        conf.write_text("".join(f"{k}={v}\n" for k, v in config.items()), encoding="utf-8")
        self.log_path = work_dir / f"{name}.log"
        self.lines: list[str] = []
        self._ready = ready
        assert JAVA is not None
        argv = [
            JAVA, *jvm_options, "-cp", classpath_file.read_text(encoding="utf-8").strip(),
            f"-Duser.home={work_dir}", f"-Drocketmq.home.dir={work_dir}",
            main_class, "-c", str(conf),
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            argv,
            cwd=work_dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, name=f"apache-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout, open(self.log_path, "w", encoding="utf-8") as log:
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", errors="replace").rstrip()
                self.lines.append(line)
                log.write(line + "\n")
                log.flush()

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(self._ready in line for line in list(self.lines)):
            if self.proc.poll() is not None:
                raise RuntimeError(f"Apache's {self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Apache's {self.name} did not start within {timeout_s} s:\n{self.tail()}")
            time.sleep(0.05)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        return int(self.proc.returncode)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.lines[-lines:])


class ApacheCluster:
    """Apache's NameServer and one broker (broker-a of DefaultCluster) on a store under `store_dir`; the jars of
    `classpath_file` (4.9.7 by default, CLASSPATH_5_FILE for 5.x) with `jvm_options`."""

    def __init__(
        self,
        work_dir: Path,
        store_dir: Path,
        classpath_file: Path = CLASSPATH_FILE,
        jvm_options: list[str] = JVM_OPTIONS,
        **broker_config: Any,
    ) -> None:
        self.work_dir = work_dir
        self.classpath_file = classpath_file
        self.jvm_options = jvm_options
        self.store_dir = store_dir
        self.broker_config = broker_config
        self.namesrv: JavaDaemon | None = None
        self.broker: JavaDaemon | None = None
        self.namesrv_port = 0
        self.broker_port = 0

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_addr(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def start(self) -> ApacheCluster:
        self.namesrv_port = free_port()
        self.namesrv = JavaDaemon(
            "namesrv",
            "org.apache.rocketmq.namesrv.NamesrvStartup",
            {"listenPort": self.namesrv_port},
            self.work_dir / "namesrv",
            "The Name Server boot success",
            classpath_file=self.classpath_file,
            jvm_options=self.jvm_options,
        )
        self.namesrv.wait_ready()
        self.start_broker()
        return self

    def start_broker(self) -> None:
        """Start the broker; ports are picked again when another process took one meanwhile (a race no pick
        avoids on a shared machine), up to three times."""
        for attempt in range(3):
            try:
                self._start_broker_once()
                return
            except RuntimeError as exc:
                if "Address already in use" not in str(exc) or attempt == 2:
                    raise

    def _start_broker_once(self) -> None:
        self.broker_port = broker_port()
        config = {
            "brokerClusterName": "DefaultCluster", "brokerName": "broker-a", "brokerId": 0,
            "brokerIP1": "127.0.0.1", "listenPort": self.broker_port, "namesrvAddr": self.namesrv_addr,
            "storePathRootDir": self.store_dir, "storePathCommitLog": self.store_dir / "commitlog",
            "mappedFileSizeCommitLog": COMMIT_LOG_FILE_BYTES, "flushDiskType": "ASYNC_FLUSH",
            "haListenPort": free_port(),
            **self.broker_config,
        }  # fmt: skip
        self.broker = JavaDaemon(
            "broker",
            "org.apache.rocketmq.broker.BrokerStartup",
            config,
            self.work_dir / "broker",
            "boot success",
            classpath_file=self.classpath_file,
            jvm_options=self.jvm_options,
        )
        self.broker.wait_ready()

    def stop_broker(self) -> int:
        assert self.broker is not None
        return self.broker.stop()

    def close(self) -> None:
        for daemon in (self.broker, self.namesrv):
            if daemon is not None:
                daemon.stop()

    def log_tails(self) -> str:
        return "\n".join(
            f"==== Apache {d.name} ({d.log_path})\n{d.tail()}" for d in (self.namesrv, self.broker) if d
        )


@contextlib.asynccontextmanager
async def running(cluster: ApacheCluster) -> AsyncIterator[ApacheCluster]:
    """`cluster` started (in a thread: start-up blocks for seconds) and closed at the end; its daemons' log tails
    printed when start-up or the body fails."""
    try:
        await asyncio.to_thread(cluster.start)
        # A 5.x broker prints "boot success" before its first REGISTER_BROKER is through (4.x registers first).
        async with Admin(namesrv_addr=cluster.namesrv_addr) as admin:

            async def registered() -> bool:
                return bool((await admin.cluster_info()).cluster_addr_table)

            await wait_for(
                registered, timeout_s=START_TIMEOUT_S, what="Apache's broker registered with its NameServer"
            )
        yield cluster
    except BaseException:
        print(cluster.log_tails())
        raise
    finally:
        await asyncio.to_thread(cluster.close)
