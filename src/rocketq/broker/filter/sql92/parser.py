"""Recursive-descent parser of RocketMQ's SQL92 filter language into the tree of sql92.ast.

Port of the grammar of org.apache.rocketmq.filter.parser.SelectorParser.jj (4.9.8), rule for rule:

    expression  := or_expr EOF
    or_expr     := and_expr (OR and_expr)*
    and_expr    := equality (AND equality)*
    equality    := comparison ( '=' comparison | '<>' comparison | IS NULL | IS NOT NULL )*
    comparison  := unary ( ('>'|'>='|'<'|'<=') unary | [NOT] BETWEEN unary AND unary
                         | [NOT] IN '(' string (',' string)* ')' )*
    unary       := '+' unary | '-' unary | NOT unary | primary
    primary     := literal | identifier | '(' or_expr ')'

so NOT binds tighter than a comparison (`NOT a = 1` is `(NOT a) = 1`), as in Java. Hand-written
rather than generated: the grammar is small and a hand-written parser can say precisely what it
expected where. Deviations: text after a complete expression is an error (Java's parser stops
after the expression and ignores the rest), and nesting deeper than ast.MAX_DEPTH is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rocketq.broker.filter.errors import FilterParseError
from rocketq.broker.filter.sql92 import ast
from rocketq.broker.filter.sql92.lexer import Kind, Token, decode_string, tokenize

_VALUE = ("a property name", "a literal ('text', 12, 1.5, TRUE, FALSE, NULL)", "'('", "NOT", "'-'")
_AFTER_EXPRESSION = ("an operator", "AND", "OR", "the end of the expression")
_ORDER_OPS = frozenset((">", ">=", "<", "<="))


def parse(text: str) -> ast.Node:
    """The boolean tree of `text`; raises FilterParseError saying where and what was expected."""
    return _Parser(text).expression()


class _Parser:
    __slots__ = ("i", "nesting", "text", "tokens")

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.nesting = 0

    # -- token access ------------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def at_op(self, op: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind is Kind.OP and tok.text == op

    def error(self, reason: str, tok: Token, expected: tuple[str, ...] = ()) -> FilterParseError:
        return FilterParseError(
            reason, expression=self.text, position=tok.pos, token=tok.text, expected=expected
        )

    def build(self, tok: Token, factory: Callable[..., ast.Node], *args: Any) -> ast.Node:
        """Run an ast factory; its SemanticError becomes a FilterParseError at `tok`."""
        try:
            return factory(*args)
        except ast.SemanticError as exc:
            raise self.error(str(exc), tok) from None

    def condition(self, node: ast.Node, start: Token) -> ast.Node:
        return self.build(start, ast.as_boolean, node)

    # -- rules -------------------------------------------------------------------------------------
    def expression(self) -> ast.Node:
        start = self.peek()
        if start.kind is Kind.EOF:
            raise self.error("the expression is empty", start, _VALUE)
        node = self.or_expr()
        tok = self.peek()
        if tok.kind is not Kind.EOF:
            reason = "unexpected text after a complete expression"
            if tok.text == "-" and self.peek(1).text == "-":
                reason += " (a -- comment must end with a line break)"
            elif tok.text == ")":
                reason = "this ')' closes no '('"
            raise self.error(reason, tok, _AFTER_EXPRESSION)
        return self.condition(node, start)

    def or_expr(self) -> ast.Node:
        start = self.peek()
        left = self.and_expr()
        while self.peek().kind is Kind.OR:
            self.advance()
            right_start = self.peek()
            right = self.and_expr()
            left = self.condition(left, start)
            left = ast.make_or(left, self.condition(right, right_start))
        return left

    def and_expr(self) -> ast.Node:
        start = self.peek()
        left = self.equality()
        while self.peek().kind is Kind.AND:
            self.advance()
            right_start = self.peek()
            right = self.equality()
            left = self.condition(left, start)
            left = ast.make_and(left, self.condition(right, right_start))
        return left

    def equality(self) -> ast.Node:
        left = self.comparison()
        while True:
            tok = self.peek()
            if tok.kind is Kind.OP and tok.text in ("=", "<>"):
                self.advance()
                right = self.comparison()
                factory = ast.make_equal if tok.text == "=" else ast.make_not_equal
                left = self.build(tok, factory, left, right)
            elif tok.kind is Kind.IS:
                self.advance()
                negated = self.peek().kind is Kind.NOT
                if negated:
                    self.advance()
                null = self.peek()
                if null.kind is not Kind.NULL:
                    expected = ("NULL",) if negated else ("NULL", "NOT NULL")
                    raise self.error("IS must be followed by NULL or NOT NULL", null, expected)
                self.advance()
                left = self.build(tok, ast.make_is_null, left, negated)
            else:
                return left

    def comparison(self) -> ast.Node:
        left = self.unary()
        while True:
            tok = self.peek()
            if tok.kind is Kind.OP and tok.text in _ORDER_OPS:
                self.advance()
                left = self.build(tok, ast.make_order, tok.text, left, self.unary())
                continue
            negated = tok.kind is Kind.NOT
            keyword = self.peek(1) if negated else tok
            if keyword.kind is Kind.BETWEEN:
                self.i += 2 if negated else 1
                low = self.unary()
                and_tok = self.peek()
                if and_tok.kind is not Kind.AND:
                    raise self.error("BETWEEN needs AND between its bounds", and_tok, ("AND",))
                self.advance()
                left = self.build(tok, ast.make_between, left, low, self.unary(), negated)
            elif keyword.kind is Kind.IN:
                self.i += 2 if negated else 1
                left = self.build(tok, ast.make_in, left, self.in_list(), negated)
            elif negated:
                raise self.error(
                    "after a value, NOT can only start NOT BETWEEN or NOT IN", keyword, ("BETWEEN", "IN")
                )
            else:
                return left

    def in_list(self) -> list[str]:
        if not self.at_op("("):
            raise self.error("IN must be followed by a parenthesized list", self.peek(), ("'('",))
        self.advance()
        values = [self.string_literal()]
        while self.at_op(","):
            self.advance()
            values.append(self.string_literal())
        if not self.at_op(")"):
            raise self.error("the IN list is not closed", self.peek(), ("','", "')'"))
        self.advance()
        return values

    def string_literal(self) -> str:
        tok = self.peek()
        if tok.kind is not Kind.STRING:
            raise self.error("IN lists hold string literals only", tok, ("a 'string' literal",))
        self.advance()
        return decode_string(tok.text)

    def unary(self) -> ast.Node:
        tok = self.peek()
        if tok.kind is Kind.NOT or (tok.kind is Kind.OP and tok.text in ("+", "-")):
            self.advance()
            self.enter(tok)
            operand_start = self.peek()
            operand = self.unary()
            self.nesting -= 1
            if tok.kind is Kind.NOT:
                return self.build(tok, ast.make_not, self.condition(operand, operand_start))
            return operand if tok.text == "+" else self.build(tok, ast.make_negate, operand)
        return self.primary()

    def primary(self) -> ast.Node:
        tok = self.advance()
        kind = tok.kind
        if kind is Kind.ID:
            return ast.Prop(tok.text)
        if kind is Kind.STRING:
            return ast.Const(decode_string(tok.text))
        if kind is Kind.DECIMAL:
            return self.build(tok, ast.decimal_literal, tok.text)
        if kind is Kind.FLOAT:
            return self.build(tok, ast.float_literal, tok.text)
        if kind is Kind.TRUE or kind is Kind.FALSE:
            return ast.Const(kind is Kind.TRUE)
        if kind is Kind.NULL:
            return ast.Const(None)
        if kind is Kind.OP and tok.text == "(":
            self.enter(tok)
            node = self.or_expr()
            self.nesting -= 1
            if not self.at_op(")"):
                raise self.error("the '(' is not closed", self.peek(), ("AND", "OR", "')'"))
            self.advance()
            return node
        self.i -= 1
        if kind is Kind.EOF:
            raise self.error("the expression ends too early", tok, _VALUE)
        raise self.error("a value is missing here", tok, _VALUE)

    def enter(self, tok: Token) -> None:
        self.nesting += 1
        if self.nesting > ast.MAX_DEPTH:
            raise self.error(f"the expression nests deeper than {ast.MAX_DEPTH} levels", tok)
