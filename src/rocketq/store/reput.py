"""Re-putting a stored message: the new message that stores it again under another topic and queue.

The one builder behind the delay-level schedule (to REAL_TOPIC/REAL_QID when due), the timer service
(likewise) and the broker's CONSUMER_SEND_MSG_BACK (to %RETRY%/%DLQ%). Java builds the same
MessageExtBrokerInner in ScheduleMessageService.messageTimeup, TimerMessageStore.convertMessage and
SendMessageProcessor.asyncConsumerSendMsgBack: body (as stored), flag, sys flag, born timestamp and
host and store host carried over, the tags code computed from TAGS of the new properties.
"""

from __future__ import annotations

from rocketq.common import constants as C
from rocketq.common.message import MessageExt
from rocketq.common.tags import tags_code as tags_code_of_tag
from rocketq.store.message import BrokerMessage


def real_destination(properties: dict[str, str]) -> tuple[str, int] | None:
    """(REAL_TOPIC, REAL_QID) of a parked message, or None when either is missing or unusable."""
    topic = properties.get(C.PROPERTY_REAL_TOPIC)
    try:
        queue_id = int(properties.get(C.PROPERTY_REAL_QUEUE_ID, ""))
    except ValueError:
        return None
    if not topic or queue_id < 0:
        return None
    return topic, queue_id


def reput_message(
    ext: MessageExt,
    topic: str,
    queue_id: int,
    properties: dict[str, str],
    *,
    reconsume_times: int | None = None,
) -> BrokerMessage:
    """`ext` to be stored again in `topic`/`queue_id` with `properties` (a dict of its own: the
    message keeps it); reconsume times as stored unless given."""
    return BrokerMessage(
        topic=topic,
        queue_id=queue_id,
        body=ext.body,
        flag=ext.flag,
        properties=properties,
        tags_code=tags_code_of_tag(properties.get(C.PROPERTY_TAGS)),
        sys_flag=ext.sys_flag,
        born_timestamp=ext.born_timestamp,
        born_host=ext.born_host,
        store_host=ext.store_host,
        reconsume_times=ext.reconsume_times if reconsume_times is None else reconsume_times,
    )
