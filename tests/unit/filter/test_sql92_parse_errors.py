"""SQL92 filter: expressions RocketMQ refuses, refused with where (line, column, token) and why."""

from __future__ import annotations

import pytest

from rocketq.broker.filter import FilterParseError, compile_filter_expression
from rocketq.broker.filter.sql92 import ast, compile_sql92
from rocketq.remoting.protocol.codes import ResponseCode

# expression, line, column, token found there, a phrase of the reason
BAD: list[tuple[str, int, int, str, str]] = [
    ("", 1, 1, "", "empty"),
    ("   ", 1, 4, "", "empty"),
    ("a >", 1, 4, "", "ends too early"),
    ("a = = 1", 1, 5, "=", "value is missing"),
    ("a == 1", 1, 4, "=", "value is missing"),
    ("a != 1", 1, 3, "!", "unexpected character"),
    ('a = "x"', 1, 5, '"', "single quotes"),
    ("a > 'x'", 1, 3, ">", "cannot be compared"),
    ("a BETWEEN 'a' AND 'b'", 1, 3, "BETWEEN", "cannot be compared"),
    ("a > TRUE", 1, 3, ">", "cannot be compared"),
    ("a > 1 > 2", 1, 7, ">", "condition cannot be compared"),
    ("a b", 1, 3, "b", "unexpected text"),
    ("a = 01", 1, 6, "1", "unexpected text"),
    ("a = 1)", 1, 6, ")", "closes no"),
    ("a = 1 -- note", 1, 7, "-", "line break"),
    ("(a = 1", 1, 7, "", "not closed"),
    ("a IN (1)", 1, 7, "1", "string literals only"),
    ("a IN 'x'", 1, 6, "'x'", "parenthesized"),
    ("a IN ('x'", 1, 10, "", "not closed"),
    ("'x' IN ('x')", 1, 5, "IN", "needs a property"),
    ("NOT 5", 1, 5, "5", "not a condition"),
    ("5", 1, 1, "5", "not a condition"),
    ("-a", 1, 1, "-", "not a condition"),
    ("a AND 5", 1, 7, "5", "not a condition"),
    ("a > 0.0", 1, 5, "0.0", "zero"),
    ("a = 1e999", 1, 5, "1e999", "range of a Java double"),
    ("a = 99999999999999999999", 1, 5, "99999999999999999999", "range of a Java long"),
    ("a = 'x", 1, 5, "'", "not closed"),
    ("a = 1 /* x", 1, 7, "/*", "not closed"),
    ("a BETWEEN 10 AND 1", 1, 3, "BETWEEN", "low bound"),
    ("a BETWEEN NULL AND 1", 1, 3, "BETWEEN", "NULL"),
    ("a BETWEEN 1 OR 2", 1, 13, "OR", "AND"),
    ("a NOT BETWEEN 1", 1, 16, "", "AND"),
    ("a IS 5", 1, 6, "5", "NULL"),
    ("a IS NOT 5", 1, 10, "5", "NULL"),
    ("a NOT LIKE 'x'", 1, 7, "LIKE", "NOT BETWEEN or NOT IN"),
    ("a = NULL", 1, 3, "=", "IS NULL"),
    ("a <> NULL", 1, 3, "<>", "IS NULL"),
    ("TRUE = 1", 1, 6, "=", "cannot be compared"),
    ("a = 1 AND", 1, 10, "", "ends too early"),
    ("a = 1 AND\n  b = = 2", 2, 7, "=", "value is missing"),
    ("(" * 70 + "a" + ")" * 70, 1, ast.MAX_DEPTH + 1, "(", "nests deeper"),
    ("NOT " * 70 + "a", 1, 4 * ast.MAX_DEPTH + 1, "NOT", "nests deeper"),
]


@pytest.mark.parametrize(("expression", "line", "column", "token", "reason"), BAD)
def test_bad_expression_is_refused_with_its_position(
    expression: str, line: int, column: int, token: str, reason: str
) -> None:
    with pytest.raises(FilterParseError) as info:
        compile_sql92(expression)
    err = info.value
    assert (err.line, err.column, err.token) == (line, column, token), str(err)
    assert reason in str(err)
    assert f"line {line}, column {column}" in str(err)
    assert err.response_code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert err.expression == expression


def test_error_names_what_was_expected() -> None:
    with pytest.raises(FilterParseError) as info:
        compile_sql92("a IN ('x' 'y')")
    assert info.value.expected == ("','", "')'")
    assert "expected one of ',', ')'" in str(info.value)


def test_position_is_the_offset() -> None:
    with pytest.raises(FilterParseError) as info:
        compile_sql92("a = 1\nAND b = = 2")
    assert info.value.position == 14


def test_long_chains_are_not_nesting() -> None:
    text = " OR ".join(f"a = '{i}'" for i in range(2000))
    assert compile_sql92(text).matches({"a": "1999"})
    assert not compile_sql92(text).matches({"a": "2000"})


def test_only_sql92_compiles() -> None:
    assert compile_filter_expression("SQL92", "a = 1").matches({"a": "1"})
    for expression_type, expression in (
        ("CLASS", "a = 1"),
        ("sql92", "a = 1"),
        ("SQL92", ""),
        ("SQL92", None),
    ):
        with pytest.raises(FilterParseError):
            compile_filter_expression(expression_type, expression)
