"""Java value semantics the SQL92 filter depends on: number parsing, type promotion and compareTo.

Port of ComparisonExpression.__compare (with convertStringExpressions on, as SelectorParser.parse
always sets it) and of the JDK parsers it calls (Integer.valueOf, Long.valueOf, Double.valueOf,
Boolean.valueOf) and Double.compareTo. Java values map to Python as: null -> None, Boolean -> bool,
String -> str, Integer -> int, Long -> JavaLong (an int subclass), Double -> float. Only literals are
numbers; message properties are always strings. Where Java throws (NumberFormatException,
ClassCastException) these functions raise FilterEvaluationError.
"""

from __future__ import annotations

import math
import re
from typing import Any

from rocketq.broker.filter.errors import FilterEvaluationError

INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1
LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1

# String.trim(): every char <= U+0020 at either end.
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))
# FloatingDecimal.readJavaFormatString: ASCII digits, optional exponent, optional f/F/d/D suffix.
_JAVA_DECIMAL = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_HEX = re.compile(r"([+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?")


class JavaLong(int):
    """An int that Java holds as a Long (a literal beyond the int range, or its negation)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}L"


def parse_java_int(text: str) -> int:
    """Integer.valueOf(text): optional sign, decimal digits, within 32 bits."""
    if len(text) < 10 and text.isdigit() and text.isascii():  # the common case, cheaply
        return int(text)
    return _parse_integral(text, INT_MIN, INT_MAX, "Integer")


def parse_java_long(text: str) -> int:
    """Long.valueOf(text): optional sign, decimal digits, within 64 bits."""
    if len(text) < 19 and text.isdigit() and text.isascii():
        return int(text)
    return _parse_integral(text, LONG_MIN, LONG_MAX, "Long")


def _parse_integral(text: str, low: int, high: int, java_type: str) -> int:
    body = text[1:] if text[:1] in ("+", "-") else text
    # isdecimal() is Unicode category Nd, the digits Java's Character.digit(c, 10) accepts.
    if body.isdecimal():
        if len(body) > 19:  # int() refuses > 4300 digits; only leading zeros can make it fit
            body = body.lstrip("0") or "0"
            text = text[:1] + body if text[:1] in ("+", "-") else body
        if len(body) <= 20:
            value = int(text)
            if low <= value <= high:
                return value
    raise FilterEvaluationError(f"For input string: {text!r} (not a {java_type})")


def parse_java_double(text: str) -> float:
    """Double.valueOf(text): Java's decimal and hex float syntax, NaN and Infinity, after trim()."""
    if text.isdigit() and text.isascii():
        return float(text)
    trimmed = text.strip(_JAVA_TRIM)
    if _JAVA_DECIMAL.fullmatch(trimmed):
        return float(trimmed.rstrip("fFdD"))
    m = _JAVA_HEX.fullmatch(trimmed)
    if m:
        return float.fromhex(m.group(1))
    raise FilterEvaluationError(f"For input string: {text!r} (not a Double)")


def java_boolean_value_of(text: str) -> bool:
    """Boolean.valueOf(text): true only for "true" in any case."""
    return len(text) == 4 and text.lower() == "true"


def double_compare(a: float, b: float) -> int:
    """Double.compareTo: numeric order, but -0.0 < 0.0 and NaN above everything (and equal to itself)."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan = a != a
    b_nan = b != b
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)
    if a == 0.0:
        return int(math.copysign(1.0, a) > 0) - int(math.copysign(1.0, b) > 0)
    return 0


def java_compare(lv: Any, rv: Any) -> int:
    """ComparisonExpression.__compare(lv, rv, convertStringExpressions=true) for two non-null values.

    Mixed types are promoted the way Java does (Integer -> Long -> Double; a String is parsed as the
    other side's number type, or by Boolean.valueOf against a Boolean); pairs Java cannot promote
    compare as -1; a Boolean against a String is a ClassCastException in Java, an error here.
    """
    lc = type(lv)
    rc = type(rv)
    if lc is not rc:
        if lc is bool:
            if rc is str:
                raise FilterEvaluationError(f"cannot compare Boolean {lv} with String {rv!r}")
            return -1
        if lc is str:
            if rc is bool:
                lv = java_boolean_value_of(lv)
            elif rc is int:
                lv = parse_java_int(lv)
            elif rc is JavaLong:
                lv = parse_java_long(lv)
            elif rc is float:
                lv = parse_java_double(lv)
            else:
                return -1
        elif rc is bool:
            return -1
        elif rc is str:
            if lc is int:
                rv = parse_java_int(rv)
            elif lc is JavaLong:
                rv = parse_java_long(rv)
            else:
                rv = parse_java_double(rv)
        elif lc is float or rc is float:
            lv = float(lv)
            rv = float(rv)
        # Integer against Long: both integral, Python compares them exactly as Java's widening does.
    if type(lv) is float:
        return double_compare(lv, float(rv))
    if lv < rv:
        return -1
    return 1 if lv > rv else 0


def compare_for_ordering(lv: Any, rv: Any) -> int:
    """ComparisonExpression.evaluate for > >= < <=: two Strings compare as Doubles, else java_compare."""
    if type(lv) is str and type(rv) is str:
        return double_compare(parse_java_double(lv), parse_java_double(rv))
    return java_compare(lv, rv)


def negate(value: Any) -> Any:
    """UnaryExpression.createNegate: numbers change sign (keeping their Java type), anything else is null."""
    t = type(value)
    if t is int:
        return -value
    if t is JavaLong:
        return JavaLong(-value)
    if t is float:
        return -value
    return None
