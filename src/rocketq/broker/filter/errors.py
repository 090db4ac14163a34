"""Typed errors of broker-side filtering; each names the RocketMQ response code the broker answers with.

Port of org.apache.rocketmq.filter.expression.MQFilterException and of the remarks the 4.9.8 broker
(PullMessageProcessor, ClientManageProcessor) puts on filter failures. A caller turns any FilterError
into a response with `err.response_code` and `str(err)` as the remark.
"""

from __future__ import annotations

from collections.abc import Sequence

from rocketq.common.errors import RetryClass, RocketQError
from rocketq.remoting.protocol.codes import ResponseCode


class FilterError(RocketQError):
    """A subscription the broker cannot filter by; `response_code` is what the broker answers."""

    retry = RetryClass.NEVER
    response_code: int = ResponseCode.SYSTEM_ERROR


class FilterParseError(FilterError):
    """An expression that does not parse (or an expression type nobody can compile).

    `position` is the 0-based offset into `expression`, `line`/`column` are 1-based (as JavaCC reports
    them), `token` is the text found there ("" at the end) and `expected` says what would have fit.
    """

    response_code = ResponseCode.SUBSCRIPTION_PARSE_FAILED

    def __init__(
        self,
        reason: str,
        *,
        expression: str = "",
        position: int = 0,
        token: str = "",
        expected: Sequence[str] = (),
    ) -> None:
        self.reason = reason
        self.expression = expression
        self.position = position
        self.line = expression.count("\n", 0, position) + 1
        self.column = position - (expression.rfind("\n", 0, position) + 1) + 1
        self.token = token
        self.expected = tuple(expected)
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"line {self.line}, column {self.column}"
        found = f'"{self.token}"' if self.token else "the end of the expression"
        text = f"invalid SQL92 expression at {where} (found {found}): {self.reason}"
        if self.expected:
            text += "; expected " + _one_of(self.expected)
        return text


class FilterNotSupportedError(FilterError):
    """A non-TAG subscription on a broker with enablePropertyFilter=false (4.9.8 answers SYSTEM_ERROR)."""

    response_code = ResponseCode.SYSTEM_ERROR

    def __init__(self, expression_type: str | None) -> None:
        self.expression_type = expression_type
        # The remark is Java's, word for word: clients and tools match on it.
        super().__init__(f"The broker does not support consumer to filter message by {expression_type}")


class FilterDataNotExistError(FilterError):
    """A pull for an SQL92 subscription whose heartbeat never registered a (parsable) expression."""

    response_code = ResponseCode.FILTER_DATA_NOT_EXIST

    def __init__(self, group: str, topic: str) -> None:
        super().__init__(
            f"The broker's consumer filter data is not exist!Your expression may be wrong! group={group}, topic={topic}"
        )


class FilterDataNotLatestError(FilterError):
    """A pull whose subVersion is newer than the expression the broker holds (heartbeat not seen yet)."""

    response_code = ResponseCode.FILTER_DATA_NOT_LATEST

    def __init__(self, broker_version: int, client_version: int) -> None:
        super().__init__(
            f"the consumer's consumer filter data not latest, broker version {broker_version} < {client_version}"
        )


class FilterEvaluationError(FilterError):
    """Raised inside evaluation where Java throws (a property that is not a number compared with one).

    Never leaves `CompiledExpression.matches` (Java's filter catches it and does not match the message).
    """


def _one_of(options: Sequence[str]) -> str:
    if len(options) == 1:
        return options[0]
    return "one of " + ", ".join(options)
