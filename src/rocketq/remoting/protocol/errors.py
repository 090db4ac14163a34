"""Errors of the sans-IO protocol layer. The frame decoder raises FrameError and nothing else."""

from __future__ import annotations

from rocketq.common.errors import BodyDecodeError as BodyDecodeError  # it moved with fastjson
from rocketq.common.errors import RetryClass, RocketQError


class FrameError(RocketQError):
    """A frame that cannot be decoded: the connection it came from must be closed."""

    retry = RetryClass.NEVER


class HeaderDecodeError(FrameError):
    """The header bytes of a frame do not decode with its serialize type's codec."""


class MissingHeaderFieldError(RocketQError):
    """A typed header lacks a required (@CFNotNull) field; the server answers SYSTEM_ERROR naming it."""

    retry = RetryClass.NEVER

    def __init__(self, header: str, field: str) -> None:
        super().__init__(f"the request header {header} misses the required field '{field}'")
        self.header = header
        self.field = field


class BadHeaderValueError(RocketQError):
    """A typed header field has a value of the wrong type (e.g. 'abc' for an int)."""

    retry = RetryClass.NEVER

    def __init__(self, header: str, field: str, value: str, expected: str) -> None:
        super().__init__(f"the request header {header} field '{field}' is not {expected}: {value!r}")
        self.header = header
        self.field = field
