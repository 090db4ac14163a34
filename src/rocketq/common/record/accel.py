"""Which implementation of the hot record functions is in use: the compiled one (_crecord, built
from _crecord.pyx when Cython and a C compiler were there at install time) or the pure-Python one.

aiokafka's pattern (aiokafka/record/__init__ and AIOKAFKA_NO_EXTENSIONS): the compiled module is
picked at import time when it imports; ROCKETQ_NO_EXTENSIONS=1 (any value but "", "0") forces pure
Python, for debugging and for the CI run that checks the pure path.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

API_VERSION = 10  # _crecord.pyx's, raised when its functions change
NO_EXTENSIONS = os.environ.get("ROCKETQ_NO_EXTENSIONS", "") not in ("", "0")


def load_extension(name: str, api_version: int) -> ModuleType | None:
    """The compiled module `name` when it was built, is not switched off by ROCKETQ_NO_EXTENSIONS and was
    built from the .pyx whose API_VERSION is `api_version` (an older build in the tree is ignored, so a
    checkout that changed a .pyx but was not rebuilt runs pure Python instead of failing). Every
    accelerator (_crecord, _cheader, _carrow, _csign, _cpull) is loaded through here."""
    if NO_EXTENSIONS:
        return None
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    try:
        built_version = module.API_VERSION
    except AttributeError:  # pragma: no cover - a module built from a foreign .pyx
        return None
    return module if built_version == api_version else None


compiled: ModuleType | None = load_extension("rocketq.common.record._crecord", API_VERSION)


def using_extensions() -> bool:
    """True when the compiled record functions are in use."""
    return compiled is not None
