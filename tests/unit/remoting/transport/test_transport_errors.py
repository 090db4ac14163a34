"""The remoting error tree: for_code, retry classes, map_exceptions."""

from __future__ import annotations

import asyncio

import pytest

from rocketq.common.errors import RetryClass, RocketQError
from rocketq.remoting import errors as E
from rocketq.remoting.protocol.codes import ResponseCode


@pytest.mark.parametrize(
    ("code", "cls", "retry"),
    [
        (ResponseCode.SYSTEM_ERROR, E.BrokerSystemError, RetryClass.SWITCH_BROKER),
        (ResponseCode.SYSTEM_BUSY, E.SystemBusyError, RetryClass.AFTER_BACKOFF),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, E.RequestCodeNotSupportedError, RetryClass.NEVER),
        (ResponseCode.SERVICE_NOT_AVAILABLE, E.ServiceNotAvailableError, RetryClass.SWITCH_BROKER),
        (ResponseCode.NO_PERMISSION, E.NoPermissionError, RetryClass.SWITCH_BROKER),
        (ResponseCode.TOPIC_NOT_EXIST, E.TopicNotExistError, RetryClass.REFRESH_ROUTE),
        (ResponseCode.NO_BUYER_ID, E.NoBuyerIdError, RetryClass.SWITCH_BROKER),
        (ResponseCode.NOT_IN_CURRENT_UNIT, E.NotInCurrentUnitError, RetryClass.SWITCH_BROKER),
        (ResponseCode.MESSAGE_ILLEGAL, E.MessageIllegalError, RetryClass.NEVER),
        (ResponseCode.FLUSH_DISK_TIMEOUT, E.FlushDiskTimeoutError, RetryClass.NEVER),
        (ResponseCode.SUBSCRIPTION_NOT_EXIST, E.SubscriptionNotExistError, RetryClass.NEVER),
        (ResponseCode.FLOW_CONTROL, E.FlowControlError, RetryClass.AFTER_BACKOFF),
        (ResponseCode.PULL_RETRY_IMMEDIATELY, E.PullRetryImmediatelyError, RetryClass.IMMEDIATE),
    ],
)
def test_for_code_gives_the_class_and_retry(
    code: int, cls: type[E.BrokerResponseError], retry: RetryClass
) -> None:
    err = E.for_code(code, "why")
    assert type(err) is cls
    assert (err.code, err.remark, err.retry) == (int(code), "why", retry)
    assert isinstance(err, E.BrokerResponseError) and isinstance(err, RocketQError)
    assert str(err) == f"CODE: {int(code)} DESC: why"


def test_every_error_response_code_has_a_class() -> None:
    for code in ResponseCode:
        if code is ResponseCode.SUCCESS:
            continue
        err = E.for_code(code)
        assert err.code == code
        if code < 200 or code in (204, 205, 206, 207, 208, 215):
            assert type(err) is not E.UnknownBrokerError, code


def test_unknown_code_falls_back() -> None:
    err = E.for_code(9999, None)
    assert type(err) is E.UnknownBrokerError
    assert (err.code, err.remark, err.retry) == (9999, "", RetryClass.NEVER)


def test_transport_error_retry_classes() -> None:
    assert E.RemotingConnectError.retry is RetryClass.SWITCH_BROKER
    assert E.RemotingSendRequestError.retry is RetryClass.SWITCH_BROKER
    assert E.RemotingTimeoutError.retry is RetryClass.SWITCH_BROKER
    assert E.RemotingTooMuchRequestError.retry is RetryClass.AFTER_BACKOFF
    for cls in (E.RemotingConnectError, E.RemotingTimeoutError, E.RemotingSendRequestError):
        assert issubclass(cls, E.RemotingError)


@pytest.mark.parametrize(
    ("foreign", "ours"),
    [
        (ConnectionRefusedError(111, "Connection refused"), E.RemotingConnectError),
        (ConnectionResetError(104, "reset"), E.RemotingConnectError),
        (OSError(24, "Too many open files"), E.RemotingConnectError),
        (TimeoutError(), E.RemotingTimeoutError),
        (asyncio.IncompleteReadError(b"ab", 10), E.RemotingConnectError),
    ],
)
def test_map_exceptions_translates(foreign: BaseException, ours: type[E.RemotingError]) -> None:
    with pytest.raises(ours) as info, E.map_exceptions("connect to 127.0.0.1:9876"):
        raise foreign
    assert str(info.value).startswith("connect to 127.0.0.1:9876: ")
    assert info.value.__cause__ is foreign


def test_map_exceptions_leaves_other_errors_alone() -> None:
    with pytest.raises(ValueError), E.map_exceptions("x"):
        raise ValueError("not an I/O error")
    original = E.RemotingSendRequestError("ours")
    with pytest.raises(E.RemotingSendRequestError) as info, E.map_exceptions("x"):
        raise original
    assert info.value is original
    with pytest.raises(asyncio.CancelledError), E.map_exceptions("x"):
        raise asyncio.CancelledError()


def test_map_exceptions_with_a_custom_table() -> None:
    with (
        pytest.raises(E.RemotingConnectError),
        E.map_exceptions("connect", {OSError: E.RemotingConnectError}),
    ):
        raise TimeoutError()
