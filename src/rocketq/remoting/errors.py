"""Remote failures: transport errors, broker/namesrv error responses, and their retry classes.

Port of org.apache.rocketmq.remoting.exception.* (RemotingConnectException, RemotingTimeoutException,
RemotingSendRequestException, RemotingTooMuchRequestException) and of the response-code side of
org.apache.rocketmq.client.exception.MQBrokerException. Deviation: MQBrokerException is one class with
a code; here every response code that a caller branches on has its own subclass with a `retry` class
(aiokafka's `for_code`), so retry loops read `err.retry` and never the remark.

Retry classes follow the Java producer (DefaultMQProducer.retryResponseCodes, docs/protocol.md 1.8):
TOPIC_NOT_EXIST refreshes the route; SERVICE_NOT_AVAILABLE, SYSTEM_ERROR, NO_PERMISSION, NO_BUYER_ID
and NOT_IN_CURRENT_UNIT switch broker; SYSTEM_BUSY and FLOW_CONTROL back off; anything else is final.
Foreign exceptions (OSError, asyncio.IncompleteReadError, TimeoutError) become RemotingError subclasses
at the transport boundary through `map_exceptions`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping

from rocketq.common.errors import RetryClass, RocketQError
from rocketq.remoting.protocol.codes import ResponseCode

__all__ = [
    "BrokerResponseError",
    "BrokerSystemError",
    "ConsumeMsgTimeoutError",
    "ConsumerNotOnlineError",
    "FilterDataNotExistError",
    "FilterDataNotLatestError",
    "FlowControlError",
    "FlushDiskTimeoutError",
    "FlushSlaveTimeoutError",
    "MessageIllegalError",
    "NoBuyerIdError",
    "NoMessageError",
    "NoPermissionError",
    "NotInCurrentUnitError",
    "PullNotFoundError",
    "PullOffsetMovedError",
    "PullRetryImmediatelyError",
    "QueryNotFoundError",
    "RemotingConnectError",
    "RemotingError",
    "RemotingSendRequestError",
    "RemotingTimeoutError",
    "RemotingTooMuchRequestError",
    "RequestCodeNotSupportedError",
    "ServiceNotAvailableError",
    "SlaveNotAvailableError",
    "SubscriptionGroupNotExistError",
    "SubscriptionNotExistError",
    "SubscriptionNotLatestError",
    "SubscriptionParseFailedError",
    "SystemBusyError",
    "TopicExistAlreadyError",
    "TopicNotExistError",
    "TransactionFailedError",
    "UnknownBrokerError",
    "VersionNotSupportedError",
    "for_code",
    "map_exceptions",
]


# --- transport failures ----------------------------------------------------------------------------
class RemotingError(RocketQError):
    """A request could not be carried to its peer or its answer did not come back."""


class RemotingConnectError(RemotingError):
    """No usable connection to the address (refused, reset, closed with the request pending)."""

    retry = RetryClass.SWITCH_BROKER


class RemotingSendRequestError(RemotingError):
    """The request could not be written to the connection."""

    retry = RetryClass.SWITCH_BROKER


class RemotingTimeoutError(RemotingError):
    """No response within the timeout (the request may or may not have been executed)."""

    # The Java producer's sendDefaultImpl retries a timed-out send on another broker.
    retry = RetryClass.SWITCH_BROKER


class RemotingTooMuchRequestError(RemotingError):
    """Too many requests in flight: no async/oneway permit could be had within the timeout."""

    retry = RetryClass.AFTER_BACKOFF


# --- error responses -------------------------------------------------------------------------------
class BrokerResponseError(RocketQError):
    """A peer answered with a non-success response code; `remark` is its explanation."""

    # The ResponseCode a subclass stands for (None on the base and on UnknownBrokerError).
    response_code: int | None = None

    def __init__(self, code: int, remark: str | None = None) -> None:
        self.code = int(code)
        self.remark = remark or ""
        super().__init__(f"CODE: {self.code} DESC: {self.remark}")


class UnknownBrokerError(BrokerResponseError):
    """A response code without its own class."""


class BrokerSystemError(BrokerResponseError):
    """SYSTEM_ERROR (named so as not to shadow the builtin SystemError)."""

    response_code = ResponseCode.SYSTEM_ERROR
    retry = RetryClass.SWITCH_BROKER


class SystemBusyError(BrokerResponseError):
    response_code = ResponseCode.SYSTEM_BUSY
    retry = RetryClass.AFTER_BACKOFF


class RequestCodeNotSupportedError(BrokerResponseError):
    response_code = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


class TransactionFailedError(BrokerResponseError):
    response_code = ResponseCode.TRANSACTION_FAILED


class FlushDiskTimeoutError(BrokerResponseError):
    response_code = ResponseCode.FLUSH_DISK_TIMEOUT


class SlaveNotAvailableError(BrokerResponseError):
    response_code = ResponseCode.SLAVE_NOT_AVAILABLE


class FlushSlaveTimeoutError(BrokerResponseError):
    response_code = ResponseCode.FLUSH_SLAVE_TIMEOUT


class MessageIllegalError(BrokerResponseError):
    response_code = ResponseCode.MESSAGE_ILLEGAL


class ServiceNotAvailableError(BrokerResponseError):
    response_code = ResponseCode.SERVICE_NOT_AVAILABLE
    retry = RetryClass.SWITCH_BROKER


class VersionNotSupportedError(BrokerResponseError):
    response_code = ResponseCode.VERSION_NOT_SUPPORTED


class NoPermissionError(BrokerResponseError):
    response_code = ResponseCode.NO_PERMISSION
    retry = RetryClass.SWITCH_BROKER


class TopicNotExistError(BrokerResponseError):
    response_code = ResponseCode.TOPIC_NOT_EXIST
    retry = RetryClass.REFRESH_ROUTE


class TopicExistAlreadyError(BrokerResponseError):
    response_code = ResponseCode.TOPIC_EXIST_ALREADY


class PullNotFoundError(BrokerResponseError):
    response_code = ResponseCode.PULL_NOT_FOUND


class PullRetryImmediatelyError(BrokerResponseError):
    response_code = ResponseCode.PULL_RETRY_IMMEDIATELY
    retry = RetryClass.IMMEDIATE


class PullOffsetMovedError(BrokerResponseError):
    response_code = ResponseCode.PULL_OFFSET_MOVED


class QueryNotFoundError(BrokerResponseError):
    response_code = ResponseCode.QUERY_NOT_FOUND


class SubscriptionParseFailedError(BrokerResponseError):
    response_code = ResponseCode.SUBSCRIPTION_PARSE_FAILED


class SubscriptionNotExistError(BrokerResponseError):
    response_code = ResponseCode.SUBSCRIPTION_NOT_EXIST


class SubscriptionNotLatestError(BrokerResponseError):
    response_code = ResponseCode.SUBSCRIPTION_NOT_LATEST


class SubscriptionGroupNotExistError(BrokerResponseError):
    response_code = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


class FilterDataNotExistError(BrokerResponseError):
    response_code = ResponseCode.FILTER_DATA_NOT_EXIST


class FilterDataNotLatestError(BrokerResponseError):
    response_code = ResponseCode.FILTER_DATA_NOT_LATEST


class NoBuyerIdError(BrokerResponseError):
    response_code = ResponseCode.NO_BUYER_ID
    retry = RetryClass.SWITCH_BROKER


class NotInCurrentUnitError(BrokerResponseError):
    response_code = ResponseCode.NOT_IN_CURRENT_UNIT
    retry = RetryClass.SWITCH_BROKER


class ConsumerNotOnlineError(BrokerResponseError):
    response_code = ResponseCode.CONSUMER_NOT_ONLINE


class ConsumeMsgTimeoutError(BrokerResponseError):
    response_code = ResponseCode.CONSUME_MSG_TIMEOUT


class NoMessageError(BrokerResponseError):
    response_code = ResponseCode.NO_MESSAGE


class FlowControlError(BrokerResponseError):
    # A push consumer backs off (20 ms in Java) when a pull is answered with FLOW_CONTROL.
    response_code = ResponseCode.FLOW_CONTROL
    retry = RetryClass.AFTER_BACKOFF


def _subclasses_by_code() -> dict[int, type[BrokerResponseError]]:
    table: dict[int, type[BrokerResponseError]] = {}
    for cls in BrokerResponseError.__subclasses__():
        if cls.response_code is not None:
            table[int(cls.response_code)] = cls
    return table


_BY_CODE = _subclasses_by_code()


def for_code(code: int, remark: str | None = None) -> BrokerResponseError:
    """The typed error for a response code (UnknownBrokerError when the code has no class)."""
    cls = _BY_CODE.get(int(code), UnknownBrokerError)
    return cls(code, remark)


# --- mapping foreign exceptions --------------------------------------------------------------------
# Order matters: TimeoutError and ConnectionError are OSError subclasses, so they come first.
DEFAULT_EXCEPTION_MAP: Mapping[type[BaseException], type[RemotingError]] = {
    TimeoutError: RemotingTimeoutError,
    asyncio.IncompleteReadError: RemotingConnectError,
    OSError: RemotingConnectError,
}


@contextlib.contextmanager
def map_exceptions(
    what: str, mapping: Mapping[type[BaseException], type[RemotingError]] = DEFAULT_EXCEPTION_MAP
) -> Iterator[None]:
    """Translate foreign I/O exceptions raised inside the block into RemotingError subclasses.

    `what` names the operation for the message ("connect to 127.0.0.1:9876"). Exceptions not in
    `mapping` (our own errors, CancelledError) pass through unchanged; the original is the __cause__.
    """
    try:
        yield
    except RemotingError:
        raise
    except Exception as exc:
        for foreign, ours in mapping.items():
            if isinstance(exc, foreign):
                detail = str(exc) or type(exc).__name__
                raise ours(f"{what}: {detail}") from exc
        raise
