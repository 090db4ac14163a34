"""Subscriptions: building SubscriptionData from "TagA || TagB" / "*" / SQL92, and the client-side tag re-check.

Port of org.apache.rocketmq.common.filter.FilterAPI.buildSubscriptionData and the tag filter of
PullAPIWrapper.processPullResult (4.9.8). The broker filters by tag hash code; hash collisions pass, so
the client keeps only messages whose tag string is in the subscription's tag set. SQL92 expressions are
passed through untouched (the broker evaluates them).
"""

from __future__ import annotations

import time

from rocketq.client.model import ExpressionType, MessageSelector
from rocketq.common.message import MessageExt
from rocketq.common.tags import SUB_ALL, parse_tag_expression
from rocketq.remoting.protocol.bodies.heartbeat import SubscriptionData


def build_subscription(topic: str, selector: str | MessageSelector | None, sub_version: int | None = None) -> SubscriptionData:
    """SubscriptionData for `topic` from a tag expression string or a MessageSelector."""
    version = sub_version if sub_version is not None else time.time_ns() // 1_000_000
    if isinstance(selector, MessageSelector) and selector.expression_type is ExpressionType.SQL92:
        return SubscriptionData(topic=topic, sub_string=selector.expression, sub_version=version, expression_type="SQL92")
    expression = selector.expression if isinstance(selector, MessageSelector) else selector
    parsed = parse_tag_expression(expression)
    return SubscriptionData(
        topic=topic,
        sub_string=SUB_ALL if parsed.matches_all else parsed.sub_string,
        tags_set=set(parsed.tags),
        code_set=set(parsed.codes),
        sub_version=version,
        expression_type="TAG",
    )


def is_tag_subscription(sub: SubscriptionData) -> bool:
    return not sub.expression_type or sub.expression_type == "TAG"


def filter_by_tags(msgs: list[MessageExt], sub: SubscriptionData) -> list[MessageExt]:
    """Keep the messages whose tag string the subscription names (all of them for "*" or SQL92)."""
    if not sub.tags_set or not is_tag_subscription(sub) or sub.class_filter_mode:
        return msgs
    tags = sub.tags_set
    return [m for m in msgs if m.tags is not None and m.tags in tags]
