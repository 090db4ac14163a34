"""The SDK without await: the same classes, names and arguments, for plain scripts and threads.

    from rocketq.client.blocking import Producer, PushConsumer, Message
    with Producer("pg", namesrv_addr="127.0.0.1:9876") as producer:
        result = producer.send(Message("T", b"hello"))

Every object runs its async twin (rocketq.client) on one background event-loop thread per process;
a call hands the coroutine to that loop and waits for its result, so any number of threads may use the
clients at once. Listeners run on the consumer's worker threads (sync functions) or on the loop (async
functions); a blocking call made from inside the loop thread (an async listener) raises instead of
deadlocking. `send_async` and `request_async` return a concurrent.futures.Future. The classes are
generated from the async ones with their signatures and docstrings (blocking_gen.py; a unit test checks
they are in step), so type checkers see every method.
"""

from __future__ import annotations

from rocketq.client import (
    ConsumeFromWhere,
    ConsumeResult,
    LocalTransactionState,
    Message,
    MessageExt,
    MessageModel,
    MessageQueue,
    MessageSelector,
    SendResult,
    SendStatus,
)
from rocketq.client._blocking_base import run, submit
from rocketq.client._blocking_classes import (
    Admin,
    LitePullConsumer,
    Producer,
    PushConsumer,
    SimpleConsumer,
    TransactionProducer,
)

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
    "run",
    "submit",
]
