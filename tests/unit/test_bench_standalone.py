"""The in-process benchmarks stand on the package alone: they import no test module and put no tests
folder on sys.path, so they measure what ships and keep working when the tests' helpers change."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
BENCH = ROOT / "bench"
OPTIONAL = {"pyspark", "pyarrow", "matplotlib"}
# Every script but the two that drive the cross-SDK harness and the Apache tools in tests/compat.
SCRIPTS = sorted(
    p.name for p in BENCH.glob("*.py") if p.name not in {"apache_benchmark.py", "peers_plugin.py"}
)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_benchmark_imports_nothing_from_the_tests(script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # bench/ itself is on the path, as when a script runs (their shared helpers live there); whatever
    # a script inserts is undone afterwards
    monkeypatch.setattr(sys, "path", [str(BENCH), *sys.path])
    path_before = list(sys.path)
    modules_before = set(sys.modules)
    spec = importlib.util.spec_from_file_location(f"bench_{script[:-3]}", ROOT / "bench" / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # as an import does (dataclasses look it up)
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:  # an optional extra (Spark) that this venv does not have
        if (exc.name or "").split(".")[0] in OPTIONAL:
            pytest.skip(f"{script} needs {exc.name}")
        raise
    assert [p for p in sys.path if p not in path_before] == []
    new = set(sys.modules) - modules_before - {spec.name}
    loaded = {name: getattr(sys.modules[name], "__file__", None) for name in new}
    assert [name for name, file in loaded.items() if file and Path(file).is_relative_to(TESTS)] == []
