"""rocketq.client: the asyncio SDK (producers, consumers, admin); rocketq.client.blocking is its twin.

The names below are the public API (docs/api.md); everything else in this package is internal.
"""

from rocketq.client.admin import Admin
from rocketq.client.config import ConsumeFromWhere, MessageModel
from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.consumer.push import PushConsumer
from rocketq.client.consumer.simple import SimpleConsumer
from rocketq.client.model import ConsumeResult, LocalTransactionState, MessageSelector, SendResult, SendStatus
from rocketq.client.producer.producer import Producer
from rocketq.client.producer.transaction import TransactionProducer
from rocketq.common.message import Message, MessageExt, MessageQueue

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
