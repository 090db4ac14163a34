"""Store errors: raised for corruption and misuse, never for an ordinary put or get (those return statuses)."""

from __future__ import annotations

from rocketq.common.errors import RetryClass, RocketQError


class StoreError(RocketQError):
    """The store cannot do what was asked (not opened, already in use by another process)."""

    retry = RetryClass.NEVER


class StoreCorruptError(StoreError):
    """A store file is damaged in a way recovery must not paper over; the message names the file."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class StoreLockedError(StoreError):
    """Another process holds the store directory's lock file."""
