"""setup.py on a machine without a C compiler: the accelerators' build fails, the install goes on.

setup.py's build_ext (OptionalBuildExt) is run on a one-file C extension with the compiler pointing at
a path that does not exist, which fails exactly as a missing gcc does (the spawn finds no program).
The command must end without raising and say that the pure-Python codec is used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import setuptools  # type: ignore[import-untyped,unused-ignore]  # older setuptools ship no types
from setuptools import Distribution, Extension

ROOT = Path(__file__).resolve().parents[2]


def setup_py_keywords(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What setup.py hands to setup(), without running it."""
    captured: dict[str, Any] = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
    source = (ROOT / "setup.py").read_text()
    exec(compile(source, str(ROOT / "setup.py"), "exec"), {"__name__": "__main__"})
    return captured


def test_a_failed_compile_is_a_message_not_a_failed_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    build_ext = setup_py_keywords(monkeypatch)["cmdclass"]["build_ext"]
    (tmp_path / "probe.c").write_text("int probe(void) { return 0; }\n")
    dist = Distribution({"name": "probe", "ext_modules": [Extension("probe", [str(tmp_path / "probe.c")])]})
    cmd = build_ext(dist)
    cmd.build_lib = str(tmp_path / "lib")
    cmd.build_temp = str(tmp_path / "temp")
    cmd.ensure_finalized()
    cmd.run()
    assert "were not built" in capsys.readouterr().err
    assert not list((tmp_path).rglob("probe*.so"))
