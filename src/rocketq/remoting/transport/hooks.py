"""RPC hooks: code run before each request and after each response, on both server and client.

Port of org.apache.rocketmq.remoting.RPCHook (doBeforeRequest / doAfterResponse), used by ACL to sign
requests (client) and verify them (server). A hook that raises fails the request: on the client the
caller gets the exception, on the server the request is answered SYSTEM_ERROR, as in Java, or with
the code a RequestRefused names (ACL answers NO_PERMISSION).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rocketq.remoting.protocol.command import RemotingCommand


class RequestRefused(Exception):
    """Raised by a server hook to answer a request with `code` and `remark` instead of running it."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


@runtime_checkable
class RPCHook(Protocol):
    def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None: ...

    def do_after_response(
        self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
    ) -> None: ...


def run_before(hooks: Sequence[RPCHook], remote_addr: str, request: RemotingCommand) -> None:
    for hook in hooks:
        hook.do_before_request(remote_addr, request)


def run_after(
    hooks: Sequence[RPCHook], remote_addr: str, request: RemotingCommand, response: RemotingCommand | None
) -> None:
    # Java calls doAfterResponse with a null response too (no answer now); we skip hooks then,
    # since every hook we know of (ACL) only reads the response.
    if response is None:
        return
    for hook in hooks:
        hook.do_after_response(remote_addr, request, response)
