from rocketq.client.consumer.pull_api import reset_retry_topic
from rocketq.client.consumer.subscription import build_subscription, filter_by_tags
from rocketq.client.model import MessageSelector
from rocketq.common.message import MessageExt


def test_tag_expressions() -> None:
    sub = build_subscription("T", "TagA || TagB", sub_version=7)
    assert (sub.sub_string, sub.tags_set, sub.code_set, sub.sub_version) == (
        "TagA || TagB",
        {"TagA", "TagB"},
        {2598919, 2598920},
        7,
    )
    for everything in (None, "", "*", MessageSelector.by_tag("*")):
        sub = build_subscription("T", everything)
        assert (sub.sub_string, sub.tags_set, sub.expression_type) == ("*", set(), "TAG")
    sql = build_subscription("T", MessageSelector.by_sql("a > 5"))
    assert (sql.expression_type, sql.sub_string, sql.tags_set) == ("SQL92", "a > 5", set())


def test_client_side_tag_recheck() -> None:
    msgs = [MessageExt("T", b"1", tags="TagA"), MessageExt("T", b"2", tags="TagC"), MessageExt("T", b"3")]
    assert [m.body for m in filter_by_tags(msgs, build_subscription("T", "TagA || TagB"))] == [b"1"]
    assert filter_by_tags(msgs, build_subscription("T", "*")) == msgs
    assert filter_by_tags(msgs, build_subscription("T", MessageSelector.by_sql("x = 1"))) == msgs


def test_retry_messages_get_their_topic_back() -> None:
    m = MessageExt("%RETRY%g", b"x", properties={"RETRY_TOPIC": "Orders"})
    other = MessageExt("%RETRY%other", b"x", properties={"RETRY_TOPIC": "Orders"})
    reset_retry_topic([m, other], "g")
    assert (m.topic, other.topic) == ("Orders", "%RETRY%other")
