"""SQL92 filter: the Java parsing and comparison rules the evaluation rests on."""

from __future__ import annotations

import math

import pytest

from rocketq.broker.filter import FilterEvaluationError
from rocketq.broker.filter.sql92.lexer import Kind, tokenize
from rocketq.broker.filter.sql92.values import (
    JavaLong,
    compare_for_ordering,
    double_compare,
    java_compare,
    parse_java_double,
    parse_java_int,
    parse_java_long,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("-0", 0),
        ("+7", 7),
        ("007", 7),
        ("2147483647", 2**31 - 1),
        ("-2147483648", -(2**31)),
        ("\u0663", 3),
        ("0" * 5000 + "12", 12),
    ],
)
def test_integer_value_of(text: str, value: int) -> None:
    assert parse_java_int(text) == value


@pytest.mark.parametrize(
    "text", ["", "+", "-", " 1", "1 ", "1.0", "1e3", "2147483648", "1_000", "0x10", "9" * 5000]
)
def test_integer_value_of_refuses(text: str) -> None:
    with pytest.raises(FilterEvaluationError):
        parse_java_int(text)


def test_long_value_of() -> None:
    assert parse_java_long("9223372036854775807") == 2**63 - 1
    assert parse_java_long("-9223372036854775808") == -(2**63)
    with pytest.raises(FilterEvaluationError):
        parse_java_long("9223372036854775808")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1.0),
        (" 1.5\t", 1.5),
        ("1.", 1.0),
        (".5", 0.5),
        ("-1e3", -1000.0),
        ("1.5f", 1.5),
        ("2D", 2.0),
        ("Infinity", math.inf),
        ("-Infinity", -math.inf),
        ("0x1.8p1", 3.0),
        ("1e400", math.inf),
    ],
)
def test_double_value_of(text: str, value: float) -> None:
    assert parse_java_double(text) == value


@pytest.mark.parametrize(
    "text", ["", "inf", "nan", "infinity", "1_0", "1e", "e5", ".", "1.5ff", "\u0661", "0x1"]
)
def test_double_value_of_refuses(text: str) -> None:
    with pytest.raises(FilterEvaluationError):
        parse_java_double(text)


def test_double_value_of_nan() -> None:
    assert math.isnan(parse_java_double("NaN"))


def test_double_compare_is_total() -> None:
    nan = math.nan
    assert double_compare(-0.0, 0.0) == -1 and double_compare(0.0, -0.0) == 1
    assert double_compare(nan, math.inf) == 1 and double_compare(math.inf, nan) == -1
    assert double_compare(nan, nan) == 0 and double_compare(1.0, 1.0) == 0


def test_java_compare_promotes_like_java() -> None:
    assert java_compare(1, JavaLong(1)) == 0  # Integer widened to Long
    assert java_compare(2**53 + 1, 2.0**53) == 0  # Long to Double loses precision in Java too
    assert java_compare("5", 5) == 0 and java_compare(5, "6") == -1
    assert java_compare("TRUE", True) == 0 and java_compare("x", False) == 0
    assert java_compare(1, True) == -1 and java_compare(True, 1) == -1  # not comparable: -1
    with pytest.raises(FilterEvaluationError):
        java_compare(True, "true")  # Java: ClassCastException
    with pytest.raises(FilterEvaluationError):
        java_compare("3000000000", 1)
    assert java_compare("3000000000", JavaLong(1)) == 1


def test_ordering_of_two_strings_is_numeric() -> None:
    assert compare_for_ordering("10", "9.5") == 1
    with pytest.raises(FilterEvaluationError):
        compare_for_ordering("a", "b")


def test_lexer_longest_match_and_keywords() -> None:
    kinds = [(t.kind, t.text) for t in tokenize("NOTE not In 5. .5 5e3 7L 0 <>= <= -- c\n x")]
    assert kinds == [
        (Kind.ID, "NOTE"),
        (Kind.NOT, "not"),
        (Kind.IN, "In"),
        (Kind.FLOAT, "5."),
        (Kind.FLOAT, ".5"),
        (Kind.FLOAT, "5e3"),
        (Kind.DECIMAL, "7L"),
        (Kind.DECIMAL, "0"),
        (Kind.OP, "<>"),
        (Kind.OP, "="),
        (Kind.OP, "<="),
        (Kind.ID, "x"),
        (Kind.EOF, ""),
    ]
    assert [t.pos for t in tokenize("a  =  'b'")] == [0, 3, 6, 9]
