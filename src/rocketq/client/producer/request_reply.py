"""Request-reply (RocketMQ 4.6+): the requester's futures, the request properties, the reply message.

Port of org.apache.rocketmq.client.utils.MessageUtil#createReplyMessage, RequestFutureHolder and
RequestResponseFuture, and of ClientRemotingProcessor#receiveReplyMessage (4.9.8). A request carries
CORRELATION_ID (a UUID), REPLY_TO_CLIENT (the requester's client id) and TTL (its timeout, ms). The
replier answers with create_reply_message(): to `<cluster>_REPLY_TOPIC` (CLUSTER is set by the broker
that stored the request), MSG_TYPE=reply, the three properties copied; such a message is sent with
SEND_REPLY_MESSAGE_V2 and the broker pushes it to the requester (PUSH_REPLY_MESSAGE_TO_CLIENT), whose
future of that correlation id completes. A reply nobody waits for (late, or for another process) is
dropped with one warning.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING

from rocketq.client.errors import MQClientError
from rocketq.common import constants as C
from rocketq.common.message import Message, MessageExt, decode_properties
from rocketq.common.record.codec import decompress_body
from rocketq.remoting.protocol.headers.send import ReplyMessageRequestHeader

if TYPE_CHECKING:
    from collections.abc import Mapping

log = logging.getLogger("rocketq.client.request_reply")

# correlation id -> the requester's future (RequestFutureHolder's table; process-wide, as Java's singleton)
_PENDING: dict[str, asyncio.Future[MessageExt]] = {}


def prepare_request(msg: Message, client_id: str, timeout_ms: int) -> str:
    """Mark `msg` as a request from `client_id`; its new correlation id (MessageUtil / prepareSendRequest)."""
    correlation_id = str(uuid.uuid4())
    msg.properties[C.PROPERTY_CORRELATION_ID] = correlation_id
    msg.properties[C.PROPERTY_MESSAGE_REPLY_TO_CLIENT] = client_id
    msg.properties[C.PROPERTY_MESSAGE_TTL] = str(timeout_ms)
    return correlation_id


def await_reply(correlation_id: str) -> asyncio.Future[MessageExt]:
    """Register the future a reply with this correlation id completes (call before sending)."""
    future: asyncio.Future[MessageExt] = asyncio.get_running_loop().create_future()
    _PENDING[correlation_id] = future
    return future


def forget(correlation_id: str) -> None:
    _PENDING.pop(correlation_id, None)


def pending_requests() -> int:
    return len(_PENDING)


def create_reply_message(request: MessageExt, body: bytes) -> Message:
    """The reply to `request` (a message received by a consumer), to send with any producer.

    Raises MQClientError when `request` is not a request-reply request (no CLUSTER or CORRELATION_ID).
    """
    props = request.properties
    cluster = props.get(C.PROPERTY_CLUSTER)
    if cluster is None:
        raise MQClientError(
            f"create reply message fail, requestMessage error, property[{C.PROPERTY_CLUSTER}] is null.", 10007
        )
    if C.PROPERTY_CORRELATION_ID not in props:
        raise MQClientError(
            f"message {request.msg_id} is not a request: it has no {C.PROPERTY_CORRELATION_ID}", 10007
        )
    reply = Message(f"{cluster}_{C.REPLY_TOPIC_POSTFIX}", body)
    reply.properties[C.PROPERTY_MESSAGE_TYPE] = C.REPLY_MESSAGE_FLAG
    for name in (C.PROPERTY_CORRELATION_ID, C.PROPERTY_MESSAGE_REPLY_TO_CLIENT, C.PROPERTY_MESSAGE_TTL):
        if name in props:
            reply.properties[name] = props[name]
    return reply


def is_reply(properties: Mapping[str, str]) -> bool:
    return properties.get(C.PROPERTY_MESSAGE_TYPE) == C.REPLY_MESSAGE_FLAG


def receive_reply(ext_fields: Mapping[str, str], body: bytes, remote_addr: str) -> None:
    """PUSH_REPLY_MESSAGE_TO_CLIENT: complete the waiting request, or drop the reply with one warning."""
    h = ReplyMessageRequestHeader.from_ext_fields(ext_fields)
    properties = decode_properties(h.properties) if h.properties else {}
    properties[C.PROPERTY_REPLY_MESSAGE_ARRIVE_TIME] = str(int(time.time() * 1000))
    compressed = h.sys_flag & C.MessageSysFlag.COMPRESSED_FLAG
    msg = MessageExt(
        h.topic,
        decompress_body(body, h.sys_flag) if compressed else body,
        properties=properties,
        flag=h.flag,
        queue_id=h.queue_id,
        sys_flag=h.sys_flag,
        born_timestamp=h.born_timestamp,
        store_timestamp=h.store_timestamp,
        born_host=_host(h.born_host),
        store_host=_host(h.store_host),
        reconsume_times=h.reconsume_times or 0,
    )
    correlation_id = properties.get(C.PROPERTY_CORRELATION_ID, "")
    future = _PENDING.get(correlation_id)
    if future is None or future.done():
        log.warning(
            "receive reply message, but not matched any request, CorrelationId: %s , reply from host: %s",
            correlation_id,
            remote_addr,
        )
        return
    future.set_result(msg)


def _host(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port) if port.isdigit() else 0
