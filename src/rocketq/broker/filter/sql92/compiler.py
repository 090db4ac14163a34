"""Compiles an SQL92 syntax tree into nested closures evaluated against a message's properties.

Port of the `evaluate` methods of org.apache.rocketmq.filter.expression (ComparisonExpression,
LogicExpression, UnaryExpression, UnaryInExpression, PropertyExpression, ConstantExpression).
Conditions return True, False or None (Java's null); values return what sql92.values maps Java
values to. Where Java throws, a closure raises FilterEvaluationError. The common shapes (a property
against a literal, IN, IS NULL, AND / OR of two) get closures of their own; `specialize=False`
compiles everything through the generic closures, which the tests use as the reference.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from rocketq.broker.filter.sql92 import ast
from rocketq.broker.filter.sql92.values import (
    JavaLong,
    compare_for_ordering,
    java_boolean_value_of,
    java_compare,
    parse_java_double,
    parse_java_int,
    parse_java_long,
)

Properties = Mapping[str, str]
Evaluator = Callable[[Properties], Any]

_ORDER_FN: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
_PARSERS: dict[type, Callable[[str], Any]] = {
    int: parse_java_int,
    JavaLong: parse_java_long,
    float: parse_java_double,
}


def compile_tree(node: ast.Node, *, specialize: bool = True) -> Evaluator:
    """The closure computing `node` for a properties mapping."""
    return _Compiler(specialize).compile(node)


class _Compiler:
    __slots__ = ("specialize",)

    def __init__(self, specialize: bool) -> None:
        self.specialize = specialize

    def compile(self, node: ast.Node) -> Evaluator:
        match node:
            case ast.Prop(name=name):
                return _property(name)
            case ast.Const(value=value):
                return _constant(value)
            case ast.Neg():
                return self.negation(node)
            case ast.Equal():
                return self.equal(node)
            case ast.Order():
                return self.order(node)
            case ast.In(prop=prop, values=values, negated=negated):
                return _in(prop.name, values, negated)
            case ast.Not(operand=ast.Equal(left=ast.Prop(name=name), right=ast.Const(value=None))) if (
                self.specialize
            ):
                return _prop_is_not_null(name)
            case ast.Not(operand=operand):
                return _not(self.compile(operand))
            case ast.BoolCast(prop=prop):
                return _bool_cast(prop.name)
            case ast.And(items=items):
                return _and([self.compile(item) for item in items], self.specialize)
            case ast.Or(items=items):
                return _or([self.compile(item) for item in items], self.specialize)
        raise TypeError(f"no compiler for {type(node).__name__}")

    def negation(self, node: ast.Neg) -> Evaluator:
        if node.operand is None:
            return _constant(node.value)
        inner = self.compile(node.operand)

        def negated_condition(p: Properties) -> None:
            inner(p)  # evaluated for its errors only: Java negates Numbers, a Boolean gives null
            return None

        return negated_condition

    def equal(self, node: ast.Equal) -> Evaluator:
        left, right = node.left, node.right
        if self.specialize:
            if isinstance(left, ast.Prop):
                if isinstance(right, ast.Const) and right.value is None:
                    return _prop_is_null(left.name)
                value = ast.literal_value(right)
                if value is not None:
                    return _prop_equals_literal(left.name, value)
            if isinstance(right, ast.Prop):
                value = ast.literal_value(left)
                if value is not None and type(value) is not bool:  # TRUE = prop is Java's ClassCastException
                    return _literal_equals_prop(value, right.name)
        return _generic_equal(self.compile(left), self.compile(right))

    def order(self, node: ast.Order) -> Evaluator:
        left, right, op = node.left, node.right, node.op
        if self.specialize:
            if isinstance(left, ast.Prop) and type(ast.literal_value(right)) in _PARSERS:
                return _prop_order_literal(
                    left.name, _ORDER_FN[op], ast.literal_value(right), op in (">", ">=")
                )
            if isinstance(right, ast.Prop) and type(ast.literal_value(left)) in _PARSERS:
                return _literal_order_prop(
                    ast.literal_value(left), _ORDER_FN[op], right.name, op in ("<", "<=")
                )
        return _generic_order(self.compile(left), self.compile(right), op)


# -- leaves ---------------------------------------------------------------------------------------------
def _property(name: str) -> Evaluator:
    def prop(p: Properties) -> Any:
        return p.get(name)

    return prop


def _constant(value: Any) -> Evaluator:
    def constant(p: Properties) -> Any:
        return value

    return constant


# -- comparisons ----------------------------------------------------------------------------------------
def _generic_equal(left: Evaluator, right: Evaluator) -> Evaluator:
    def equal(p: Properties) -> bool | None:
        lv = left(p)
        rv = right(p)
        if lv is None:
            return True if rv is None else None  # null = null is TRUE in Java's filter
        if rv is None:
            return False
        return java_compare(lv, rv) == 0

    return equal


def _prop_is_null(name: str) -> Evaluator:
    def is_null(p: Properties) -> bool:
        return p.get(name) is None

    return is_null


def _prop_is_not_null(name: str) -> Evaluator:
    def is_not_null(p: Properties) -> bool:
        return p.get(name) is not None

    return is_not_null


def _prop_equals_literal(name: str, literal: Any) -> Evaluator:
    t = type(literal)
    if t is str:

        def equals_string(p: Properties) -> bool | None:
            v = p.get(name)
            return None if v is None else v == literal

        return equals_string
    if t is bool:

        def equals_boolean(p: Properties) -> bool | None:
            v = p.get(name)
            return None if v is None else java_boolean_value_of(v) == literal

        return equals_boolean
    parse = _PARSERS[t]

    def equals_number(p: Properties) -> bool | None:
        v = p.get(name)
        # The literal is never 0.0, NaN or infinite, so == agrees with Double.compareTo here.
        return None if v is None else parse(v) == literal

    return equals_number


def _literal_equals_prop(literal: Any, name: str) -> Evaluator:
    """'x' = prop: a missing property makes it FALSE (not null) in Java."""
    if type(literal) is str:

        def string_equals(p: Properties) -> bool:
            v = p.get(name)
            return False if v is None else v == literal

        return string_equals
    parse = _PARSERS[type(literal)]

    def number_equals(p: Properties) -> bool:
        v = p.get(name)
        return False if v is None else parse(v) == literal

    return number_equals


def _generic_order(left: Evaluator, right: Evaluator, op: str) -> Evaluator:
    accept = {">": (1,), ">=": (0, 1), "<": (-1,), "<=": (-1, 0)}[op]

    def order(p: Properties) -> bool | None:
        lv = left(p)
        if lv is None:
            return None
        rv = right(p)
        if rv is None:
            return None
        return compare_for_ordering(lv, rv) in accept

    return order


def _prop_order_literal(
    name: str, fn: Callable[[Any, Any], bool], literal: Any, nan_result: bool
) -> Evaluator:
    """prop > 5: the property is parsed as the literal's Java type; NaN sorts above every number."""
    parse = _PARSERS[type(literal)]

    def order(p: Properties) -> bool | None:
        v = p.get(name)
        if v is None:
            return None
        x = parse(v)
        if x != x:
            return nan_result
        return fn(x, literal)

    return order


