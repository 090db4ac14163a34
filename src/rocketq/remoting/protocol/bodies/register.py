"""Broker registration bodies: TopicConfig, DataVersion, TopicConfigSerializeWrapper, RegisterBrokerBody, KVTable.

Ports of org.apache.rocketmq.common.{TopicConfig, DataVersion} and protocol.body.{TopicConfigSerializeWrapper,
RegisterBrokerBody, KVTable} (4.9.8; docs/protocol.md 5.3). RegisterBrokerBody has two wire forms: plain
JSON, and the zlib stream of length-prefixed parts a broker with `compressedRegister` sends, whose
topic configs use TopicConfig's five-token text form (topicSysFlag and order are not carried).
DataVersion's AtomicLong counter is a plain JSON number: `{"counter":3,"timestamp":1700000000000}`.
Deviation: a compressed body whose inflated size would pass MAX_INFLATED_BYTES is refused (Java has
no bound), so a hostile peer cannot make the NameServer allocate without limit.
"""

from __future__ import annotations

import enum
import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Self

from rocketq.common.constants import PermName
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.route import as_bool, as_int, as_list, as_mapping, as_str
from rocketq.remoting.protocol.errors import BodyDecodeError

DEFAULT_READ_QUEUE_NUMS = 16
DEFAULT_WRITE_QUEUE_NUMS = 16
MAX_INFLATED_BYTES = 64 * 1024 * 1024
_INT = struct.Struct(">i")


class RegisterBodyError(BodyDecodeError):
    """A REGISTER_BROKER body that does not decode (the NameServer answers SYSTEM_ERROR)."""


class TopicFilterType(enum.Enum):
    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"

    @classmethod
    def parse(cls, value: Any) -> TopicFilterType:
        """By name or by ordinal, as fastjson reads enums; anything else is SINGLE_TAG."""
        if isinstance(value, cls):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            members = list(cls)
            return members[value] if 0 <= value < len(members) else cls.SINGLE_TAG
        text = str(value).strip().upper() if value is not None else ""
        if text.isdigit():
            return cls.parse(int(text))
        return cls.__members__.get(text, cls.SINGLE_TAG)


# -- TopicConfig --------------------------------------------------------------------------------
@dataclass(slots=True)
class TopicConfig:
    """A topic's configuration on one broker (the broker's topics.json entry)."""

    topic_name: str = ""
    read_queue_nums: int = DEFAULT_READ_QUEUE_NUMS
    write_queue_nums: int = DEFAULT_WRITE_QUEUE_NUMS
    perm: int = PermName.PERM_READ | PermName.PERM_WRITE
    topic_filter_type: TopicFilterType = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False

    def java_string(self) -> str:
        """Java's TopicConfig.toString(), which remarks quote (a send's "request queueId[..] is illegal")."""
        return (
            f"TopicConfig [topicName={self.topic_name}, readQueueNums={self.read_queue_nums}, "
            f"writeQueueNums={self.write_queue_nums}, perm={PermName.to_string(self.perm)}, "
            f"topicFilterType={self.topic_filter_type.value}, topicSysFlag={self.topic_sys_flag}, "
            f"order={'true' if self.order else 'false'}]"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type.value,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            topic_name=as_str(d.get("topicName")),
            read_queue_nums=as_int(d.get("readQueueNums"), DEFAULT_READ_QUEUE_NUMS),
            write_queue_nums=as_int(d.get("writeQueueNums"), DEFAULT_WRITE_QUEUE_NUMS),
            perm=as_int(d.get("perm"), PermName.PERM_READ | PermName.PERM_WRITE),
            topic_filter_type=TopicFilterType.parse(d.get("topicFilterType")),
            topic_sys_flag=as_int(d.get("topicSysFlag", d.get("topicSynFlag"))),
            order=as_bool(d.get("order")),
        )

    def encode_text(self) -> str:
        """Java TopicConfig.encode(): `name read write perm FILTER_TYPE`."""
        return (
            f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} "
            f"{self.perm} {self.topic_filter_type.value}"
        )

    @classmethod
    def decode_text(cls, text: str) -> Self:
        """Java TopicConfig.decode(); RegisterBodyError unless it has exactly five valid tokens."""
        parts = text.split(" ")
        if len(parts) != 5:
            raise RegisterBodyError(f"topic config {text!r} does not have 5 space-separated fields")
        name, read, write, perm, filter_type = parts
        if filter_type not in TopicFilterType.__members__:
            raise RegisterBodyError(f"topic config {text!r} has an unknown topicFilterType")
        try:
            return cls(name, int(read), int(write), int(perm), TopicFilterType[filter_type])
        except ValueError:
            raise RegisterBodyError(f"topic config {text!r} has a non-integer count or perm") from None


# -- DataVersion --------------------------------------------------------------------------------
@dataclass(slots=True)
class DataVersion:
    """Version of a broker's topic table: equal only when both timestamp and counter are equal."""

    timestamp: int = 0
    counter: int = 0

    def next_version(self, now_ms: int) -> None:
        self.timestamp = now_ms
        self.counter += 1

    def assign_new_one(self, other: DataVersion) -> None:
        self.timestamp = other.timestamp
        self.counter = other.counter

    def copy(self) -> DataVersion:
        return DataVersion(self.timestamp, self.counter)

    def to_json(self) -> dict[str, Any]:
        return {"counter": self.counter, "timestamp": self.timestamp}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        counter = d.get("counter")
        if isinstance(counter, dict):  # a hand-written {"value": n} AtomicLong
            counter = counter.get("value")
        return cls(timestamp=as_int(d.get("timestamp")), counter=as_int(counter))

    def encode(self) -> bytes:
        return fastjson.dumps(self.to_json())

    @classmethod
    def decode(cls, data: bytes) -> Self:
        return cls.from_json(fastjson.loads(data))


