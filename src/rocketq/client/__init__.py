"""rocketq.client: the asyncio SDK (producers, consumers, admin); rocketq.client.blocking is its twin.

The names below are the public API (docs/api.md); everything else in this package is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketq.common.lazy_names import lazy_getattr

if TYPE_CHECKING:
    from rocketq.client.admin import Admin
    from rocketq.client.config import ConsumeFromWhere, MessageModel
    from rocketq.client.consumer.lite_pull import LitePullConsumer
    from rocketq.client.consumer.push import PushConsumer
    from rocketq.client.consumer.simple import SimpleConsumer
    from rocketq.client.model import (
        ConsumeResult,
        LocalTransactionState,
        MessageSelector,
        SendResult,
        SendStatus,
    )
    from rocketq.client.producer.producer import Producer
    from rocketq.client.producer.transaction import TransactionProducer
    from rocketq.common.message import Message, MessageExt, MessageQueue

# Where each public name lives. They are imported on first use (PEP 562), so a process that needs one
# part (Spark's Python workers import only the pull API) does not pay for the whole SDK's import.
_WHERE = {
    "Admin": "rocketq.client.admin",
    "ConsumeFromWhere": "rocketq.client.config",
    "MessageModel": "rocketq.client.config",
    "LitePullConsumer": "rocketq.client.consumer.lite_pull",
    "PushConsumer": "rocketq.client.consumer.push",
    "SimpleConsumer": "rocketq.client.consumer.simple",
    "ConsumeResult": "rocketq.client.model",
    "LocalTransactionState": "rocketq.client.model",
    "MessageSelector": "rocketq.client.model",
    "SendResult": "rocketq.client.model",
    "SendStatus": "rocketq.client.model",
    "Producer": "rocketq.client.producer.producer",
    "TransactionProducer": "rocketq.client.producer.transaction",
    "Message": "rocketq.common.message",
    "MessageExt": "rocketq.common.message",
    "MessageQueue": "rocketq.common.message",
}

__getattr__ = lazy_getattr(__name__, _WHERE)


__all__ = [
    "Admin",
    "ConsumeFromWhere",
    "ConsumeResult",
    "LitePullConsumer",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "Producer",
    "PushConsumer",
    "SendResult",
    "SendStatus",
    "SimpleConsumer",
    "TransactionProducer",
]
