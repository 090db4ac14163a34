"""rocketq.namesrv: the NameServer (route registry, broker liveness, its processors and daemon)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocketq.namesrv.controller import NamesrvController

__all__ = ["NamesrvController"]


def __getattr__(name: str) -> Any:
    # Lazy, so that importing the pure parts (route tables, config) does not load the transport.
    if name == "NamesrvController":
        from rocketq.namesrv.controller import NamesrvController

        return NamesrvController
    raise AttributeError(name)
