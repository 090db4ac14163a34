from rocketq.broker.filter import TagMessageFilter, build_tag_filter, is_tag_type
from rocketq.broker.processors.send import delay_level_of


def test_tag_filter() -> None:
    assert build_tag_filter("*", []) is None
    assert build_tag_filter(None, []) is None
    f = build_tag_filter("TagA || TagB", [2598919, 2598920])
    assert isinstance(f, TagMessageFilter)
    assert f.is_matched_by_consume_queue(2598919)
    assert not f.is_matched_by_consume_queue(0)
    assert f.is_matched_by_consume_queue(None)
    # Java compares the low 32 bits of the 64-bit consume-queue code
    assert f.is_matched_by_consume_queue(2598919 + (1 << 32))
    assert is_tag_type(None) and is_tag_type("") and is_tag_type("TAG") and not is_tag_type("SQL92")


def test_delay_level_of() -> None:
    assert delay_level_of({"DELAY": "3"}) == 3
    assert delay_level_of({"DELAY": "x"}) == 0 and delay_level_of({}) == 0
