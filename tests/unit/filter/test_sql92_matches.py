"""SQL92 filter: expressions x message properties -> match, as RocketMQ 4.9.8's filter decides.

Every row is checked through the specialized closures and through the generic ones. Rows marked
"Java:" pin a quirk of the Java filter on purpose (a client moving from Apache RocketMQ must see the
same messages).
"""

from __future__ import annotations

import pytest

from rocketq.broker.filter.sql92 import compile_expression, compile_sql92

ROWS: list[tuple[str, dict[str, str], bool]] = [
    # -- nulls: a missing property makes a comparison null, and null is not a match ----------------
    ("a = 'x'", {}, False),
    ("a <> 'x'", {}, False),
    ("'x' <> a", {}, True),  # Java: 'x' = null is FALSE (not null) when the literal is on the left
    ("a IS NULL", {}, True),
    ("a IS NULL", {"a": "1"}, False),
    ("a IS NOT NULL", {"a": ""}, True),
    ("a IS NOT NULL", {}, False),
    ("a > 5", {}, False),
    ("NOT (a > 5)", {}, False),
    ("a > 5 OR b = 'y'", {"b": "y"}, True),
    ("a > 5 AND b = 'y'", {"b": "y"}, False),
    ("NOT (a > 5 AND b = 'n')", {"b": "y"}, True),  # null AND FALSE is FALSE
    ("a = b", {}, True),  # Java: null = null is TRUE
    ("a IS NULL OR a = 'hello'", {}, True),
    ("a IS NULL OR a = 'hello'", {"a": "abc"}, False),
    ("a = -'x'", {}, True),  # the negation of a string is null, and null = null
    # -- numbers against strings ---------------------------------------------------------------------
    ("a = 5", {"a": "5"}, True),
    ("a = 5", {"a": "05"}, True),
    ("a = 5", {"a": "+5"}, True),
    ("a = 5", {"a": "5.0"}, False),  # Java: Integer.valueOf("5.0") throws
    ("a = 5.0", {"a": "5"}, True),
    ("a = '5'", {"a": "5.0"}, False),
    ("a = '5'", {"a": "5"}, True),
    ("a > 5", {"a": "10"}, True),
    ("a > 5", {"a": "abc"}, False),
    ("a > 5", {"a": "3000000000"}, False),  # beyond Integer: the literal 5 is an Integer
    ("a > 3000000000", {"a": "3000000001"}, True),  # a Long literal parses the property as a Long
    ("a > 5", {"a": " 6"}, False),  # Integer.valueOf does not trim
    ("a > 1.5", {"a": " 2 "}, True),  # Double.valueOf does
    ("a > b", {"a": "20", "b": "10"}, True),
    ("a > b", {"a": "10", "b": "9.5"}, True),  # two properties compare as doubles, not as text
    ("a > b", {"a": "x", "b": "1"}, False),
    ("a <> 5", {"a": "abc"}, False),
    ("a = 5 OR TAGS = 'T'", {"a": "abc", "TAGS": "T"}, False),  # Java: the error aborts everything
    ("TAGS = 'T' OR a = 5", {"a": "abc", "TAGS": "T"}, True),  # ... unless OR stopped before it
    ("a > 1.5", {"a": "1e1"}, True),
    ("a > 1.5", {"a": "NaN"}, True),  # Double.compareTo puts NaN above everything
    ("a < 1.5", {"a": "NaN"}, False),
    ("a > 1.5", {"a": "0x1p1"}, True),
    ("a > 1.5", {"a": "2d"}, True),
    ("a > 1.5", {"a": "Infinity"}, True),
    ("a > 1.5", {"a": "inf"}, False),  # not Java syntax
    ("a = 1", {"a": "\u0661"}, True),  # Character.digit accepts every Unicode decimal digit
    ("a = 2147483648", {"a": "2147483648"}, True),
    ("a = 9223372036854775807", {"a": "9223372036854775808"}, False),
    # -- booleans ------------------------------------------------------------------------------------
    ("a = TRUE", {"a": "TRUE"}, True),
    ("a = FALSE", {"a": "no"}, True),  # Boolean.valueOf("no") is false
    ("a = TRUE OR b = FALSE", {"a": "false", "b": "true"}, False),
    ("TRUE = a", {"a": "true"}, False),  # Java: ClassCastException
    ("1 = TRUE", {}, False),
    ("a", {"a": "true"}, False),  # a bare property is a String, never Boolean TRUE
    ("true", {}, True),
    ("FALSE", {}, False),
    ("NULL", {}, False),
    # -- negative and decimal numbers ------------------------------------------------------------------
    ("a = -5", {"a": "-5"}, True),
    ("a > -5", {"a": "-4"}, True),
    ("a < -1.5", {"a": "-2"}, True),
    ("a >= -1.5", {"a": "-1.5"}, True),
    ("a > - -3", {"a": "4"}, True),
    ("a <= 2.5e2", {"a": "250"}, True),
    ("a = .5", {"a": "0.5"}, True),
    ("a = 5.", {"a": "5"}, True),
    ("a = 10L", {"a": "10"}, True),
    ("a > 1.5", {"a": "-0.0"}, False),
    ("a > +2", {"a": "3"}, True),
    # -- BETWEEN: both bounds inclusive ----------------------------------------------------------------
    ("a BETWEEN 2 AND 10", {"a": "2"}, True),
    ("a BETWEEN 2 AND 10", {"a": "10"}, True),
    ("a BETWEEN 2 AND 10", {"a": "11"}, False),
    ("a BETWEEN 2 AND 10", {"a": "1"}, False),
    ("a NOT BETWEEN 2 AND 10", {"a": "1"}, True),
    ("a NOT BETWEEN 2 AND 10", {"a": "10"}, False),
    ("a NOT BETWEEN 2 AND 10", {}, False),
    ("a NOT BETWEEN 10 AND 2", {"a": "5"}, True),  # Java checks the bounds of BETWEEN only
    ("a BETWEEN -10 AND -5", {"a": "-7"}, True),
    ("a BETWEEN -5 AND -10", {"a": "-7"}, False),  # negated bounds are not checked, just never true
    ("a BETWEEN 1.5 AND 2", {"a": "2"}, True),
    ("a BETWEEN 1.5 AND 2", {"a": "1.75"}, False),  # Java: the Integer bound 2 parses "1.75" as an int
    ("a BETWEEN 2 AND 10 AND b = 'x'", {"a": "5", "b": "x"}, True),
    ("5 BETWEEN 1 AND 10", {}, True),
    # -- IN --------------------------------------------------------------------------------------------
    ("a IN ('3', '4', '5')", {"a": "4"}, True),
    ("a IN ('3', '4', '5')", {"a": "8"}, False),
    ("a NOT IN ('3', '4', '5')", {"a": "8"}, True),
    ("a NOT IN ('3')", {}, False),
    ("a IN ('x''y')", {"a": "x'y"}, True),
    ("a IN ('4')", {"a": "4.0"}, False),
    ("a IN ('1', '2', '3', '4', '5', '6')", {"a": "6"}, True),
    # -- NOT binds tighter than = (Java's grammar) ------------------------------------------------------
    ("NOT a = '1'", {"a": "1"}, False),  # (NOT a) = '1': a Boolean against a String
    ("NOT (a = '1')", {"a": "2"}, True),
    ("NOT a", {"a": "anything"}, True),
    ("NOT a IS NULL", {}, True),  # (NOT a) IS NULL
    ("NOT a IS NULL", {"a": "x"}, False),
    ("NOT a = TRUE", {"a": "x"}, True),
    ("NOT NOT (a = 1)", {"a": "1"}, True),
    ("a IS NOT NULL AND NOT a IS NULL", {"a": "x"}, False),  # (NOT a) IS NULL is FALSE here
    # -- AND before OR, parentheses ----------------------------------------------------------------------
    ("a = 1 OR b = 1 AND c = 1", {"a": "1"}, True),
    ("(a = 1 OR b = 1) AND c = 1", {"a": "1"}, False),
    ("a = 1 OR b = 1 AND c = 1", {"b": "1"}, False),
    ("a = 1 AND b = 1 OR c = 1", {"c": "1"}, True),
    ("a=3 and b<>4 And c>5 AND d<=4", {"a": "3", "b": "5", "c": "6", "d": "1"}, True),
    ("a=3 or b<>4 Or c>5 OR d<=4", {"a": "4", "b": "4", "c": "3", "d": "10"}, False),
    ("((a = 1))", {"a": "1"}, True),
    ("(a > 1) = TRUE", {"a": "2"}, True),
    ("(a > 1) = (b > 1)", {"a": "0", "b": "0"}, True),
    ("a = 1 = TRUE", {"a": "1"}, True),
    # -- TAGS is a property like any other ---------------------------------------------------------------
    ("TAGS = 'TagA'", {"TAGS": "TagA"}, True),
    ("TAGS IN ('TagA', 'TagB') AND price > 100", {"TAGS": "TagB", "price": "150"}, True),
    ("TAGS IN ('TagA', 'TagB') AND price > 100", {"TAGS": "TagC", "price": "150"}, False),
    ("TAGS IS NULL", {"KEYS": "k"}, True),
    # -- keywords in any case; identifiers case-sensitive -------------------------------------------------
    ("a is not null and a between 1 and 3", {"a": "2"}, True),
    ("a Not In ('x')", {"a": "y"}, True),
    ("A = 1", {"a": "1"}, False),
    ("a = tRuE", {"a": "true"}, True),
    ("note = 'n'", {"note": "n"}, True),  # a keyword prefix is still an identifier
    ("$x_1 = 'v'", {"$x_1": "v"}, True),
    ("_a > 0", {"_a": "1"}, True),
    # -- quotes, comments, white space ---------------------------------------------------------------------
    ("TAGS='''''tag'''''", {"TAGS": "''tag''"}, True),
    ("a = ''", {"a": ""}, True),
    ("a = 'it''s'", {"a": "it's"}, True),
    ("a = 'A'", {"a": "a"}, False),
    ("a = 1 -- note\n", {"a": "1"}, True),
    ("a /* note */ = 1", {"a": "1"}, True),
    ("a\t=\r\n1", {"a": "1"}, True),
]


@pytest.mark.parametrize(("expression", "properties", "expected"), ROWS)
def test_expression_matches(expression: str, properties: dict[str, str], expected: bool) -> None:
    assert compile_sql92(expression).matches(properties) is expected
    assert compile_expression(expression, specialize=False).matches(properties) is expected


def test_table_is_large_enough() -> None:
    assert len(ROWS) >= 60


def test_missing_properties_mapping_is_empty() -> None:
    assert compile_sql92("a IS NULL").matches(None) is True
    assert compile_sql92("a = 1").matches(None) is False


def test_evaluate_is_three_valued() -> None:
    assert compile_sql92("a = 1").evaluate({}) is None
    assert compile_sql92("a = 1").evaluate({"a": "1"}) is True
    assert compile_sql92("a = 1").evaluate({"a": "2"}) is False
