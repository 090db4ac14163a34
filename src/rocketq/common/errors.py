"""The root of rocketq's typed errors and the retry class every error carries.

Retry decisions read `err.retry`, never the message text (aiokafka's `retriable`, rocketmq-rust's
`RetryClass`). Local misuse (ClientError, IllegalStateError) is kept apart from remote failures,
which live in rocketq.remoting.errors.
"""

from __future__ import annotations

import enum


class RetryClass(enum.Enum):
    """What a caller may do after an error."""

    NEVER = "never"  # the request is wrong; retrying changes nothing
    IMMEDIATE = "immediate"  # a passing condition; retry at once
    AFTER_BACKOFF = "after_backoff"  # overload; retry after a pause
    REFRESH_ROUTE = "refresh_route"  # routes are stale; look them up again, then retry
    SWITCH_BROKER = "switch_broker"  # this broker cannot serve it; retry on another


class RocketQError(Exception):
    """Root of every error rocketq raises on purpose."""

    retry: RetryClass = RetryClass.NEVER


class ClientError(RocketQError):
    """The caller used the API wrongly (bad argument, bad message)."""


class IllegalStateError(ClientError):
    """The object is not in a state that allows the call (not started, already shut down)."""


class ConfigError(RocketQError):
    """A configuration key or value is wrong; the message names the key."""


class BodyDecodeError(RocketQError, ValueError):
    """A JSON body does not parse (bad syntax, bad UTF-8, trailing content) or lacks its shape."""

    retry = RetryClass.NEVER
