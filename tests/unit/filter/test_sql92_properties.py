"""SQL92 filter, property-based: well-formed expressions compile and never raise on evaluation, the fast
closures agree with the generic ones, any text either compiles or raises FilterParseError, and
compiled expressions are shared by text.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.filter import FilterEvaluationError, FilterParseError
from rocketq.broker.filter.sql92 import compile_expression, compile_sql92

NAMES = ["a", "b", "TAGS"]
VALUES = ["1", "2", "-3", "1.5", "abc", "", "NaN", "true", "TagA", " 7", "3000000000", "0x1p1", "1e3", "-0.0"]

names = st.sampled_from(NAMES)
numbers = st.one_of(
    st.integers(-5, 5).map(str),
    st.integers(2**31, 2**40).map(lambda n: f"{n}L"),
    st.sampled_from(["1.5", ".5", "2.", "1e3", "2.5E-1"]),
    st.integers(0, 5).map(lambda n: f"-{n}"),
)
strings = st.sampled_from(["'1'", "'abc'", "''", "'it''s'", "'TagA'", "'true'"])
literals = st.one_of(numbers, strings, st.sampled_from(["TRUE", "FALSE"]))


@st.composite
def leaf_conditions(draw: Any) -> str:
    name = draw(names)
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return f"{name} {draw(st.sampled_from(['>', '>=', '<', '<=']))} {draw(numbers)}"
    if choice == 1:
        return f"{draw(numbers)} {draw(st.sampled_from(['>', '<=']))} {name}"
    if choice == 2:
        return f"{name} {draw(st.sampled_from(['=', '<>']))} {draw(literals)}"
    if choice == 3:
        return f"{draw(st.one_of(numbers, strings))} {draw(st.sampled_from(['=', '<>']))} {name}"
    if choice == 4:
        low, high = sorted(draw(st.lists(st.integers(-5, 5), min_size=2, max_size=2)))
        return f"{name} {draw(st.sampled_from(['', 'NOT ']))}BETWEEN {low} AND {high}"
    if choice == 5:
        items = ", ".join(draw(st.lists(strings, min_size=1, max_size=7)))
        return f"{name} {draw(st.sampled_from(['', 'NOT ']))}IN ({items})"
    if choice == 6:
        return f"{name} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if choice == 7:
        return f"{name} {draw(st.sampled_from(['=', '<>', '>']))} {draw(names)}"
    if choice == 8:
        return draw(st.sampled_from(["TRUE", "FALSE", "NULL", name, f"NOT {name}"]))
    return f"{name} = -{draw(st.sampled_from(['TRUE', 'b', '2']))}"


def combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pair = st.tuples(children, children)
    return st.one_of(
        pair.map(lambda p: f"({p[0]}) AND ({p[1]})"),
        pair.map(lambda p: f"{p[0]} OR {p[1]}"),
        # NULL = anything does not parse (Java: NULL cannot be compared), even in parentheses
        pair.filter(lambda p: "NULL" not in p).map(lambda p: f"({p[0]}) = ({p[1]})"),
        children.map(lambda c: f"NOT ({c})"),
        children.map(lambda c: f"({c}) IS NULL"),
    )


expressions = st.recursive(leaf_conditions(), combine, max_leaves=12)
property_dicts = st.dictionaries(names, st.sampled_from(VALUES), max_size=3)


def outcome(expression: str, properties: dict[str, str], specialize: bool) -> Any:
    try:
        return compile_expression(expression, specialize=specialize).evaluate(properties)
    except FilterEvaluationError:
        return "error"


@settings(max_examples=300, deadline=None)
@given(expressions, property_dicts)
def test_well_formed_expressions_never_raise(expression: str, properties: dict[str, str]) -> None:
    compiled = compile_sql92(expression)
    assert compiled.matches(properties) in (True, False)
    fast = outcome(expression, properties, True)
    generic = outcome(expression, properties, False)
    assert fast == generic
    assert fast in (True, False, None, "error")
    assert compiled.matches(properties) is (fast is True)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab01.-+'()=<>,* \nTANDORNOTISBETWEN", max_size=40))
def test_any_text_compiles_or_raises_parse_error(text: str) -> None:
    try:
        compiled = compile_expression(text)
    except FilterParseError as exc:
        assert 0 <= exc.position <= len(text)
        return
    assert compiled.matches({"a": "1", "b": "x"}) in (True, False)


def test_compiled_expression_is_cached_by_text() -> None:
    first = compile_sql92("cache_probe = 1")
    assert compile_sql92("cache_probe = 1") is first
    assert compile_sql92("cache_probe  = 1") is not first
    assert compile_sql92.cache_info().maxsize is not None


def test_compiled_expression_knows_its_properties() -> None:
    compiled = compile_sql92("a = 1 AND (b IN ('x') OR NOT c) AND TAGS IS NULL AND 1 < d")
    assert compiled.property_names == {"a", "b", "c", "d", "TAGS"}
    assert (
        repr(compiled) == "CompiledExpression(\"a = 1 AND (b IN ('x') OR NOT c) AND TAGS IS NULL AND 1 < d\")"
    )
