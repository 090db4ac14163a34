"""The server side of ACL: an RPC hook that verifies every request before its processor runs.

Port of the hook BrokerController.initialAcl registers (validator.validate(validator.parse(...))).
A refused request is answered NO_PERMISSION with the validator's remark (Java 4.9 answers
SYSTEM_ERROR with the same text; NO_PERMISSION tells the client what happened, and every RocketMQ
client treats both as a broker error). Refusals are logged once per client address and access key
per LOG_INTERVAL_S, with the count of those not logged meanwhile.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from rocketq.remoting.acl.errors import AclError
from rocketq.remoting.acl.plain_config import PlainAclConfig
from rocketq.remoting.acl.validator import client_ip, shown_key, validate_run
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.transport.hooks import RequestRefused, before_each

log = logging.getLogger("rocketq.acl")

LOG_INTERVAL_S = 60.0
_MAX_LOG_KEYS = 10_000


class AclServerHook:
    """RPCHook for a RemotingServer: verifies the codes `checked` says need it (None: every code)."""

    # Nothing to do after a response: the dispatcher answers without calling do_after_response
    # (and a run of requests on its fast path).
    after_response = False

    def __init__(
        self,
        config: PlainAclConfig,
        checked: Callable[[int], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.checked = checked
        self.clock = clock
        self.refused = 0
        self._last_logged: dict[tuple[str, str], tuple[float, int]] = {}

    def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
        checked = self.checked
        if checked is not None and not checked(request.code):
            return
        # validate without its return value: a run of one (validate looks the verdict up once more)
        refused = validate_run(self.config.tables, remote_addr, [request])
        if refused is not None:
            raise self._refusal(remote_addr, request, refused[0]) from None  # type: ignore[arg-type]

    def do_before_requests(
        self, remote_addr: str, requests: list[RemotingCommand]
    ) -> list[Exception | None] | None:
        """do_before_request for each of one connection's run: None when all pass, else each one's
        refusal (None where it passed). Java calls its hook per request; the verdicts are the same,
        the account is looked up once per access key in the run (validate_run)."""
        if self.checked is not None:  # a NameServer: few requests, none taken together
            return before_each(self.do_before_request, remote_addr, requests)
        refused = validate_run(self.config.tables, remote_addr, requests)
        if refused is None:
            return None
        return [
            None if exc is None else self._refusal(remote_addr, request, exc)
            for request, exc in zip(requests, refused, strict=True)
        ]

    def _refusal(self, remote_addr: str, request: RemotingCommand, exc: AclError) -> RequestRefused:
        self.refused += 1
        remark = str(exc)
        self._log_refusal(remote_addr, request, remark)
        return RequestRefused(ResponseCode.NO_PERMISSION, remark)

    def do_after_response(
        self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
    ) -> None:
        return None

    def _log_refusal(self, remote_addr: str, request: RemotingCommand, remark: str) -> None:
        fields = request.ext_fields or {}
        key = (client_ip(remote_addr), shown_key(fields.get("AccessKey", "")))
        now = self.clock()
        last = self._last_logged.get(key)
        if last is not None and now - last[0] < LOG_INTERVAL_S:
            self._last_logged[key] = (last[0], last[1] + 1)
            log.debug(
                "ACL refused request code %d from %s (accessKey=%s): %s",
                request.code,
                remote_addr,
                key[1] or "-",
                remark,
            )
            return
        if len(self._last_logged) >= _MAX_LOG_KEYS:
            self._last_logged.clear()  # bounded: a scan of many addresses cannot grow it
        suppressed = last[1] if last is not None else 0
        self._last_logged[key] = (now, 0)
        log.warning(
            "ACL refused request code %d from %s (accessKey=%s): %s%s",
            request.code,
            remote_addr,
            key[1] or "-",
            remark,
            f" ({suppressed} more refusals from this client not logged)" if suppressed else "",
        )
