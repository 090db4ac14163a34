"""The SDK's error names (docs/api.md): MQClientError, MQBrokerError, NoRouteError, MessageIllegalError, ...

Port of org.apache.rocketmq.client.exception.{MQClientException, MQBrokerException}. Bridged to
rocketq.remoting.errors: MQBrokerError *is* the remoting BrokerResponseError (every error response, with
`.code` and `.remark`, one subclass per response code), and RemotingTimeoutError / RemotingConnectError
are the transport's own classes, so `except` works whichever name a caller uses. Every error carries a
`retry` class (rocketq.common.errors.RetryClass); retry loops read it, never the text.
A broker's MESSAGE_ILLEGAL answer is raised as BrokerMessageIllegalError, which is both an
MQBrokerError and this module's MessageIllegalError (the class local checks raise).
"""

from __future__ import annotations

from rocketq.common.errors import ClientError, IllegalStateError, RetryClass, RocketQError
from rocketq.remoting import errors as _remote
from rocketq.remoting.errors import (
    BrokerResponseError,
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
    RemotingTooMuchRequestError,
)
from rocketq.remoting.protocol.codes import ResponseCode

__all__ = [
    "BrokerMessageIllegalError",
    "ClientStateError",
    "MQBrokerError",
    "MQClientError",
    "MessageIllegalError",
    "NoRouteError",
    "RemotingConnectError",
    "RemotingError",
    "RemotingSendRequestError",
    "RemotingTimeoutError",
    "RemotingTooMuchRequestError",
    "RequestTimeoutError",
    "SendFailedError",
    "broker_error",
]

# Every error response of a broker or name server (`.code`, `.remark`).
MQBrokerError = BrokerResponseError


class MQClientError(ClientError):
    """A client-side failure or misuse; `code` is a response code when one applies, else -1."""

    def __init__(self, message: str, code: int = -1) -> None:
        super().__init__(message)
        self.code = code


class RequestTimeoutError(MQClientError):
    """A request-reply request was sent but no reply came in time (Java's RequestTimeoutException)."""

    REQUEST_TIMEOUT_EXCEPTION = 10006  # ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION

    def __init__(self, message: str, correlation_id: str) -> None:
        super().__init__(message, self.REQUEST_TIMEOUT_EXCEPTION)
        self.correlation_id = correlation_id


class ClientStateError(MQClientError, IllegalStateError):
    """The producer/consumer is not started, or already shut down."""


class NoRouteError(MQClientError):
    """No name server knows a route for the topic (checked again with a fresh look-up first)."""

    retry = RetryClass.REFRESH_ROUTE

    def __init__(self, topic: str, detail: str = "") -> None:
        message = f"no route info for topic {topic!r}"
        super().__init__(message + (f": {detail}" if detail else ""), int(ResponseCode.TOPIC_NOT_EXIST))
        self.topic = topic


class MessageIllegalError(MQClientError):
    """The message cannot be sent as it is (empty topic, bad tag, body too large, ...)."""

    def __init__(self, message: str, code: int = int(ResponseCode.MESSAGE_ILLEGAL)) -> None:
        super().__init__(message, code)


class BrokerMessageIllegalError(MessageIllegalError, _remote.MessageIllegalError):
    """A broker answered MESSAGE_ILLEGAL (13)."""

    def __init__(self, code: int, remark: str | None = None) -> None:
        _remote.MessageIllegalError.__init__(self, code, remark)


class SendFailedError(MQClientError):
    """Every attempt of a send failed; the last failure is the __cause__ and `last_error`."""

    def __init__(self, message: str, last_error: BaseException | None, code: int = -1) -> None:
        super().__init__(message, code)
        self.last_error = last_error
        self.retry = last_error.retry if isinstance(last_error, RocketQError) else RetryClass.NEVER


def broker_error(code: int, remark: str | None) -> BrokerResponseError:
    """The typed error for an error response (MESSAGE_ILLEGAL as the client's MessageIllegalError too)."""
    if code == ResponseCode.MESSAGE_ILLEGAL:
        return BrokerMessageIllegalError(code, remark)
    return _remote.for_code(code, remark)
