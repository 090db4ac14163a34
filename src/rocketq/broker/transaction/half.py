"""The send path's half-message hook: park a transactional message in RMQ_SYS_TRANS_HALF_TOPIC.

Port of TransactionalMessageBridge.parseHalfMessageInner (4.9.8; docs/protocol.md 2.4, the TRAN_MSG rule): REAL_TOPIC
and REAL_QID keep the destination, the transaction bits of the sys flag are cleared (so the record
gets a consume-queue entry in the half topic, and none in the real one), queue 0.
Deviation: a half message asking for a delay level or a delivery time is MESSAGE_ILLEGAL (Java 4.9.8
clients strip DELAY before sending; a Java broker given one would park the half message in the
schedule topic, where no checker finds it).
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import RequestError
from rocketq.broker.topic_config import RW
from rocketq.common import constants as C
from rocketq.common.constants import MessageSysFlag
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.store.message import BrokerMessage
from rocketq.store.timer import is_timer_request


def _delay_level(properties: dict[str, str]) -> int:
    try:
        return int(properties.get(C.PROPERTY_DELAY_TIME_LEVEL) or 0)
    except ValueError:
        return 0


def prepare_half_message(ctx: BrokerContext, msg: BrokerMessage) -> BrokerMessage:
    """Rewrite `msg` (in place) into the half topic; RequestError(MESSAGE_ILLEGAL) for a delayed one."""
    properties = msg.properties
    level = _delay_level(properties)
    if level > 0:
        raise RequestError(
            ResponseCode.MESSAGE_ILLEGAL, f"a transactional message cannot have a delay level (DELAY={level})"
        )
    if is_timer_request(properties):
        raise RequestError(
            ResponseCode.MESSAGE_ILLEGAL, "a transactional message cannot have a delivery time"
        )
    ctx.topic_config_manager.create_topic_in_send_message_back_method(C.RMQ_SYS_TRANS_HALF_TOPIC, 1, RW, 0)
    properties[C.PROPERTY_REAL_TOPIC] = msg.topic
    properties[C.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
    msg.sys_flag = MessageSysFlag.reset_transaction_value(msg.sys_flag, MessageSysFlag.TRANSACTION_NOT_TYPE)
    msg.topic = C.RMQ_SYS_TRANS_HALF_TOPIC
    msg.queue_id = 0
    return msg
