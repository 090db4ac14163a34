"""The message model shared by store, broker and client: Message, MessageExt, MessageQueue.

Port of org.apache.rocketmq.common.message.{Message, MessageExt, MessageQueue}. As in Java, tags, keys,
delay level and the other well-known attributes live in `properties` (so they reach the wire in the
properties string of docs/protocol.md 4.3); the attributes below are views over that dict.
Hot-path classes use __slots__; no per-message validation beyond decoding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rocketq.common import constants as C
from rocketq.common.record.properties import decode_properties, encode_properties

__all__ = ["Message", "MessageExt", "MessageQueue", "decode_properties", "encode_properties"]


class Message:
    """A message to send: topic, body, flag and properties (tags, keys, delay level, user properties)."""

    __slots__ = ("body", "flag", "properties", "topic", "transaction_id")

    def __init__(
        self,
        topic: str = "",
        body: bytes = b"",
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        properties: Mapping[str, str] | None = None,
        flag: int = 0,
        delay_level: int = 0,
        wait_store_msg_ok: bool = True,
    ) -> None:
        self.topic = topic
        self.body = body
        self.flag = flag
        self.properties: dict[str, str] = dict(properties) if properties else {}
        self.transaction_id: str | None = None
        if tags:
            self.tags = tags
        if keys:
            self.keys = keys
        if delay_level:
            self.delay_level = delay_level
        if not wait_store_msg_ok:
            self.properties[C.PROPERTY_WAIT_STORE_MSG_OK] = "false"

    # -- well-known properties -----------------------------------------------------------------
    @property
    def tags(self) -> str | None:
        return self.properties.get(C.PROPERTY_TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(C.PROPERTY_TAGS, value)

    @property
    def keys(self) -> list[str]:
        raw = self.properties.get(C.PROPERTY_KEYS)
        return [k for k in raw.split(C.KEY_SEPARATOR) if k] if raw else []

    @keys.setter
    def keys(self, value: str | Iterable[str] | None) -> None:
        if value is None:
            self.properties.pop(C.PROPERTY_KEYS, None)
        elif isinstance(value, str):
            self._set(C.PROPERTY_KEYS, value)
        else:
            self._set(C.PROPERTY_KEYS, C.KEY_SEPARATOR.join(value))

    @property
    def delay_level(self) -> int:
        raw = self.properties.get(C.PROPERTY_DELAY_TIME_LEVEL)
        try:
            return int(raw) if raw else 0
        except ValueError:
            return 0

    @delay_level.setter
    def delay_level(self, level: int) -> None:
        self._set(C.PROPERTY_DELAY_TIME_LEVEL, str(level) if level else None)

    @property
    def deliver_time_ms(self) -> int:
        """Absolute delivery time of a timer message (epoch ms), 0 when none."""
        raw = self.properties.get(C.PROPERTY_TIMER_DELIVER_MS) or self.properties.get(
            C.PROPERTY_START_DELIVER_TIME
        )
        try:
            return int(raw) if raw else 0
        except ValueError:
            return 0

    @deliver_time_ms.setter
    def deliver_time_ms(self, when_ms: int) -> None:
        self._set(C.PROPERTY_TIMER_DELIVER_MS, str(when_ms) if when_ms else None)

    @property
    def wait_store_msg_ok(self) -> bool:
        return self.properties.get(C.PROPERTY_WAIT_STORE_MSG_OK, "true") != "false"

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(C.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    def get_property(self, name: str, default: str | None = None) -> str | None:
        return self.properties.get(name, default)

    def put_user_property(self, name: str, value: str) -> None:
        self.properties[name] = value

    def _set(self, key: str, value: str | None) -> None:
        if value is None or value == "":
            self.properties.pop(key, None)
        else:
            self.properties[key] = value

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(topic={self.topic!r}, tags={self.tags!r}, keys={self.keys!r}, "
            f"body={len(self.body)}B, properties={self.properties!r})"
        )


class MessageExt(Message):
    """A stored message as read back: the record fields of docs/protocol.md 4.1 plus the client's msgId."""

    __slots__ = (
        "body_crc",
        "born_host",
        "born_timestamp",
        "broker_name",
        "commit_log_offset",
        "offset_msg_id",
        "prepared_transaction_offset",
        "queue_id",
        "queue_offset",
        "reconsume_times",
        "store_host",
        "store_size",
        "store_timestamp",
        "sys_flag",
    )

    def __init__(self, topic: str = "", body: bytes = b"", **kwargs: Any) -> None:
        ext = {name: kwargs.pop(name) for name in list(kwargs) if name in MessageExt.__slots__}
        super().__init__(topic, body, **kwargs)
        self.queue_id: int = ext.get("queue_id", 0)
        self.queue_offset: int = ext.get("queue_offset", 0)
        self.commit_log_offset: int = ext.get("commit_log_offset", 0)
        self.store_size: int = ext.get("store_size", 0)
        self.sys_flag: int = ext.get("sys_flag", 0)
        self.body_crc: int = ext.get("body_crc", 0)
        self.born_timestamp: int = ext.get("born_timestamp", 0)
        self.store_timestamp: int = ext.get("store_timestamp", 0)
        self.born_host: tuple[str, int] = ext.get("born_host", ("127.0.0.1", 0))
        self.store_host: tuple[str, int] = ext.get("store_host", ("127.0.0.1", 0))
        self.reconsume_times: int = ext.get("reconsume_times", 0)
        self.prepared_transaction_offset: int = ext.get("prepared_transaction_offset", 0)
        self.offset_msg_id: str = ext.get("offset_msg_id", "")
        self.broker_name: str = ext.get("broker_name", "")

    @property
    def msg_id(self) -> str:
        """The id users see: UNIQ_KEY when the producer set one, else the offset msgId (Java MessageClientExt)."""
        return self.uniq_key or self.offset_msg_id

    def __repr__(self) -> str:
        return (
            f"MessageExt(topic={self.topic!r}, queue_id={self.queue_id}, queue_offset={self.queue_offset}, "
            f"msg_id={self.msg_id!r}, tags={self.tags!r}, reconsume_times={self.reconsume_times}, "
            f"body={len(self.body)}B)"
        )


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """One queue of a topic on one broker; ordered like Java's MessageQueue.compareTo (topic, broker, id)."""

    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MessageQueue:
        return cls(str(data["topic"]), str(data["brokerName"]), int(data["queueId"]))

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"
