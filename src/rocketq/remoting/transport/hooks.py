"""RPC hooks: code run before each request and after each response, on both server and client.

Port of org.apache.rocketmq.remoting.RPCHook (doBeforeRequest / doAfterResponse), used by ACL to sign
requests (client) and verify them (server). A hook that raises fails the request: on the client the
caller gets the exception, on the server the request is answered SYSTEM_ERROR, as in Java, or with
the code a RequestRefused names (ACL answers NO_PERMISSION).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
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


def before_each(
    do_before_request: Callable[[str, RemotingCommand], None],
    remote_addr: str,
    requests: list[RemotingCommand],
) -> list[Exception | None] | None:
    """`do_before_request` on each of `requests`: None when none raised, else what each raised (None
    where it passed)."""
    refused: list[Exception | None] | None = None
    for i, request in enumerate(requests):
        try:
            do_before_request(remote_addr, request)
        except Exception as exc:
            if refused is None:
                refused = [None] * len(requests)
            refused[i] = exc
    return refused


def run_before_each(
    hooks: Sequence[RPCHook], remote_addr: str, requests: list[RemotingCommand]
) -> list[Exception | None] | None:
    """run_before for each of one connection's consecutive requests (a run the dispatcher hands its
    processor together): None when all passed, else what refused each (None where it passed). A hook
    with `do_before_requests(remote_addr, requests)` (same result) takes the run in one call."""
    refused: list[Exception | None] | None = None
    for hook in hooks:
        if refused is None:
            each = getattr(hook, "do_before_requests", None)
            refused = (each or partial(before_each, hook.do_before_request))(remote_addr, requests)
            continue
        # a request an earlier hook refused is not shown to the next ones
        pending = [i for i, exc in enumerate(refused) if exc is None]
        more = before_each(hook.do_before_request, remote_addr, [requests[i] for i in pending])
        for i, exc in zip(pending, more or (), strict=False):
            refused[i] = exc
    return refused


def has_after_response(hook: RPCHook) -> bool:
    """False for a hook that declares `after_response = False` (nothing to do after a response, as
    ACL's verifier): the dispatcher then does not call its do_after_response."""
    return bool(getattr(hook, "after_response", True))


def run_after(
    hooks: Sequence[RPCHook], remote_addr: str, request: RemotingCommand, response: RemotingCommand | None
) -> None:
    # Java calls doAfterResponse with a null response too (no answer now); we skip hooks then,
    # since every hook we know of (ACL) only reads the response.
    if response is None:
        return
    for hook in hooks:
        hook.do_after_response(remote_addr, request, response)
