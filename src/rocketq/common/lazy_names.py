"""A package's public names imported on first use (PEP 562 module __getattr__).

A package whose __init__ re-exports names from its modules would otherwise import all of them with
itself; with this, `from package import Name` imports Name's module alone, so a process that needs one
part (a Spark reader's Python worker only pulls) does not pay for the rest.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The __getattr__ for `package` whose names live in the modules `where` maps them to; each name is
    kept in the package once imported (later reads are plain attribute reads)."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
