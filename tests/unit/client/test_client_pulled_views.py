"""Pulled messages get MIN_OFFSET / MAX_OFFSET (Java PullAPIWrapper.processPullResult) when their properties
are first read: the same properties, transaction ids and broker names as decoding every message at once."""

from __future__ import annotations

import copy
import pickle
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.consumer.pull_api import PullAPIWrapper
from rocketq.client.consumer.pulled import PulledMessageExt, add_properties, decode_pulled
from rocketq.client.model import PullResult, PullStatus
from rocketq.common.message import MessageExt, MessageQueue
from rocketq.common.record.codec import decode_records, encode_record
from rocketq.remoting.protocol.bodies.heartbeat import SubscriptionData

MQ = MessageQueue("T", "broker-a", 3)
TRANSACTIONAL = b"TRAN_MSG\x01true"


def _body(props: list[dict[str, str]]) -> bytes:
    return b"".join(
        encode_record(MessageExt("T", b"body%d" % i, queue_offset=i, commit_log_offset=i * 200, properties=p))
        for i, p in enumerate(props)
    )


def _pulled(body: bytes, sub: SubscriptionData, *, views: bool) -> list[Any]:
    wrapper = PullAPIWrapper(None, "g")  # type: ignore[arg-type]  # process() needs no instance
    msgs = decode_pulled(body) if views else decode_records(body)
    result = PullResult(PullStatus.FOUND, 9, 2, 77, msgs, 0)
    transactional = TRANSACTIONAL in body if views else True
    return wrapper.process(MQ, result, sub, transactional).messages


def _seen(msgs: list[Any]) -> list[tuple[Any, ...]]:
    return [(m.queue_offset, m.broker_name, m.transaction_id, m.properties, m.body) for m in msgs]


property_maps = st.lists(
    st.dictionaries(
        st.sampled_from(["TAGS", "KEYS", "TRAN_MSG", "UNIQ_KEY", "a"]),
        st.sampled_from(["true", "false", "x", "id-1"]),
        max_size=4,
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(property_maps, st.sampled_from(["*", "x", "x || true"]))
def test_views_read_as_the_eager_messages(props: list[dict[str, str]], expression: str) -> None:
    sub = SubscriptionData(
        topic="T",
        sub_string=expression,
        tags_set=set() if expression == "*" else set(expression.split(" || ")),
    )
    assert _seen(_pulled(_body(props), sub, views=True)) == _seen(_pulled(_body(props), sub, views=False))


def test_undecoded_properties_wait_for_their_first_read() -> None:
    (msg,) = _pulled(_body([{"UNIQ_KEY": "id-1"}]), SubscriptionData(topic="T"), views=True)
    assert isinstance(msg, PulledMessageExt) and msg.broker_name == "broker-a"
    assert msg.properties == {"UNIQ_KEY": "id-1", "MIN_OFFSET": "2", "MAX_OFFSET": "77"}
    for clone in (copy.copy(msg), pickle.loads(pickle.dumps(msg))):
        assert type(clone) is MessageExt and clone.properties == msg.properties


def test_a_transactional_pull_decodes_at_once_and_sets_the_transaction_id() -> None:
    body = _body([{"UNIQ_KEY": "id-1", "TRAN_MSG": "true"}, {"UNIQ_KEY": "id-2"}])
    first, second = _pulled(body, SubscriptionData(topic="T"), views=True)
    assert (first.transaction_id, second.transaction_id) == ("id-1", None)
    assert second.properties["MAX_OFFSET"] == "77"


@settings(max_examples=100, deadline=None)
@given(property_maps, st.lists(st.booleans(), min_size=6, max_size=6))
def test_properties_added_later_read_as_set_at_once(
    props: list[dict[str, str]], read_first: list[bool]
) -> None:
    """add_properties (the push consumer's CONSUME_START_TIME) on views, some already read: the same maps,
    in the same order, as setting each entry on eagerly decoded messages."""
    sub = SubscriptionData(topic="T")
    views, eager = _pulled(_body(props), sub, views=True), _pulled(_body(props), sub, views=False)
    for msg, read in zip(views, read_first, strict=False):
        if read:
            _ = msg.properties
    for msgs in (views, eager):
        add_properties(msgs, "CONSUME_START_TIME", "123", "MAX_OFFSET", "80")
        add_properties(msgs, "x", "y")
    assert [list(m.properties.items()) for m in views] == [list(m.properties.items()) for m in eager]
