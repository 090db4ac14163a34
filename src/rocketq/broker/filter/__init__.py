"""Broker-side message filtering: TAG hash codes and SQL92 property expressions (RocketMQ 4.9.8).

Ports org.apache.rocketmq.filter (the SQL92 language, in sql92/) and org.apache.rocketmq.broker.filter
(ExpressionMessageFilter, ExpressionForRetryMessageFilter, ConsumerFilterManager). The broker owns
one ConsumerFilterManager and calls it as below; every refusal is a FilterError whose
`response_code` and `str()` are the response code and remark to answer with:

    manager = ConsumerFilterManager(enable_property_filter=cfg.enable_property_filter,
                                    filter_support_retry=cfg.filter_support_retry)

    HEART_BEAT (34), per consumer group, after registering the consumer (every heartbeat, as Java):
        errors = manager.register_group(group, consumer_data.subscription_data_set)
        -> 4.9.8 answers SUCCESS regardless (log the errors); a bad expression is simply not held.
    the group's last consumer gone (unregister or channel closed): manager.unregister(group)
    housekeeping (e.g. hourly):                                manager.clean()

    CHECK_CLIENT_CONFIG (46), for body.subscription_data:
        manager.check_client_config(sub.expression_type, sub.sub_string)
        -> TAG: returns. enablePropertyFilter off: FilterNotSupportedError, code 1 SYSTEM_ERROR,
           remark "The broker does not support consumer to filter message by SQL92".
           Bad expression: FilterParseError, code 23 SUBSCRIPTION_PARSE_FAILED, remark says where.

    PULL_MESSAGE (11) with FLAG_SUBSCRIPTION:
        message_filter = manager.filter_for_request(group, topic, header.expression_type,
                                                    header.subscription)
        -> FilterParseError (23), then FilterNotSupportedError (1).
    POP_MESSAGE (200050) with header exp / expType (5.x never looks at enablePropertyFilter there):
        message_filter = manager.filter_for_request(group, topic, header.exp_type, header.exp,
                                                    require_property_filter=False)
        -> FilterParseError (23).
    PULL_MESSAGE (11) without it (heartbeat subscription `sub`, after the SUBSCRIPTION_NOT_EXIST /
    SUBSCRIPTION_NOT_LATEST checks):
        message_filter = manager.filter_for_subscription(group, topic, sub.expression_type,
                                                         sub.sub_string, sub.code_set, header.sub_version)
        -> FilterDataNotExistError (27 FILTER_DATA_NOT_EXIST: the heartbeat's expression did not parse),
           FilterDataNotLatestError (28 FILTER_DATA_NOT_LATEST), then FilterNotSupportedError (1).

    The filter_for_* calls return None (no filtering) or an ExpressionMessageFilter to pass to store.get_message and to
    keep on a parked long-polling request; with filterSupportRetry on, a %RETRY% topic gets a filter
    that applies the group's expression for each message's original topic.

Lower level: sql92.compile_sql92(text) -> CompiledExpression (.matches(properties) -> bool),
Sql92MessageFilter(compiled), TagMessageFilter(codes), build_tag_filter(sub_string, codes).
"""

from rocketq.broker.filter.errors import (
    FilterDataNotExistError,
    FilterDataNotLatestError,
    FilterError,
    FilterEvaluationError,
    FilterNotSupportedError,
    FilterParseError,
)
from rocketq.broker.filter.message_filter import (
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    ExpressionMessageFilter,
    RetryTopicMessageFilter,
    Sql92MessageFilter,
    TagMessageFilter,
    build_tag_filter,
    is_tag_type,
)
from rocketq.broker.filter.properties import PropertySelector
from rocketq.broker.filter.registry import (
    ConsumerFilterData,
    ConsumerFilterManager,
    compile_filter_expression,
)
from rocketq.broker.filter.sql92 import CompiledExpression, compile_sql92
from rocketq.common.record.codec import record_properties

__all__ = [
    "EXPRESSION_TYPE_SQL92",
    "EXPRESSION_TYPE_TAG",
    "CompiledExpression",
    "ConsumerFilterData",
    "ConsumerFilterManager",
    "ExpressionMessageFilter",
    "FilterDataNotExistError",
    "FilterDataNotLatestError",
    "FilterError",
    "FilterEvaluationError",
    "FilterNotSupportedError",
    "FilterParseError",
    "PropertySelector",
    "RetryTopicMessageFilter",
    "Sql92MessageFilter",
    "TagMessageFilter",
    "build_tag_filter",
    "compile_filter_expression",
    "compile_sql92",
    "is_tag_type",
    "record_properties",
]