def _literal_order_prop(
    literal: Any, fn: Callable[[Any, Any], bool], name: str, nan_result: bool
) -> Evaluator:
    parse = _PARSERS[type(literal)]

    def order(p: Properties) -> bool | None:
        v = p.get(name)
        if v is None:
            return None
        x = parse(v)
        if x != x:
            return nan_result
        return fn(literal, x)

    return order


def _in(name: str, values: frozenset[str], negated: bool) -> Evaluator:
    def in_list(p: Properties) -> bool | None:
        v = p.get(name)
        if v is None:
            return None
        return (v in values) is not negated

    return in_list


# -- logic ----------------------------------------------------------------------------------------------
def _not(inner: Evaluator) -> Evaluator:
    def not_(p: Properties) -> bool | None:
        v = inner(p)
        return None if v is None else not v

    return not_


def _bool_cast(name: str) -> Evaluator:
    def bool_cast(p: Properties) -> bool | None:
        return None if p.get(name) is None else False

    return bool_cast


def _and(items: list[Evaluator], specialize: bool) -> Evaluator:
    if specialize and len(items) == 2:
        first, second = items

        def and2(p: Properties) -> bool | None:
            a = first(p)
            if a is False:
                return False
            b = second(p)
            if b is False:
                return False
            return None if a is None or b is None else True

        return and2

    def and_(p: Properties) -> bool | None:
        unknown = False
        for item in items:
            v = item(p)
            if v is False:
                return False
            if v is None:
                unknown = True
        return None if unknown else True

    return and_


def _or(items: list[Evaluator], specialize: bool) -> Evaluator:
    if specialize and len(items) == 2:
        first, second = items

        def or2(p: Properties) -> bool | None:
            a = first(p)
            if a is True:
                return True
            b = second(p)
            if b is True:
                return True
            return None if a is None or b is None else False

        return or2

    def or_(p: Properties) -> bool | None:
        unknown = False
        for item in items:
            v = item(p)
            if v is True:
                return True
            if v is None:
                unknown = True
        return None if unknown else False

    return or_
