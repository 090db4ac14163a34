"""What every broker processor shares: the error path, header decoding, response helpers.

The bad-input rule: a request that is wrong is answered with its RocketMQ response
code and a remark naming what was wrong, logged once here (at WARNING, or INFO for the expected
ones), and the broker goes on serving. Processors raise RequestError and never build error responses
by hand; a malformed or incomplete header becomes SYSTEM_ERROR naming the Java field, as Java's
decodeCommandCustomHeader failure does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError

T = TypeVar("T")

log = logging.getLogger("rocketq.broker.processor")

# Codes a client causes in normal operation: logged at INFO, not as warnings.
_QUIET_CODES = frozenset(
    {
        ResponseCode.PULL_NOT_FOUND,
        ResponseCode.PULL_RETRY_IMMEDIATELY,
        ResponseCode.PULL_OFFSET_MOVED,
        ResponseCode.QUERY_NOT_FOUND,
        ResponseCode.NO_MESSAGE,  # an ack / change of invisible time with a stale receipt handle
    }
)


# What Java appends to many remarks (FAQUrl.suggestTodo): clients and tools show it as is, some match on it.
FAQ_SUFFIX = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


class RequestError(Exception):
    """A request the broker refuses: answered with `code` and `remark`, nothing else happens."""

    def __init__(self, code: int, remark: str, *, logged: bool = False) -> None:
        super().__init__(remark)
        self.code = int(code)
        self.remark = remark
        self.logged = logged  # already logged where it was decided (the store samples refused puts)


class Connection(Protocol):
    """What processors use of a transport connection (rocketq.remoting.transport.Connection)."""

    @property
    def id(self) -> int: ...

    @property
    def remote_addr(self) -> str: ...

    @property
    def is_active(self) -> bool: ...

    @property
    def attributes(self) -> dict[str, Any]: ...

    def send_response(self, cmd: RemotingCommand) -> Any: ...


def decode_header(header_cls: Any, request: RemotingCommand) -> Any:
    """The typed header of `request`; a missing or malformed field raises RequestError(SYSTEM_ERROR)."""
    return decode_with(header_cls.from_ext_fields, request)


def decode_with(decoder: Callable[[Any], T], request: RemotingCommand) -> T:
    """decode_header through a header's decoder (one of CommandHeader.compile_decoder_into, for a hot path)."""
    try:
        return decoder(request.ext_fields)
    except (MissingHeaderFieldError, BadHeaderValueError) as exc:
        raise RequestError(ResponseCode.SYSTEM_ERROR, str(exc)) from None


def error_response(conn: Connection, request: RemotingCommand, err: RequestError) -> RemotingCommand:
    """Answer a refused request, logging it once."""
    level = logging.INFO if err.code in _QUIET_CODES else logging.WARNING
    if not err.logged and log.isEnabledFor(level):
        log.log(
            level, "code %d from %s refused with %d: %s", request.code, conn.remote_addr, err.code, err.remark
        )
    return request.make_response(err.code, err.remark)


def ok(
    request: RemotingCommand, ext_fields: dict[str, str] | None = None, body: bytes = b""
) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, None, ext_fields, body)


Handler = Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand | None]]


class Processor:
    """Base of a family's processor: `handlers` maps a request code to one coroutine method.

    Implements the transport's RequestProcessor protocol. A RequestError from a handler becomes the
    error response; a oneway request never gets an answer, even an error one.
    """

    def __init__(self) -> None:
        self.handlers: dict[int, Handler] = {}

    @property
    def codes(self) -> frozenset[int]:
        return frozenset(self.handlers)

    async def process_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        handler = self.handlers.get(request.code)
        if handler is None:
            return request.make_response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"
            )
        try:
            response = await handler(conn, request)
        except RequestError as err:
            response = error_response(conn, request, err)
        if request.is_oneway:
            return None
        return response

    def reject_request(self) -> bool:
        return False


def parse_host(addr: str) -> tuple[str, int]:
    """("ip", port) of an "ip:port" / "[v6]:port" address; port 0 when there is none."""
    host, sep, port = addr.rpartition(":")
    if not sep:
        return addr, 0
    host = host.strip("[]")
    try:
        return host, int(port)
    except ValueError:
        return host, 0
