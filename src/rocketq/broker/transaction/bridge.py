"""The store side of transactions: half, op and check-max-time records, and the check progress.

Port of org.apache.rocketmq.broker.transaction.queue.{TransactionalMessageBridge,
TransactionalMessageUtil} and of the record building of EndTransactionProcessor.endMessageTransaction
and DefaultTransactionalMessageCheckListener.toMessageExtBrokerInner (4.9.8). Half messages live in
RMQ_SYS_TRANS_HALF_TOPIC, their outcome markers ("op" messages, tag `d`, body = the half message's
queue offset as decimal text) in RMQ_SYS_TRANS_OP_HALF_TOPIC (same queue id), and the check progress
is the consumer offset of the internal group CID_RMQ_SYS_TRANS on both topics, as in Java.
Deviation: every half-message copy the checker writes carries TRAN_PREPARED_QUEUE_OFFSET = the queue
offset of the first half message of its transaction (Java sets it only on immunity copies), so that
an outcome reported for any copy settles all of them (see service.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.broker.topic_config import RW
from rocketq.common import constants as C
from rocketq.common.constants import MessageSysFlag
from rocketq.common.message import MessageExt
from rocketq.common.msg_id import UniqueIdGenerator
from rocketq.common.record.codec import decode_record, record_body
from rocketq.common.record.layout import RecordDecodeError
from rocketq.common.tags import java_hash_code
from rocketq.store.message import BrokerMessage
from rocketq.store.status import GetResult, PutResult

log = logging.getLogger("rocketq.broker.transaction")

HALF_TOPIC = C.RMQ_SYS_TRANS_HALF_TOPIC
OP_TOPIC = C.RMQ_SYS_TRANS_OP_HALF_TOPIC
CHECK_MAX_TIME_TOPIC = C.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC
TRANS_GROUP = C.CID_SYS_RMQ_TRANS
REMOVE_TAG = "d"
TCMT_QUEUE_NUMS = 1  # queues of TRANS_CHECK_MAX_TIME_TOPIC

# Properties that belong to the half message only (removed when the message is committed).
_HALF_ONLY = (C.PROPERTY_REAL_TOPIC, C.PROPERTY_REAL_QUEUE_ID, C.PROPERTY_TRANSACTION_PREPARED)


def parse_long(text: str | None, default: int = -1) -> int:
    """Java getLong: a number, or `default` (with an error logged) when it is not one."""
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        log.error("%r is not a number", text)
        return default


op_body = record_body  # the body of an op record: the half message's queue offset as text


def tags_code_of(properties: dict[str, str]) -> int:
    tags = properties.get(C.PROPERTY_TAGS)
    return java_hash_code(tags) if tags else 0


def origin_offset(msg: MessageExt) -> int:
    """Queue offset of the first half message of `msg`'s transaction (its own when it is the first)."""
    origin = parse_long(msg.properties.get(C.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET))
    return msg.queue_offset if origin < 0 else origin


