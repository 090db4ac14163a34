"""Subscriptions: building SubscriptionData from "TagA || TagB" / "*" / SQL92, and the client-side tag re-check.

Port of org.apache.rocketmq.common.filter.FilterAPI.buildSubscriptionData and the tag filter of
PullAPIWrapper.processPullResult (4.9.8). The broker filters by tag hash code; hash collisions pass, so
the client keeps only messages whose tag string is in the subscription's tag set. SQL92 expressions are
passed through untouched (the broker evaluates them); `check_in_brokers` asks the brokers to compile them
first (MQClientInstance.checkClientInBroker), so a bad expression fails subscribe/start instead of every pull.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rocketq.client.errors import MQClientError
from rocketq.client.model import ExpressionType, MessageSelector
from rocketq.common import constants as C
from rocketq.common.message import MessageExt
from rocketq.common.tags import SUB_ALL, parse_tag_expression
from rocketq.remoting.errors import BrokerResponseError, RequestCodeNotSupportedError
from rocketq.remoting.protocol.bodies.heartbeat import SubscriptionData

if TYPE_CHECKING:
    from rocketq.client.instance import ClientInstance


def build_subscription(
    topic: str, selector: str | MessageSelector | None, sub_version: int | None = None
) -> SubscriptionData:
    """SubscriptionData for `topic` from a tag expression string or a MessageSelector."""
    version = sub_version if sub_version is not None else time.time_ns() // 1_000_000
    if isinstance(selector, MessageSelector) and selector.expression_type is ExpressionType.SQL92:
        return SubscriptionData(
            topic=topic, sub_string=selector.expression, sub_version=version, expression_type="SQL92"
        )
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


async def check_in_brokers(inst: ClientInstance, group: str, subs: Iterable[SubscriptionData]) -> None:
    """CHECK_CLIENT_CONFIG of every non-tag subscription with the masters serving its topic.

    Raises MQClientError (the broker's response code, its remark and the expression) when one rejects
    it. The topic's route should be fresh (brokers not in any route cannot be asked).
    """
    for sub in list(subs):
        if is_tag_subscription(sub):
            continue
        route = inst.route_table.get(sub.topic)
        names = sorted({bd.broker_name for bd in route.broker_datas}) if route else sorted(inst.broker_addrs)
        for name in names:
            addr = inst.find_broker_addr_in_subscribe(name, C.MASTER_ID, only_this=True)
            if addr is None:
                continue
            try:
                await inst.api.check_client_config(addr, inst.client_id, group, sub)
            except RequestCodeNotSupportedError:
                continue
            except BrokerResponseError as exc:
                raise MQClientError(
                    f"the broker {addr} rejects the {sub.expression_type} subscription {sub.sub_string!r} of "
                    f"{sub.topic}: {exc.remark}",
                    exc.code,
                ) from exc


async def check_pending_subscription(
    inst: ClientInstance, group: str, topic: str, sub: SubscriptionData, pending: dict[str, SubscriptionData]
) -> bool:
    """A subscription made after start(): have the brokers check it, then take it out of `pending`.

    True when `sub` is still the pending subscription of `topic` (nobody subscribed again meanwhile), so
    the caller may put it in use. MQClientError from the check propagates (the subscription is dropped).
    """
    try:
        if not is_tag_subscription(sub):
            await inst.update_topic_route(topic)
            await check_in_brokers(inst, group, [sub])
    finally:
        current = pending.get(topic) is sub
        if current:
            del pending[topic]
    return current
