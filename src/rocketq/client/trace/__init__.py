"""Message trace (RocketMQ 4.x): hooks that record sends and consumes, written to RMQ_SYS_TRACE_TOPIC.

Turned on with `enable_msg_trace=True` (and optionally `customized_trace_topic=...`) on a Producer,
TransactionProducer or PushConsumer; read back with `Admin.query_msg_trace_by_id` or
`rocketq admin query-msg-trace-by-id`. See docs/observability.md.
"""

from rocketq.client.trace.dispatcher import AsyncTraceDispatcher
from rocketq.client.trace.encoder import (
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
    decode,
    encode,
)

__all__ = [
    "AsyncTraceDispatcher",
    "ConsumeReturnType",
    "TraceBean",
    "TraceContext",
    "TraceMessageType",
    "TraceType",
    "decode",
    "encode",
]
