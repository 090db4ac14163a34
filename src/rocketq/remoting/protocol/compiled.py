"""The compiled header accelerator (_cheader, built from _cheader.pyx), loaded once for every module
that uses it: the msgpack header codec, typed header decoders, and the constructors of the value objects
a hot path builds per message (`constructor`).

None when it was not built or ROCKETQ_NO_EXTENSIONS is set (rocketq.common.record.accel.load_extension):
every user then takes its pure-Python path, which gives the same results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rocketq.common.record.accel import load_extension

T = TypeVar("T")

CHEADER_API_VERSION = 5  # _cheader.pyx's API_VERSION, raised when its functions change
cheader: Any = load_extension("rocketq.remoting.protocol._cheader", CHEADER_API_VERSION)


def constructor(cls: type[T]) -> Callable[..., T]:
    """`cls`, or, with the accelerator, its compiled builder (_cheader.SlotBuilder): the same instance
    from the value of every field, positionally in field order, without the dataclass's generated Python
    `__init__` (about 0.5 us for a RemotingCommand's ten fields). Callers pass every field; a class the
    builder cannot make exactly (custom __new__, __post_init__, default factories, no slots) is
    returned as it is."""
    builder = None if cheader is None else cheader.slot_builder(cls)
    return cls if builder is None else builder
