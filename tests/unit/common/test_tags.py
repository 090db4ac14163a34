from rocketq.common.tags import java_hash_code, parse_tag_expression


def test_java_hash_code_matches_java_examples() -> None:
    assert java_hash_code("TagA") == 2598919
    assert java_hash_code("TagB") == 2598920
    assert java_hash_code("*") == 42
    assert java_hash_code("hello") == 99162322
    # overflow wraps to a signed 32-bit int like Java
    assert java_hash_code("Hello World") == -862545276


def test_tag_expression_parsing() -> None:
    expr = parse_tag_expression("TagA || TagB ||  ")
    assert expr.tags == {"TagA", "TagB"}
    assert expr.matches_code(2598919)
    assert not expr.matches_code(42)
    assert expr.matches_tag("TagB") and not expr.matches_tag(None)
    assert parse_tag_expression("*").matches_all
    assert parse_tag_expression(None).matches_all
