"""Apache RocketMQ's own Java client and mqadmin, driven from pytest (tests/compat/test_java_*.py).

The Maven project in java/ pins the Apache artifacts (rocketmq-client, -acl, -tools 4.9.8) and builds one small
program, rocketq.compat.Driver: a JVM that reads JSON commands on stdin and answers JSON lines on stdout (see
its Javadoc). One JVM serves every test of a module (a JVM start costs seconds); each command names the
NameServer of its test's cluster, and each Java client gets its own instanceName, so nothing leaks between
tests. Its stderr (the Java client's warnings, mqadmin's errors) goes to a file shown when a test fails.

`make test` builds it (`make java`): `mvn package` with the local repository java/.m2 (kept between runs, not
committed), which writes java/target/classpath.txt. Without java or mvn, or before that build, the tests skip and
say why; under CI (.ci/run sets ROCKETQ_REQUIRE_JAVA) they fail instead, since CI installs both.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.testing.waiting import WaitTimeoutError, wait_for

JAVA_DIR = Path(__file__).parent / "java"
CLASSES = JAVA_DIR / "target" / "classes"
CLASSPATH_FILE = JAVA_DIR / "target" / "classpath.txt"
JAVA = shutil.which("java")
# Small heap, client JIT only: the driver is a client, and the machine is shared.
JVM_OPTIONS = ["-Xmx256m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def missing(classpath_file: Path | None = None) -> str | None:
    """Why the Java programs (and the jars `classpath_file` lists, when given) cannot run here, or None."""
    if JAVA is None:
        return "java is not installed (the Java client tests need a JDK >= 8 and Maven: see docs/compat.md)"
    if not CLASSPATH_FILE.is_file() or not (CLASSES / "rocketq" / "compat" / "Driver.class").is_file():
        return "the Java test programs are not built: run `make java` (mvn package in tests/compat/java)"
    if classpath_file is not None and not classpath_file.is_file():
        return f"the jars of {classpath_file.parent.parent.name}/pom.xml are not resolved: run `make java`"
    return None


def skip_or_fail_when_missing(classpath_file: Path | None = None) -> pytest.MarkDecorator | None:
    """A skip mark with the reason when Java is missing; under CI a missing Java is an error, not a skip."""
    reason = missing(classpath_file)
    if reason is None:
        return None
    if os.environ.get("ROCKETQ_REQUIRE_JAVA") or os.environ.get("CI"):
        raise RuntimeError(f"CI must run the Java compatibility tests: {reason}")
    return pytest.mark.skip(reason=reason)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


class JavaError(AssertionError):
    """A command the Java side answered with an exception."""


class JavaDriver:
    """The Driver JVM: commands in, answers and events out (a reader thread collects them), stop by its pid."""

    def __init__(self, log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = log_dir / "java-driver.stderr.log"
        self.events: list[dict[str, Any]] = []
        self.answers: dict[int, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        assert JAVA is not None
        classpath = f"{CLASSES}{os.pathsep}{CLASSPATH_FILE.read_text(encoding='utf-8').strip()}"
        argv = [
            JAVA,
            *JVM_OPTIONS,
            "-cp",
            classpath,
            f"-Drocketmq.client.logRoot={log_dir / 'rocketmqlogs'}",
            "-Drocketmq.client.logLevel=WARN",
            f"-Drocketmq.client.localOffsetStoreDir={log_dir / 'offsets'}",
            f"-Drocketmq.home.dir={JAVA_DIR / 'home'}",
            # Apache's remoting logs through logback: warnings only, to stderr (the same file as mqadmin's)
            f"-Dlogback.configurationFile={JAVA_DIR / 'home' / 'conf' / 'logback_tools.xml'}",
            f"-Duser.home={log_dir}",  # mqadmin's and the client's default log folders
            "rocketq.compat.Driver",
        ]
        with open(self.stderr_path, "wb") as stderr:
            # cwd: mqadmin consumerStatus writes each client's running info under the working directory
            self.proc = subprocess.Popen(
                argv,
                cwd=log_dir,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
            )
        self._reader = threading.Thread(target=self._read, name="java-driver-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for raw in self.proc.stdout:
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if "id" in line and "event" not in line:
                    self.answers[int(line["id"])] = line
                else:
                    line["at"] = round(time.monotonic(), 3)  # when it came (a failing wait shows it)
                    self.events.append(line)

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(e.get("event") == "ready" for e in self.events):
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the Java driver exited with {self.proc.returncode}:\n{self.stderr_tail()}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Java driver did not start within {timeout_s} s:\n{self.stderr_tail()}"
                )
            time.sleep(0.05)

    def submit(self, op: str, **args: Any) -> int:
        ident = next(self._ids)
        line = json.dumps({"id": ident, "op": op, **args}) + "\n"
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        return ident

    async def answer(self, ident: int, timeout_s: float, what: str) -> Any:
        def ready() -> dict[str, Any] | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"the Java driver exited with {self.proc.returncode}")
            return self.answers.get(ident)

        try:
            got = await wait_for(ready, timeout_s=timeout_s, interval_s=0.02, what=f"the Java driver: {what}")
        except WaitTimeoutError as e:
            raise AssertionError(f"{e}\n---- Java driver stderr tail:\n{self.stderr_tail()}") from None
        if not got["ok"]:
            raise JavaError(f"{what}: {got['error']}\n---- Java driver stderr tail:\n{self.stderr_tail()}")
        return got["result"]

    async def call(self, op: str, timeout_s: float = 60.0, **args: Any) -> Any:
        return await self.answer(self.submit(op, **args), timeout_s, op)

    def of(self, kind: str, name: str | None = None) -> list[dict[str, Any]]:
        return [
            e for e in list(self.events) if e.get("event") == kind and (name is None or e.get("name") == name)
        ]

    def messages(self, name: str, outcome: str | None = None) -> list[dict[str, Any]]:
        """The deliveries to push consumer `name` so far (each its "message" dict), in order."""
        return [e["message"] for e in self.of("message", name) if outcome is None or e["outcome"] == outcome]

    async def wait(
        self,
        condition: Callable[[], Any],
        timeout_s: float,
        what: str,
        state: Callable[[], Any] | None = None,
    ) -> Any:
        """Until `condition` holds; on a timeout the error shows `state()` (what there was) and the JVM's log."""
        try:
            return await wait_for(condition, timeout_s=timeout_s, interval_s=0.05, what=what)
        except WaitTimeoutError as e:
            seen = f"\n---- state: {state()!r}" if state is not None else ""
            raise AssertionError(f"{e}{seen}\n---- Java driver stderr tail:\n{self.stderr_tail()}") from None

    async def mqadmin(self, *args: str, timeout_s: float = 60.0) -> str:
        """Apache's mqadmin (MQAdminStartup.main0) with these arguments; its stdout. Its stderr must be empty of
        exceptions: a failing verb prints a stack trace there, which fails the test with it."""
        out = await self.call("mqadmin", timeout_s=timeout_s, args=list(args))
        err = str(out["stderr"])
        assert "Exception" not in err, (
            f"mqadmin {' '.join(args)} failed:\n{err}\n---- stdout:\n{out['stdout']}"
        )
        return str(out["stdout"])

    def stderr_tail(self, lines: int = 60) -> str:
        try:
            text = self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.write(b'{"op": "exit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=20)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        self._reader.join(timeout=5)


def driver_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaDriver]:
    """The body of a module-scoped `java` fixture: one Driver JVM for the module's tests."""
    driver = JavaDriver(tmp_path_factory.mktemp("java-driver"))
    try:
        driver.wait_ready()
        yield driver
    finally:
        driver.close()