class TransactionalMessageBridge:
    """Reads and writes of the transaction topics, and the CID_RMQ_SYS_TRANS offsets."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._ids = UniqueIdGenerator(ctx.broker_config.broker_ip1)

    # -- check progress --------------------------------------------------------------------------
    def fetch_consume_offset(self, topic: str, queue_id: int) -> int:
        """The group's offset, or the queue's first offset when there is none (-1: no such queue)."""
        offset = self.ctx.consumer_offset_manager.query_offset(TRANS_GROUP, topic, queue_id)
        if offset == -1:
            offset = self.ctx.store.get_min_offset_in_queue(topic, queue_id)
        return offset

    def update_consume_offset(self, topic: str, queue_id: int, offset: int) -> None:
        self.ctx.consumer_offset_manager.commit_offset(
            self.ctx.broker_addr, TRANS_GROUP, topic, queue_id, offset
        )

    def half_queue_ids(self) -> range:
        """Java fetchMessageQueues: the half topic's read queues (created with one queue if missing)."""
        config = self.ensure_topic(HALF_TOPIC, 1)
        return range(config.read_queue_nums)

    def ensure_topic(self, topic: str, queue_nums: int) -> Any:
        return self.ctx.topic_config_manager.create_topic_in_send_message_back_method(
            topic, queue_nums, RW, 0
        )

    # -- reads -------------------------------------------------------------------------------------
    def read(
        self, topic: str, queue_id: int, offset: int, max_count: int
    ) -> tuple[GetResult, list[MessageExt]]:
        """Records of a queue decoded (bodies left as stored); a record that does not decode is skipped."""
        result = self.ctx.store.get_message(TRANS_GROUP, topic, queue_id, offset, max_count, None)
        found: list[MessageExt] = []
        for record in result.records:
            try:
                found.append(decode_record(record, decompress_body=False)[0])
            except (RecordDecodeError, ValueError) as exc:
                log.error("a %s record at queue %d does not decode: %s", topic, queue_id, exc)
        return result, found

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        return self.ctx.store.look_message_by_offset(commit_log_offset)

    # -- writes ------------------------------------------------------------------------------------
    async def put(self, msg: BrokerMessage) -> PutResult:
        result = await self.ctx.store.put_message(msg)
        if not result.is_ok:
            log.error(
                "putting a %s record (queue %d) failed: %s %s",
                msg.topic,
                msg.queue_id,
                result.status.value,
                result.remark,
            )
        return result

    def renew_half_message(self, msg: MessageExt, origin: int) -> BrokerMessage:
        """Java renewHalfMessageInner (+ the origin offset): the same half message, to append again."""
        properties = dict(msg.properties)
        properties[C.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET] = str(origin)
        return BrokerMessage(
            topic=msg.topic,
            queue_id=msg.queue_id,
            body=msg.body,
            flag=msg.flag,
            properties=properties,
            tags_code=tags_code_of(properties),
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_host=msg.store_host,
            reconsume_times=msg.reconsume_times,
        )

    def final_message(self, half: MessageExt, commit_log_offset: int) -> BrokerMessage:
        """Java endMessageTransaction: the committed message, in its real topic and queue."""
        properties = {k: v for k, v in half.properties.items() if k not in _HALF_ONLY}
        return BrokerMessage(
            topic=half.properties.get(C.PROPERTY_REAL_TOPIC, ""),
            queue_id=parse_long(half.properties.get(C.PROPERTY_REAL_QUEUE_ID), 0),
            body=half.body,
            flag=half.flag,
            properties=properties,
            tags_code=tags_code_of(properties),
            sys_flag=MessageSysFlag.reset_transaction_value(
                half.sys_flag, MessageSysFlag.TRANSACTION_COMMIT_TYPE
            ),
            born_timestamp=half.born_timestamp,
            born_host=half.born_host,
            store_host=half.store_host,
            reconsume_times=half.reconsume_times,
            prepared_transaction_offset=commit_log_offset,
        )

    def check_max_time_message(self, half: MessageExt) -> BrokerMessage:
        """Java toMessageExtBrokerInner: a half message checked too often, kept for inspection."""
        self.ensure_topic(CHECK_MAX_TIME_TOPIC, TCMT_QUEUE_NUMS)
        properties = dict(half.properties)
        return BrokerMessage(
            topic=CHECK_MAX_TIME_TOPIC,
            queue_id=0,
            body=half.body,
            flag=half.flag,
            properties=properties,
            tags_code=tags_code_of(properties),
            sys_flag=half.sys_flag,
            born_timestamp=half.born_timestamp,
            born_host=half.born_host,
            store_host=half.store_host,
            reconsume_times=half.reconsume_times,
        )

    def op_message(self, half_queue_id: int, half_offset: int) -> BrokerMessage:
        """Java makeOpMessageInner: tag `d`, body = the half message's queue offset, from the broker itself."""
        now = self.ctx.clock.now_ms()
        host = self.ctx.store_host
        return BrokerMessage(
            topic=OP_TOPIC,
            queue_id=half_queue_id,
            body=str(half_offset).encode(),
            properties={
                C.PROPERTY_TAGS: REMOVE_TAG,
                C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: self._ids.next_id(now),
            },
            tags_code=java_hash_code(REMOVE_TAG),
            born_timestamp=now,
            born_host=host,
            store_host=host,
        )

    async def put_op_messages(self, half_queue_id: int, half_offsets: Iterable[int]) -> bool:
        """Mark half messages done; False when a marker could not be written (the checker will ask again)."""
        self.ensure_topic(OP_TOPIC, 1)
        ok = True
        for offset in half_offsets:
            result = await self.put(self.op_message(half_queue_id, offset))
            ok = ok and result.is_ok
        return ok
