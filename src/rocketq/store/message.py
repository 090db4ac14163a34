"""The message as the broker hands it to the store (Java MessageExtBrokerInner / MessageExtBatch)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class BrokerMessage:
    """One message to append. `properties` is the dict; the store encodes it (docs/protocol.md 4.3).

    `tags_code` is the consume-queue tag code (tag hash, or the delivery time for SCHEDULE_TOPIC_XXXX);
    the broker sets it, the store never parses tags itself except on recovery/dispatch rebuild.
    """

    topic: str
    queue_id: int
    body: bytes
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    tags_code: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("127.0.0.1", 0)
    store_host: tuple[str, int] = ("127.0.0.1", 0)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    # Filled by the store on append:
    store_timestamp: int = 0
    commit_log_offset: int = 0
    queue_offset: int = 0
    # `properties` as the record stores them (encode_properties_bytes), when the broker had them without
    # encoding the dict (properties_for_store); None: the store encodes the dict. Whoever changes
    # `properties` afterwards sets it back to None.
    properties_bytes: bytes | None = None


@dataclass(slots=True)
class BrokerMessageBatch:
    """A SEND_BATCH_MESSAGE: shared topic/queue/host fields, one (flag, body, properties) per entry."""

    topic: str
    queue_id: int
    entries: list[tuple[int, bytes, dict[str, str]]]
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("127.0.0.1", 0)
    store_host: tuple[str, int] = ("127.0.0.1", 0)
    reconsume_times: int = 0
    # Each entry's properties as its record stores them (decode_batch_for_store), None where the store
    # encodes the entry's dict; None: the store encodes every dict.
    properties_bytes: list[bytes | None] | None = None
