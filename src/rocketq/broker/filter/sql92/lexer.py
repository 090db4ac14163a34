"""Tokens of RocketMQ's SQL92 filter language (SelectorParser.jj, 4.9.8), with their source offsets.

Port of the token section of org.apache.rocketmq.filter.parser.SelectorParser.jj: case-insensitive
keywords (NOT AND OR BETWEEN IN TRUE FALSE NULL IS), integer literals with an optional L suffix,
floating-point literals (5.5, 5., .5, 5E10), single-quoted strings with '' for a quote, identifiers
[A-Za-z_$][A-Za-z0-9_$]*, the operators = <> < > <= >= ( ) , + -, and `--` line / `/* */` block
comments. As in JavaCC the longest token wins and a keyword beats an identifier of the same length.
Deviation: the whole text is tokenized up front, so an unlexable character anywhere is an error
(Java reads lazily and never looks at text after the last token it needs).
"""

from __future__ import annotations

import enum
import re
from typing import NamedTuple

from rocketq.broker.filter.errors import FilterParseError


class Kind(enum.Enum):
    """Token kinds; keyword kinds carry their upper-case spelling."""

    NOT = "NOT"
    AND = "AND"
    OR = "OR"
    BETWEEN = "BETWEEN"
    IN = "IN"
    TRUE = "TRUE"
    FALSE = "FALSE"
    NULL = "NULL"
    IS = "IS"
    DECIMAL = "integer"
    FLOAT = "decimal"
    STRING = "string"
    ID = "identifier"
    OP = "operator"  # = <> < > <= >= ( ) , + - : the text is the operator
    EOF = "end"


class Token(NamedTuple):
    kind: Kind
    text: str  # the source text (for a STRING: with its quotes, '' not yet decoded)
    pos: int  # 0-based offset of the first character


_KEYWORD_KINDS = (
    Kind.NOT,
    Kind.AND,
    Kind.OR,
    Kind.BETWEEN,
    Kind.IN,
    Kind.TRUE,
    Kind.FALSE,
    Kind.NULL,
    Kind.IS,
)
KEYWORDS: dict[str, Kind] = {k.value: k for k in _KEYWORD_KINDS}

# Order matters only between alternatives that can start at the same character; each is written so
# that the first one that matches is also the longest, as JavaCC's longest-match rule demands.
_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\n\r\f]+)
  | (?P<line_comment>--[^\n\r]*(?:\r\n|\n|\r))
  | (?P<block_comment>/\*[^*]*\*+(?:[^*/][^*]*\*+)*/)
  | (?P<float>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
  | (?P<decimal>0|[1-9][0-9]*[lL]?)
  | (?P<string>'(?:''|[^'])*')
  | (?P<word>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op><>|<=|>=|[=<>(),+-])
    """,
    re.VERBOSE,
)


def tokenize(text: str) -> list[Token]:
    """All tokens of `text`, ending with one EOF token; raises FilterParseError at a stray character."""
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    end = len(text)
    match = _TOKEN_RE.match
    while pos < end:
        m = match(text, pos)
        if m is None:
            raise _lexical_error(text, pos)
        group = m.lastgroup
        value = m.group()
        if group == "word":
            append(Token(KEYWORDS.get(value.upper(), Kind.ID), value, pos))
        elif group == "decimal":
            append(Token(Kind.DECIMAL, value, pos))
        elif group == "float":
            append(Token(Kind.FLOAT, value, pos))
        elif group == "string":
            append(Token(Kind.STRING, value, pos))
        elif group == "op":
            append(Token(Kind.OP, value, pos))
        pos = m.end()
    append(Token(Kind.EOF, "", end))
    return tokens


def decode_string(literal: str) -> str:
    """The value of a quoted literal: strip the quotes, '' stands for one quote."""
    return literal[1:-1].replace("''", "'")


def _lexical_error(text: str, pos: int) -> FilterParseError:
    ch = text[pos]
    if ch == "'":
        return FilterParseError(
            "the string literal is not closed",
            expression=text,
            position=pos,
            token=ch,
            expected=["a closing '"],
        )
    if text.startswith("/*", pos):
        return FilterParseError(
            "the comment is not closed", expression=text, position=pos, token="/*", expected=["*/"]
        )
    hint = ""
    if ch in "!&|":
        hint = " (use <>, AND, OR)"
    elif ch == '"':
        hint = " (string literals take single quotes)"
    return FilterParseError(
        f"unexpected character {ch!r}{hint}",
        expression=text,
        position=pos,
        token=ch,
        expected=["a property name", "a literal", "an operator"],
    )
