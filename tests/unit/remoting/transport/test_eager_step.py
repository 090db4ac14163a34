"""The guard of rocketq.remoting.transport.eager_step: its reliance on asyncio's future protocol, checked
on the running interpreter and on every other supported Python found on this machine.

Supported: pyproject's requires-python. Interpreters are looked for as python3.N on PATH and under
pyenv's versions (PYENV_ROOT, default ~/.pyenv); ROCKETQ_GUARD_PYTHONS (paths, os.pathsep-separated)
adds more. Each runs eager_step.py alone (it imports only asyncio), so no venv is needed for it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocketq.remoting.transport import eager_step

ROOT = Path(__file__).resolve().parents[4]
MODULE = Path(eager_step.__file__)


def _minimum() -> tuple[int, int]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'requires-python\s*=\s*">=\s*(\d+)\.(\d+)', text)
    assert found, "pyproject.toml has no requires-python >= X.Y"
    return int(found.group(1)), int(found.group(2))


def _candidates() -> list[str]:
    paths = [p for p in os.environ.get("ROCKETQ_GUARD_PYTHONS", "").split(os.pathsep) if p]
    paths += [w for minor in range(_minimum()[1], 20) if (w := shutil.which(f"python3.{minor}"))]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        paths += [str(p) for p in sorted(pyenv.glob("*/bin/python3")) if p.is_file()]
    return paths


def _supported_pythons() -> dict[tuple[int, int], str]:
    """(major, minor) -> one working interpreter of that version, the running one excluded."""
    found: dict[tuple[int, int], str] = {}
    for path in _candidates():
        try:
            out = subprocess.run(
                [path, "-I", "-c", "import sys; print(*sys.version_info[:2])"],
                capture_output=True, text=True, timeout=30, check=True,
            ).stdout.split()  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            continue  # a pyenv shim for a version not selected, a broken link: not an interpreter
        version = (int(out[0]), int(out[1]))
        if version >= _minimum() and version != sys.version_info[:2]:
            found.setdefault(version, path)
    return found


def test_eager_step_matches_the_running_asyncio() -> None:
    eager_step.check_asyncio()


def test_eager_step_matches_every_other_supported_python() -> None:
    pythons = _supported_pythons()
    if not pythons:
        pytest.skip(f"no supported Python but the running {sys.version.split()[0]} on this machine")
    failures = []
    for version, path in sorted(pythons.items()):
        run = subprocess.run([path, "-I", str(MODULE)], capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            failures.append(
                f"Python {version[0]}.{version[1]} ({path}): {run.stderr.strip() or run.stdout.strip()}"
            )
    assert not failures, "eager_step no longer matches asyncio:\n" + "\n".join(failures)


def test_the_guard_fails_loudly_when_the_flag_is_not_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eager_step, "release", lambda awaiting: None)  # as if asyncio's protocol changed
    with pytest.raises(
        eager_step.EagerStepUnsupported, match=r"eager_step no longer matches asyncio on Python"
    ):
        eager_step.check_asyncio()
