"""RocketMQ's SQL92 message filter: parse an expression once, evaluate it per message, fast.

Port of the org.apache.rocketmq.filter module of 4.9.8 (SelectorParser.jj and the expression
package; SqlFilter.compile). Entry point:

    compiled = compile_sql92("a > 5 AND TAGS IN ('TagA', 'TagB')")   # cached by text (LRU)
    compiled.matches({"a": "7", "TAGS": "TagA"})    # -> True; never raises
    compiled.evaluate(props)                        # -> True / False / None, or FilterEvaluationError

`compile_sql92` raises FilterParseError (position, token, expected) for a bad expression. The type
rules are Java's, including the odd ones: a missing property makes a comparison null (so the message
does not match), a property is parsed as the number type of the literal it is compared with (a
property that does not parse makes the whole expression not match, as Java's exception does),
`=`/`<>` compare strings, `<` and friends refuse string literals at parse time, NOT binds tighter than
`=`, and a message matches only when the expression is TRUE. Deviations are listed in parser.py,
lexer.py and ast.py (text after a complete expression is refused; nesting is bounded).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

from rocketq.broker.filter.errors import FilterEvaluationError, FilterParseError
from rocketq.broker.filter.sql92 import ast
from rocketq.broker.filter.sql92.compiler import Evaluator, compile_tree
from rocketq.broker.filter.sql92.parser import parse

__all__ = [
    "CompiledExpression",
    "FilterEvaluationError",
    "FilterParseError",
    "compile_expression",
    "compile_sql92",
    "parse",
]

CACHE_SIZE = 1024
_NO_PROPERTIES: Mapping[str, str] = {}


class CompiledExpression:
    """One parsed expression: `matches(properties) -> bool` is the per-message call."""

    __slots__ = ("evaluate", "matches", "property_names", "text", "tree")

    def __init__(self, text: str, tree: ast.Node, evaluate: Evaluator) -> None:
        self.text = text
        self.tree = tree
        self.evaluate: Evaluator = evaluate
        self.property_names: frozenset[str] = _property_names(tree)

        def matches(properties: Mapping[str, str] | None) -> bool:
            try:
                return evaluate(_NO_PROPERTIES if properties is None else properties) is True
            except FilterEvaluationError:
                return False  # Java's ExpressionMessageFilter logs the exception and does not match

        self.matches = matches

    def __repr__(self) -> str:
        return f"CompiledExpression({self.text!r})"


def compile_expression(text: str, *, specialize: bool = True) -> CompiledExpression:
    """Parse and compile `text` (uncached); raises FilterParseError."""
    if not isinstance(text, str):
        raise FilterParseError("the expression is not a string", expression="")
    tree = parse(text)
    return CompiledExpression(text, tree, compile_tree(tree, specialize=specialize))


@functools.lru_cache(maxsize=CACHE_SIZE)
def compile_sql92(text: str) -> CompiledExpression:
    """The compiled form of `text`, shared by every caller with the same text; raises FilterParseError."""
    return compile_expression(text)


def _property_names(node: ast.Node) -> frozenset[str]:
    names: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Prop):
            names.add(item.name)
        for slot in dataclasses.fields(item):
            child = getattr(item, slot.name)
            if isinstance(child, ast.Node):
                stack.append(child)
            elif isinstance(child, tuple):
                stack.extend(c for c in child if isinstance(c, ast.Node))
    return frozenset(names)
