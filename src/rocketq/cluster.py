"""LocalCluster: real `rocketq namesrv` / `rocketq broker` daemons as subprocesses.

Shipped, because `rocketq cluster up` (rocketq.launcher) runs a cluster with it; the test harness
(rocketq.testing.cluster re-exports it) and the benches start theirs the same way.

Follows nats.py's nats-server launcher: each daemon starts with port 0 and its own temporary
directory; the harness reads its stdout until the one `READY <role> <host>:<port>` line (with a
deadline), and fails with the daemon's exit code and stderr tail when it exits or hangs instead.
stderr goes to a file per daemon (never a pipe that could fill and block it); `log_text()` reads it.
Stopping is SIGTERM, then SIGKILL after a bound. Only processes started here are ever signalled,
and only by their own pid.

A thread per daemon drains stdout so that the harness works under any event loop (asyncio, uvloop)
and leaves no transports behind; the async methods poll process state with short sleeps bounded by
deadlines. On Linux each daemon receives SIGTERM when the thread that started it ends (the kernel's
parent-death signal), so start clusters from a thread that lives as long as they should: the main
thread, or the loop thread that owns them.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from rocketq.common.errors import RocketQError

READY_LINE = re.compile(r"^READY (?P<role>\w+) (?P<host>\S+):(?P<port>\d+)\s*$")
DEFAULT_READY_TIMEOUT_S = 30.0
DEFAULT_STOP_TIMEOUT_S = 15.0
_POLL_S = 0.02

Overrides = Mapping[str, Any]

# Runs first in the child, then execs the daemon in the same process (same pid): on Linux it asks the
# kernel for SIGTERM when the harness dies, so a harness killed hard (pytest-timeout's thread method,
# a CI runner's kill -9) leaves no orphaned daemons behind. Elsewhere it only execs.
_PARENT_DEATH_WRAPPER = (
    "import os, signal, sys\n"
    "try:\n"
    "    import ctypes\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG\n"
    "except Exception:\n"
    "    pass\n"
    "if os.getppid() == int(sys.argv[1]):\n"
    "    os.execv(sys.argv[2], sys.argv[2:])\n"
)


class DaemonStartError(RocketQError):
    """A daemon exited or stayed silent instead of printing its READY line."""


def _norm(key: str) -> str:
    return key.lstrip("-").replace("-", "").replace("_", "").lower()


def _cli_value(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def _options(defaults: Mapping[str, Any], overrides: Overrides | None) -> list[str]:
    """`--key value` pairs: the defaults, each replaced by an override spelling the same key.

    The key `c` (or `configFile`) becomes the daemons' `-c FILE` option, placed first.
    """
    merged: dict[str, tuple[str, Any]] = {_norm(k): (k, v) for k, v in defaults.items()}
    for key, value in (overrides or {}).items():
        merged[_norm(key)] = (key, value)
    argv: list[str] = []
    config_file = merged.pop(_norm("c"), None) or merged.pop(_norm("configFile"), None)
    if config_file is not None and config_file[1] is not None:
        argv += ["-c", str(config_file[1])]  # the daemons' own option for a config file
    for key, value in merged.values():
        if value is None:
            continue
        argv += [f"--{key.lstrip('-')}", _cli_value(value)]
    return argv


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


class DaemonProcess:
    """One daemon subprocess: start and wait for READY, stop, kill, pause, restart, logs."""

    def __init__(
        self,
        role: str,
        name: str,
        work_dir: Path,
        options: Mapping[str, Any],
        overrides: Overrides | None = None,
        *,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
    ) -> None:
        self.role = role
        self.name = name
        self.work_dir = work_dir
        self.overrides: dict[str, Any] = dict(overrides or {})
        self._options = dict(options)
        self._python = python
        self._env = dict(env) if env is not None else None
        self.ready_timeout_s = ready_timeout_s
        self.stderr_path = work_dir / f"{role}.stderr.log"
        self.host = "127.0.0.1"
        self.port = 0
        self.returncode: int | None = None
        self.paused = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdout_lines: list[str] = []
        self._ready = threading.Event()
        self._eof = threading.Event()
        self._reader: threading.Thread | None = None

    # -- identity -------------------------------------------------------------------------------
    @property
    def addr(self) -> str:
        """`host:port` from the READY line."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError(f"{self.role} {self.name} was never started")
        return self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def argv(self) -> list[str]:
        return [self._python, "-m", "rocketq", self.role, *_options(self._options, self.overrides)]

    def __repr__(self) -> str:
        return f"<{self.role} {self.name} {self.addr} pid={self._proc.pid if self._proc else None}>"

    # -- start ----------------------------------------------------------------------------------
    async def start(self) -> Self:
        """Spawn the daemon and wait for its READY line; DaemonStartError with its stderr tail if not."""
        if self.running:
            raise RuntimeError(f"{self.role} {self.name} is already running")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._spawn()
        deadline = time.monotonic() + self.ready_timeout_s
        while not self._ready.is_set():
            if self._eof.is_set() or (self._proc is not None and self._proc.poll() is not None):
                await self._reap(deadline=time.monotonic() + 2.0)
                raise self._start_error("exited before it was ready")
            if time.monotonic() >= deadline:
                await self.stop(timeout_s=5.0)
                raise self._start_error(f"printed no READY line within {self.ready_timeout_s:.0f}s")
            await asyncio.sleep(_POLL_S)
        return self

    def _spawn(self) -> None:
        env = dict(os.environ if self._env is None else self._env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.pop("NAMESRV_ADDR", None)  # the harness always names the NameServers explicitly
        self._ready.clear()
        self._eof.clear()
        self.returncode = None
        self.paused = False
        with open(self.stderr_path, "ab") as stderr:
            stderr.write(f"---- {' '.join(self.argv())}\n".encode())
            stderr.flush()
            self._proc = subprocess.Popen(
                [self._python, "-S", "-c", _PARENT_DEATH_WRAPPER, str(os.getpid()), *self.argv()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=self.work_dir,
                env=env,
                start_new_session=True,  # a Ctrl-C in the terminal reaches the harness, not the daemons
            )
        self._reader = threading.Thread(
            target=self._read_stdout, args=(self._proc,), name=f"stdout-{self.name}", daemon=True
        )
        self._reader.start()

    def _read_stdout(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        with proc.stdout:
            for raw in proc.stdout:
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                self._stdout_lines.append(line)
                match = READY_LINE.match(line)
                if match and not self._ready.is_set() and match.group("role") == self.role:
                    self.host = match.group("host").strip("[]")
                    self.port = int(match.group("port"))
                    self._ready.set()
        self._eof.set()

    def _start_error(self, what: str) -> DaemonStartError:
        code = self._proc.poll() if self._proc is not None else None
        return DaemonStartError(
            f"{self.role} {self.name} {what} (exit code {code}); command: {' '.join(self.argv())}\n"
            f"---- stderr tail ({self.stderr_path}):\n{_tail(self.log_text(), 40)}"
        )

    # -- stop -----------------------------------------------------------------------------------
    async def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> int | None:
        """SIGTERM, then SIGKILL if it has not exited within `timeout_s`; returns the exit code."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            if self.paused:
                self.resume()
            self._signal(signal.SIGTERM)
            if await self._wait_exit(timeout_s) is None:
                self._signal(signal.SIGKILL)
        return await self._reap(deadline=time.monotonic() + 10.0)

    def kill(self) -> None:
        """SIGKILL now (a crash); `await wait_exit()` or `stop()` reaps it."""
        self._signal(signal.SIGKILL)
        self.paused = False

    def terminate(self) -> None:
        """SIGTERM now, without waiting."""
        self._signal(signal.SIGTERM)

    def pause(self) -> None:
        """SIGSTOP: the daemon stays connected but answers nothing."""
        self._signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self._signal(signal.SIGCONT)
        self.paused = False

    def _signal(self, sig: signal.Signals) -> None:
        if self._proc is not None and self._proc.poll() is None:
            try:
                os.kill(self._proc.pid, sig)
            except ProcessLookupError:
                pass

    async def wait_exit(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> int | None:
        """The exit code once the process has exited, or None after `timeout_s`."""
        code = await self._wait_exit(timeout_s)
        if code is not None:
            await self._reap(deadline=time.monotonic() + 2.0)
        return code

    async def _wait_exit(self, timeout_s: float) -> int | None:
        if self._proc is None:
            return None
        deadline = time.monotonic() + timeout_s
        while (code := self._proc.poll()) is None:
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(_POLL_S)
        return code

    async def _reap(self, deadline: float) -> int | None:
        """Collect the exit code and let the stdout reader finish (bounded)."""
        if self._proc is None:
            return None
        code = await self._wait_exit(max(0.0, deadline - time.monotonic()))
        if code is None:
            self._signal(signal.SIGKILL)
            code = await self._wait_exit(5.0)
        while self._reader is not None and self._reader.is_alive():
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(_POLL_S)
        self.returncode = code
        return code

    async def restart(self, *, same_port: bool = True) -> Self:
        """Stop (SIGTERM) if running, then start again on the same directories and, if possible, port."""
        await self.stop()
        old_port = self.port
        if same_port and old_port:
            self.overrides = {k: v for k, v in self.overrides.items() if _norm(k) != "listenport"}
            self._options["listen-port"] = old_port
            try:
                return await self.start()
            except DaemonStartError:
                self._options["listen-port"] = 0  # the port went to someone else: take any
        return await self.start()

    # -- output ---------------------------------------------------------------------------------
    def log_text(self) -> str:
        """Everything the daemon wrote to stderr (its log lines), across restarts."""
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def stdout_text(self) -> str:
        return "\n".join(self._stdout_lines)

    def log_tail(self, lines: int = 60) -> str:
        return _tail(self.log_text(), lines)


class NamesrvProcess(DaemonProcess):
    """A `rocketq namesrv` subprocess with its KV config and logs under `work_dir`."""

    def __init__(self, name: str, work_dir: Path, overrides: Overrides | None = None, **kw: Any) -> None:
        options = {
            "listen-port": 0,
            "kvConfigPath": str(work_dir / "kvConfig.json"),
            "logDir": str(work_dir / "logs"),
        }
        super().__init__("namesrv", name, work_dir, options, overrides, **kw)


TEST_COMMIT_LOG_FILE_BYTES = 16 * 1024 * 1024


class BrokerProcess(DaemonProcess):
    """A `rocketq broker` subprocess with its store (and logs) under `store_dir`."""

    def __init__(
        self, name: str, work_dir: Path, namesrv_addr: str, overrides: Overrides | None = None, **kw: Any
    ) -> None:
        self.store_dir = work_dir / "store"
        options = {
            "listen-port": 0,
            "namesrv-addr": namesrv_addr or None,  # none: the broker runs without NameServers
            "broker-name": name,
            "store-path-root-dir": str(self.store_dir),
            # Test stores are small: a 1 GiB commit-log file costs seconds to create and to flush.
            "mappedFileSizeCommitLog": TEST_COMMIT_LOG_FILE_BYTES,
            # Slaves' port: any free one (not listenPort + 1, which a restart on the same port may find taken).
            "haListenPort": 0,
        }
        super().__init__("broker", name, work_dir, options, overrides, **kw)


def _broker_name(index: int, overrides: Overrides) -> str:
    for key, value in overrides.items():
        if _norm(key) == "brokername":
            return str(value)
    return f"broker-{chr(ord('a') + index)}" if index < 26 else f"broker-{index}"


def _per_index(spec: Overrides | Sequence[Overrides] | None, index: int) -> dict[str, Any]:
    if spec is None:
        return {}
    if isinstance(spec, Mapping):
        return dict(spec)
    return dict(spec[index]) if index < len(spec) else {}


class LocalCluster:
    """NameServers and brokers as subprocesses under `tmp_dir`; an async context manager.

    Args:
        tmp_dir: root of every daemon's directory (one sub-directory per daemon).
        namesrv_count / broker_count: how many to start.
        broker_overrides / namesrv_overrides: `--KEY VALUE` options, one dict for all or a list with
            one dict per daemon (a `brokerName` override names that broker; default broker-a, -b ...).
        ready_timeout_s: bound on each daemon's start-up.
    """

    def __init__(
        self,
        tmp_dir: str | os.PathLike[str],
        namesrv_count: int = 1,
        broker_count: int = 1,
        broker_overrides: Overrides | Sequence[Overrides] | None = None,
        namesrv_overrides: Overrides | Sequence[Overrides] | None = None,
        *,
        ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.tmp_dir = Path(tmp_dir)
        self.namesrv_count = namesrv_count
        self.broker_count = broker_count
        self._broker_overrides = broker_overrides
        self._namesrv_overrides = namesrv_overrides
        self._daemon_kw: dict[str, Any] = {"ready_timeout_s": ready_timeout_s, "python": python, "env": env}
        self.namesrvs: list[NamesrvProcess] = []
        self.brokers: list[BrokerProcess] = []

    @property
    def namesrv_addr(self) -> str:
        """`host:port;host:port` of every NameServer, as brokers and clients take it."""
        return ";".join(n.addr for n in self.namesrvs)

    @property
    def daemons(self) -> list[DaemonProcess]:
        return [*self.namesrvs, *self.brokers]

    async def start(self) -> Self:
        try:
            await asyncio.gather(
                *(self.add_namesrv(_per_index(self._namesrv_overrides, i)) for i in range(self.namesrv_count))
            )
            await asyncio.gather(
                *(
                    self.add_broker(overrides=_per_index(self._broker_overrides, i))
                    for i in range(self.broker_count)
                )
            )
        except BaseException:
            await self.close()
            raise
        return self

    async def add_namesrv(self, overrides: Overrides | None = None) -> NamesrvProcess:
        """Start one more NameServer (brokers already running do not learn about it)."""
        index = len(self.namesrvs)
        namesrv = NamesrvProcess(
            f"namesrv-{index}", self.tmp_dir / f"namesrv-{index}", overrides, **self._daemon_kw
        )
        self.namesrvs.append(namesrv)
        return await namesrv.start()

    async def add_broker(self, name: str | None = None, overrides: Overrides | None = None) -> BrokerProcess:
        """Start one more broker registered with every NameServer of the cluster."""
        index = len(self.brokers)
        overrides = dict(overrides or {})
        name = name or _broker_name(index, overrides)
        broker = BrokerProcess(
            name, self.tmp_dir / f"broker-{index:02d}-{name}", self.namesrv_addr, overrides, **self._daemon_kw
        )
        self.brokers.append(broker)
        return await broker.start()

    async def close(self) -> None:
        """Stop brokers first (so they unregister), then NameServers; every daemon is reaped."""
        await asyncio.gather(*(b.stop() for b in self.brokers), return_exceptions=True)
        await asyncio.gather(*(n.stop() for n in self.namesrvs), return_exceptions=True)

    def log_tails(self, lines: int = 60) -> str:
        """Each daemon's last log lines, headed by its role, name, address and exit code."""
        parts = []
        for daemon in self.daemons:
            header = f"==== {daemon.role} {daemon.name} {daemon.addr} exit={daemon.returncode} ({daemon.stderr_path})"
            parts.append(f"{header}\n{daemon.log_tail(lines)}")
        return "\n".join(parts)

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
