"""The SDK's small value types: SendResult/SendStatus, ConsumeResult, MessageSelector, transaction states.

Port of org.apache.rocketmq.client.producer.{SendResult, SendStatus, LocalTransactionState},
consumer.listener.{ConsumeConcurrentlyStatus, ConsumeOrderlyStatus} (merged into one ConsumeResult),
consumer.{MessageSelector, PullResult, PullStatus}.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from rocketq.common.message import MessageExt, MessageQueue


class SendStatus(enum.Enum):
    """Outcome of a send that reached a broker. Anything but SEND_OK means stored, with a caveat."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


@dataclass(slots=True)
class SendResult:
    """What a send returns: status, ids, and the queue and offset the message got."""

    status: SendStatus
    msg_id: str
    """The client id (UNIQ_KEY); for a batch the ids of all messages joined by ','."""
    offset_msg_id: str
    """The broker id (store host + commit-log offset), what VIEW_MESSAGE_BY_ID takes."""
    queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = "DefaultRegion"
    trace_on: bool = True

    @property
    def send_status(self) -> SendStatus:  # Java name
        return self.status

    @property
    def message_queue(self) -> MessageQueue:  # Java name
        return self.queue


class ConsumeResult(enum.Enum):
    """What a listener returns.

    Concurrent listeners: SUCCESS or RECONSUME_LATER (the message goes back to the broker and comes
    again later). Orderly listeners: SUCCESS or SUSPEND_CURRENT_QUEUE_A_MOMENT (the queue pauses and
    the same batch is retried). A listener that returns None counts as SUCCESS; one that raises counts
    as RECONSUME_LATER / SUSPEND_CURRENT_QUEUE_A_MOMENT.
    """

    SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"
    # Java spellings.
    CONSUME_SUCCESS = "CONSUME_SUCCESS"


class ExpressionType(enum.Enum):
    TAG = "TAG"
    SQL92 = "SQL92"


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """A subscription filter: a tag expression ("TagA || TagB", "*") or an SQL92 expression."""

    expression_type: ExpressionType
    expression: str

    @classmethod
    def by_tag(cls, expression: str | None = "*") -> MessageSelector:
        return cls(ExpressionType.TAG, expression or "*")

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        if not expression or not expression.strip():
            raise ValueError("an SQL92 selector needs an expression")
        return cls(ExpressionType.SQL92, expression)

    # Java names
    bySql = by_sql
    byTag = by_tag


class LocalTransactionState(enum.Enum):
    """Result of a local transaction or of a transaction check."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"
    # Short names (aliases of the Java spellings).
    COMMIT = "COMMIT_MESSAGE"
    ROLLBACK = "ROLLBACK_MESSAGE"
    UNKNOWN = "UNKNOW"


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


@dataclass(slots=True)
class PullResult:
    """One pull's answer: status, where to pull next, the queue's bounds and the messages found."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = 0
