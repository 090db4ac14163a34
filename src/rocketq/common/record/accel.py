"""Which implementation of the hot record functions is in use: the compiled one (_crecord, built
from _crecord.pyx when Cython and a C compiler were there at install time) or the pure-Python one.

aiokafka's pattern (aiokafka/record/__init__ and AIOKAFKA_NO_EXTENSIONS): the compiled module is
picked at import time when it imports; ROCKETQ_NO_EXTENSIONS=1 (any value but "", "0") forces pure
Python, for debugging and for the CI run that checks the pure path.
"""

from __future__ import annotations

import os
from types import ModuleType

API_VERSION = 6  # _crecord.pyx's, raised when its functions change
NO_EXTENSIONS = os.environ.get("ROCKETQ_NO_EXTENSIONS", "") not in ("", "0")


def _load() -> ModuleType | None:
    if NO_EXTENSIONS:
        return None
    try:
        from rocketq.common.record import _crecord  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_crecord, "API_VERSION", None) != API_VERSION:  # built from an older _crecord.pyx
        return None
    return _crecord  # type: ignore[no-any-return]


compiled: ModuleType | None = _load()


def using_extensions() -> bool:
    """True when the compiled record functions are in use."""
    return compiled is not None
