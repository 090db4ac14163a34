"""The sans-IO rule: nothing under remoting/protocol imports asyncio, socket, selectors or uvloop."""

from __future__ import annotations

import ast
from pathlib import Path

import rocketq.remoting.protocol as protocol_pkg

FORBIDDEN = {"asyncio", "socket", "selectors", "uvloop", "ssl"}
FORBIDDEN_PREFIXES = ("rocketq.remoting.transport",)


def _imported_modules(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names.add(arg.value)
    return names


def test_protocol_package_is_sans_io() -> None:
    root = Path(protocol_pkg.__file__).parent
    files = sorted(root.rglob("*.py"))
    assert len(files) >= 20
    offenders = []
    for path in files:
        for module in _imported_modules(ast.parse(path.read_text(), filename=str(path))):
            top = module.split(".")[0]
            if top in FORBIDDEN or module.startswith(FORBIDDEN_PREFIXES):
                offenders.append(f"{path.relative_to(root)} imports {module}")
    assert offenders == []


def test_the_checker_sees_imports() -> None:
    tree = ast.parse(
        "import asyncio.events\nfrom socket import socket\n__import__('uvloop')\nfrom . import x\n"
    )
    assert _imported_modules(tree) == {"asyncio.events", "socket", "uvloop"}
