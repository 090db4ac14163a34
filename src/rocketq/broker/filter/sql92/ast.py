"""The syntax tree of an SQL92 filter expression and the checks Java makes while building it.

Port of the factory methods of org.apache.rocketmq.filter.expression (ComparisonExpression.create*,
UnaryExpression.createNOT / createNegate / createInExpression / createBooleanCast, LogicExpression,
ConstantExpression.createFromDecimal / createFloat, SelectorParser.asBooleanExpression). The checks
raise SemanticError; the parser adds the position. What Java calls a ConstantExpression is `Const`,
its BooleanExpressions are the nodes with `is_boolean`, a PropertyExpression is `Prop`. BETWEEN is
built as Java builds it (AND of >= and <=; NOT BETWEEN as OR of < and >), and chains of AND / OR are
flat (evaluation order and three-valued results are the same as Java's left-nested pairs).
Deviation: trees deeper than MAX_DEPTH are refused (Java would eventually overflow its stack).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rocketq.broker.filter.sql92.values import JavaLong, java_compare, negate

MAX_DEPTH = 64


class SemanticError(Exception):
    """A well-formed expression that Java's factories refuse (the parser turns it into FilterParseError)."""


@dataclass(frozen=True, slots=True)
class Node:
    depth: int = field(default=1, kw_only=True)

    @property
    def is_boolean(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class Prop(Node):
    name: str

    @property
    def is_boolean(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Const(Node):
    """A literal; TRUE, FALSE and NULL are Java BooleanConstantExpressions (`is_boolean`)."""

    value: Any

    @property
    def is_boolean(self) -> bool:
        return self.value is None or type(self.value) is bool


@dataclass(frozen=True, slots=True)
class Neg(Node):
    """Unary minus; `operand` is None once folded into `value` (the operand was a literal or a property)."""

    value: Any
    operand: Node | None = None

    @property
    def is_boolean(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Equal(Node):
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Order(Node):
    op: str  # one of > >= < <=
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class In(Node):
    prop: Prop
    values: frozenset[str]
    negated: bool


@dataclass(frozen=True, slots=True)
class Not(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class BoolCast(Node):
    """A bare property used as a condition: null when missing, else FALSE (a String is not a Boolean)."""

    prop: Prop


@dataclass(frozen=True, slots=True)
class And(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or(Node):
    items: tuple[Node, ...]


def _depth(*children: Node) -> int:
    depth = 1 + max(child.depth for child in children)
    if depth > MAX_DEPTH:
        raise SemanticError(f"the expression nests deeper than {MAX_DEPTH} levels")
    return depth


# -- literals ------------------------------------------------------------------------------------------
def decimal_literal(text: str) -> Const:
    """ConstantExpression.createFromDecimal: a Long, narrowed to an Integer when it fits."""
    digits = text[:-1] if text[-1] in "lL" else text
    if len(digits) > 19 or int(digits) > (1 << 63) - 1:
        raise SemanticError(f"the integer {text} is beyond the range of a Java long")
    value = int(digits)
    return Const(value if value <= (1 << 31) - 1 else JavaLong(value))


def float_literal(text: str) -> Const:
    """ConstantExpression.createFloat: a Double, refused when infinite or zero (Java's MIN_VALUE check)."""
    value = float(text)
    if value == float("inf"):
        raise SemanticError(f"the number {text} is beyond the range of a Java double")
    if value == 0.0:
        # Java compares with Double.MIN_VALUE (the smallest positive double), so 0.0 is refused.
        raise SemanticError(f"the decimal {text} is zero, which RocketMQ refuses (write 0)")
    return Const(value)


# -- operators ---------------------------------------------------------------------------------------------
def as_boolean(node: Node) -> Node:
    """SelectorParser.asBooleanExpression: conditions are boolean expressions or (cast) properties."""
    if node.is_boolean:
        return node
    if isinstance(node, Prop):
        return BoolCast(node, depth=_depth(node))
    raise SemanticError(f"{describe(node)} is not a condition (it does not result in a boolean value)")


def make_negate(operand: Node) -> Node:
    if isinstance(operand, Const) or (isinstance(operand, Neg) and operand.operand is None):
        return Neg(negate(operand.value), depth=1)
    if isinstance(operand, Prop):
        return Neg(None, depth=1)  # a property is a String, and Java negates only Numbers
    return Neg(None, operand, depth=_depth(operand))


def make_not(operand: Node) -> Node:
    operand = as_boolean(operand)
    return Not(operand, depth=_depth(operand))


def make_and(left: Node, right: Node) -> Node:
    items = _flatten(And, as_boolean(left), as_boolean(right))
    return And(items, depth=_depth(*items))


def make_or(left: Node, right: Node) -> Node:
    items = _flatten(Or, as_boolean(left), as_boolean(right))
    return Or(items, depth=_depth(*items))


def _flatten(kind: type[And] | type[Or], left: Node, right: Node) -> tuple[Node, ...]:
    items: list[Node] = []
    for node in (left, right):
        if isinstance(node, kind):
            items.extend(node.items)
        else:
            items.append(node)
    return tuple(items)


def make_equal(left: Node, right: Node) -> Node:
    """ComparisonExpression.createEqual: NULL cannot be compared; TRUE = 1 is refused (left boolean literal)."""
    for side in (left, right):
        if isinstance(side, Const) and side.value is None:
            raise SemanticError("NULL cannot be compared with = or <> (use IS NULL / IS NOT NULL)")
    if isinstance(left, Const) and isinstance(right, Const) and left.is_boolean and not right.is_boolean:
        raise SemanticError(f"{describe(left)} cannot be compared with {describe(right)}")
    return Equal(left, right, depth=_depth(left, right))


def make_not_equal(left: Node, right: Node) -> Node:
    return make_not(make_equal(left, right))


def make_is_null(operand: Node, negated: bool) -> Node:
    node: Node = Equal(operand, Const(None), depth=_depth(operand))
    return Not(node, depth=_depth(node)) if negated else node


def make_order(op: str, left: Node, right: Node) -> Node:
    """createGreaterThan & co: only numbers (or properties and computed values) can be ordered."""
    _check_orderable(op, left)
    _check_orderable(op, right)
    return Order(op, left, right, depth=_depth(left, right))


def _check_orderable(op: str, node: Node) -> None:
    if isinstance(node, Const):
        if type(node.value) in (int, JavaLong, float):
            return
        raise SemanticError(f"{describe(node)} cannot be compared with '{op}' (only numbers can)")
    if node.is_boolean:
        raise SemanticError(f"a condition cannot be compared with '{op}' (only numbers can)")


def make_between(value: Node, low: Node, high: Node, negated: bool) -> Node:
    """createBetween / createNotBetween; BETWEEN of two literals checks that low <= high."""
    if negated:
        return make_or(make_order("<", value, low), make_order(">", value, high))
    if isinstance(low, Const) and isinstance(high, Const):
        lv = low.value
        hv = high.value
        if lv is None or hv is None:
            raise SemanticError("the bounds of BETWEEN cannot be NULL")
        try:
            inverted = java_compare(hv, lv) < 0
        except Exception:
            inverted = False  # the operand checks below name the problem
        if inverted:
            raise SemanticError(
                f"BETWEEN {describe(low)} AND {describe(high)}: the low bound exceeds the high bound"
            )
    return make_and(make_order(">=", value, low), make_order("<=", value, high))


def make_in(operand: Node, values: list[str], negated: bool) -> Node:
    if not isinstance(operand, Prop):
        raise SemanticError(f"IN needs a property on its left, got {describe(operand)}")
    return In(operand, frozenset(values), negated, depth=_depth(operand))


def literal_value(node: Node) -> Any:
    """The value of a literal or of a folded negation (known when compiling), else None."""
    if isinstance(node, Const) or (isinstance(node, Neg) and node.operand is None):
        return node.value
    return None


def describe(node: Node) -> str:
    """A short human name of a node for error messages."""
    if isinstance(node, Prop):
        return f"property {node.name}"
    if isinstance(node, Const):
        value = node.value
        if value is None:
            return "NULL"
        if type(value) is bool:
            return "TRUE" if value else "FALSE"
        if type(value) is str:
            return "'" + value.replace("'", "''") + "'"
        return repr(value)
    if isinstance(node, Neg):
        return "a negated value"
    return "a condition"