# -- TopicConfigSerializeWrapper ----------------------------------------------------------------
@dataclass(slots=True)
class TopicConfigSerializeWrapper:
    """A broker's topic table with its DataVersion (register body part, GET_ALL_TOPIC_CONFIG body)."""

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "topicConfigTable": {name: tc.to_json() for name, tc in self.topic_config_table.items()},
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        table: dict[str, TopicConfig] = {}
        for name, tc in as_mapping(d.get("topicConfigTable")).items():
            config = TopicConfig.from_json(tc)
            if not config.topic_name:
                config.topic_name = str(name)
            table[str(name)] = config
        return cls(topic_config_table=table, data_version=DataVersion.from_json(d.get("dataVersion")))


# -- RegisterBrokerBody -------------------------------------------------------------------------
@dataclass(slots=True)
class RegisterBrokerBody:
    """REGISTER_BROKER body: the topic table and (always empty in 4.9.8) filter servers."""

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "filterServerList": list(self.filter_server_list),
            "topicConfigSerializeWrapper": self.topic_config_serialize_wrapper.to_json(),
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(
            topic_config_serialize_wrapper=TopicConfigSerializeWrapper.from_json(
                d.get("topicConfigSerializeWrapper")
            ),
            filter_server_list=[str(s) for s in as_list(d.get("filterServerList"))],
        )

    def encode(self, compress: bool = False) -> bytes:
        """The body bytes: JSON, or with `compress` the zlib stream of docs/protocol.md 5.3."""
        if not compress:
            return fastjson.dumps(self.to_json())
        wrapper = self.topic_config_serialize_wrapper
        parts = [_prefixed(wrapper.data_version.encode()), _INT.pack(len(wrapper.topic_config_table))]
        parts.extend(
            _prefixed(tc.encode_text().encode("utf-8")) for tc in wrapper.topic_config_table.values()
        )
        parts.append(_prefixed(json.dumps(self.filter_server_list, separators=(",", ":")).encode("utf-8")))
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode(cls, data: bytes, compressed: bool = False) -> Self:
        """Parse either form; RegisterBodyError says what is wrong with a body that does not parse."""
        if not compressed:
            try:
                return cls.from_json(fastjson.loads(data))
            except RegisterBodyError:
                raise
            except ValueError as exc:
                raise RegisterBodyError(f"the RegisterBrokerBody is not valid JSON: {exc}") from None
        return cls._decode_compressed(_inflate(data))

    @classmethod
    def _decode_compressed(cls, raw: bytes) -> Self:
        reader = _Reader(raw)
        data_version = DataVersion.from_json(_loads_json(reader.chunk("the DataVersion")))
        count = reader.int32("the topic count")
        if count < 0:
            raise RegisterBodyError(f"the compressed RegisterBrokerBody has a negative topic count {count}")
        table: dict[str, TopicConfig] = {}
        for _ in range(count):
            text = reader.chunk("a topic config").decode("utf-8", errors="replace")
            config = TopicConfig.decode_text(text)
            table[config.topic_name] = config
        filter_servers: list[str] = []
        try:
            filter_servers = [str(s) for s in as_list(json.loads(reader.chunk("the filter server list")))]
        except ValueError:
            pass  # Java logs and keeps an empty list
        wrapper = TopicConfigSerializeWrapper(topic_config_table=table, data_version=data_version)
        return cls(topic_config_serialize_wrapper=wrapper, filter_server_list=filter_servers)


def _prefixed(data: bytes) -> bytes:
    return _INT.pack(len(data)) + data


def _inflate(data: bytes) -> bytes:
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, MAX_INFLATED_BYTES)
    except zlib.error as exc:
        raise RegisterBodyError(f"the compressed RegisterBrokerBody does not inflate: {exc}") from None
    if inflater.unconsumed_tail:
        raise RegisterBodyError(f"the compressed RegisterBrokerBody inflates past {MAX_INFLATED_BYTES} bytes")
    return raw


def _loads_json(data: bytes) -> Any:
    try:
        return fastjson.loads(data)
    except ValueError as exc:
        raise RegisterBodyError(f"the compressed RegisterBrokerBody has a bad DataVersion: {exc}") from None


class _Reader:
    """Reads the length-prefixed parts of an inflated register body."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def int32(self, what: str) -> int:
        if self._pos + 4 > len(self._data):
            raise RegisterBodyError(f"the compressed RegisterBrokerBody ends before {what}")
        (value,) = _INT.unpack_from(self._data, self._pos)
        self._pos += 4
        return int(value)

    def chunk(self, what: str) -> bytes:
        length = self.int32(f"the length of {what}")
        if length < 0 or self._pos + length > len(self._data):
            raise RegisterBodyError(f"the compressed RegisterBrokerBody ends inside {what}")
        start = self._pos
        self._pos += length
        return self._data[start : self._pos]


# -- KVTable ------------------------------------------------------------------------------------
@dataclass(slots=True)
class KVTable:
    """`{"table":{"k":"v"}}`: a KV namespace (register response) or broker runtime info."""

    table: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"table": dict(self.table)}

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        d = as_mapping(obj)
        return cls(table={str(k): as_str(v) for k, v in as_mapping(d.get("table")).items()})


__all__ = [
    "DataVersion",
    "KVTable",
    "RegisterBodyError",
    "RegisterBrokerBody",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
]
