"""One lifecycle: every long-lived object keeps its state as a rocketq.common.service.ServiceState.

A state kept as a plain string ("created", "open", "running", "closed" in the store, "STOPPING" in the
consumers) had two vocabularies and no checker: a typo compared false silently. This scans src/rocketq
for what the enum replaced: a ServiceState name written as a string anywhere but the enum itself, and a
lifecycle word compared with, or assigned to, an attribute or variable whose name ends in "state"; and a
boolean lifecycle flag (`self._started = True`, `self.running = False`) outside the few that are file,
connection or thread state rather than a service's lifecycle.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketq.common.service import ServiceState

SRC = Path(__file__).resolve().parents[3] / "src" / "rocketq"
ENUM_MODULE = "common/service.py"
STATE_NAMES = {state.value for state in ServiceState}
LIFECYCLE_WORDS = STATE_NAMES | {
    "created", "open", "opened", "starting", "started", "running", "stopping", "stopped", "closing",
    "closed", "shutdown", "failed",
}  # fmt: skip
FLAG_WORDS = {
    "started", "closed", "running", "stopped", "stopping", "closing", "shutdown", "shut_down", "shutting_down",
}  # fmt: skip
# Boolean flags that stay: not the lifecycle of a long-lived object but the state of one file, one
# connection or one thread. A flag added anywhere else is a lifecycle the enum should carry.
FLAG_ALLOWED = {
    ("store/mapped_file.py", "_closed"),  # one memory-mapped file, closed once (MappedFile#shutdown)
    ("store/flush.py", "_stopping"),  # read by the flush thread itself, across threads
    ("remoting/transport/connection.py", "_closing"),  # one TCP connection (Netty Channel state)
    ("store/ha/master.py", "_closed"),  # one slave's HA connection (HAConnection)
}


def _flag_findings(path: Path, root: Path = SRC) -> list[str]:
    """`self.<lifecycle word> = True/False` (leading underscores ignored) not in FLAG_ALLOWED."""
    rel = path.relative_to(root).as_posix()
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, bool)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and target.attr.lstrip("_") in FLAG_WORDS
                and (rel, target.attr) not in FLAG_ALLOWED
            ):
                found.append(f"{rel}:{node.lineno}: a boolean lifecycle flag self.{target.attr}")
    return found


def _strings(node: ast.AST) -> list[str]:
    """The string constants `node` is, or holds as a tuple/list/set of constants."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for element in node.elts for s in _strings(element)]
    return []


def _is_state(node: ast.AST) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name.lower().endswith("state")


def _findings(path: Path, root: Path = SRC) -> list[str]:
    rel = path.relative_to(root).as_posix()
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if rel != ENUM_MODULE and isinstance(node, ast.Constant) and node.value in STATE_NAMES:
            found.append(f"{rel}:{node.lineno}: the state name {node.value!r} as a string")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_state(side) for side in sides):
                words = [s for side in sides for s in _strings(side) if s in LIFECYCLE_WORDS]
                found += [f"{rel}:{node.lineno}: a state compared with {word!r}" for word in words]
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_is_state(target) for target in targets):
                words = [s for s in _strings(node.value) if s in LIFECYCLE_WORDS]
                found += [f"{rel}:{node.lineno}: a state set to {word!r}" for word in words]
    return found


@pytest.mark.parametrize("scan", [_findings, _flag_findings], ids=["strings", "boolean-flags"])
def test_no_lifecycle_state_is_a_string_or_a_boolean_flag(scan: Callable[[Path], list[str]]) -> None:
    found = [line for path in sorted(SRC.rglob("*.py")) for line in scan(path)]
    assert not found, "use rocketq.common.service.ServiceState:\n" + "\n".join(found)


def test_the_scan_finds_what_it_looks_for(tmp_path: Path) -> None:
    # The scanner itself: each form it must catch, and what it must leave alone.
    source = (
        'self._state = "closed"\n'
        'if self._state not in ("open", "running"): pass\n'
        'x = "RUNNING"\n'
        'reason = "closed"\n'
        "self.state = ServiceState.RUNNING\n"
    )
    (tmp_path / "mod.py").write_text(source)
    found = _findings(tmp_path / "mod.py", tmp_path)
    assert found == [
        "mod.py:1: a state set to 'closed'",
        "mod.py:2: a state compared with 'open'",
        "mod.py:2: a state compared with 'running'",
        "mod.py:3: the state name 'RUNNING' as a string",
    ]


def test_the_flag_scan_finds_what_it_looks_for(tmp_path: Path) -> None:
    source = (
        "self._started = False\n"
        "self.running: bool = True\n"
        "self._closed = asyncio.Event()\n"
        "self.running = 0\n"
        "started = True\n"
        "self._state = ServiceState.RUNNING\n"
    )
    (tmp_path / "mod.py").write_text(source)
    assert _flag_findings(tmp_path / "mod.py", tmp_path) == [
        "mod.py:1: a boolean lifecycle flag self._started",
        "mod.py:2: a boolean lifecycle flag self.running",
    ]
