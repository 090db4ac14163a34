"""The in-process benchmarks stand on the package alone: they import no test module and put no tests
folder on sys.path, so they measure what ships and keep working when the tests' helpers change."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


# The in-process ones; apache_benchmark.py and peers_plugin.py drive the cross-SDK harness in tests/compat.
@pytest.mark.parametrize("script", ["send_path.py", "record.py", "consume_cpu.py", "store.py", "remoting.py"])
def test_a_benchmark_imports_nothing_from_the_tests(script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # whatever the script inserts is undone afterwards
    path_before = list(sys.path)
    modules_before = set(sys.modules)
    spec = importlib.util.spec_from_file_location(f"bench_{script[:-3]}", ROOT / "bench" / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # as an import does (dataclasses look it up)
    spec.loader.exec_module(module)
    assert [p for p in sys.path if p not in path_before] == []
    new = set(sys.modules) - modules_before - {spec.name}
    loaded = {name: getattr(sys.modules[name], "__file__", None) for name in new}
    assert [name for name, file in loaded.items() if file and Path(file).is_relative_to(TESTS)] == []
