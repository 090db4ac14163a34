"""Broker message filters against the store's MessageFilter protocol: TAG codes, SQL92 on stored records."""

from __future__ import annotations

import pytest

from rocketq.broker.filter import (
    ExpressionMessageFilter,
    Sql92MessageFilter,
    TagMessageFilter,
    build_tag_filter,
    compile_sql92,
    record_properties,
)
from rocketq.common.message import MessageExt
from rocketq.common.record.codec import encode_record
from rocketq.common.tags import parse_tag_expression, tags_code
from rocketq.store.protocols import MessageFilter


def stored(tags: str | None = None, *, v6: bool = False, body: bytes = b"payload", **props: str) -> bytes:
    host = ("::1", 10911) if v6 else ("127.0.0.1", 10911)
    msg = MessageExt("TopicTest", body, tags=tags, properties=props, born_host=host, store_host=host)
    return encode_record(msg)


@pytest.mark.parametrize("v6", [False, True])
def test_record_properties_reads_only_the_properties(v6: bool) -> None:
    record = stored("TagA", v6=v6, body=b"x" * 300, price="150", region="eu")
    assert record_properties(record) == {"TAGS": "TagA", "price": "150", "region": "eu"}
    assert record_properties(memoryview(record)) == record_properties(record)


def test_record_properties_of_garbage_is_empty() -> None:
    assert record_properties(b"") == {}
    assert record_properties(stored("T")[:60]) == {}
    assert record_properties(stored()) == {}


def test_tag_filter_by_hash_code() -> None:
    parsed = parse_tag_expression("TagA || TagB")
    f = build_tag_filter(parsed.sub_string, parsed.codes)
    assert isinstance(f, TagMessageFilter) and isinstance(f, ExpressionMessageFilter)
    assert f.is_matched_by_consume_queue(tags_code("TagA"))
    assert not f.is_matched_by_consume_queue(tags_code("TagC"))
    assert not f.is_matched_by_consume_queue(0)  # no tag
    assert f.is_matched_by_commit_log(stored("TagC"), None)  # tags are decided on the consume queue only
    assert build_tag_filter("*", []) is None and build_tag_filter("", []) is None


def test_sql92_filter_on_stored_records() -> None:
    f: MessageFilter = Sql92MessageFilter(compile_sql92("TAGS = 'TagA' AND price > 100"))
    assert f.is_matched_by_consume_queue(tags_code("TagZ"))  # no bloom filter: the commit log decides
    assert f.is_matched_by_commit_log(stored("TagA", price="150"), None)
    assert not f.is_matched_by_commit_log(stored("TagA", price="50"), None)
    assert not f.is_matched_by_commit_log(stored("TagB", price="150"), None)
    assert not f.is_matched_by_commit_log(stored("TagA", price="cheap"), None)
    assert not f.is_matched_by_commit_log(stored("TagA"), None)


def test_sql92_filter_prefers_decoded_properties() -> None:
    f = Sql92MessageFilter(compile_sql92("a IS NULL"))
    # long polling hands over the dispatched properties; the record is then not read
    assert f.is_matched_by_commit_log(stored(a="1"), {"b": "2"})
    assert not f.is_matched_by_commit_log(stored(a="1"), None)
    assert f.is_matched_by_commit_log(None, None)
    assert repr(f) == "Sql92MessageFilter('a IS NULL')"


def test_filters_split_a_batch_like_the_store() -> None:
    records = [stored(f"Tag{i % 3}", n=str(i)) for i in range(30)]
    f = Sql92MessageFilter(compile_sql92("n BETWEEN 10 AND 19 AND TAGS <> 'Tag0'"))
    kept = [int(record_properties(r)["n"]) for r in records if f.is_matched_by_commit_log(r, None)]
    assert kept == [i for i in range(10, 20) if i % 3]
