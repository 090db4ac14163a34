"""Seeded generator of fuzzed and mutated remoting frames, for feeding a live daemon (tests/fault/test_fuzz_broker.py).

Each frame starts as a well-formed request with a random code (mostly real request codes, some
arbitrary integers), random extFields (real header field names and junk, with values that are
numbers, names the broker knows, junk, empty or very long), a random body and a random header codec.
A share of them is then mutated the way hostile or broken peers do: bit flips, truncation, a lying
length, a random serialize type, a huge header length, random bytes in place of the header. The same
seed gives the same frames, so a failure can be replayed.

Codes that legitimately change the broker for every client (UPDATE_BROKER_CONFIG, the write-permission
switches) are never sent: a well-formed admin request doing what it is for is not a robustness bug.
Topics are created with at most `max_queue_nums` queues (see tests/fault/test_fuzz_broker.py for why).
"""

from __future__ import annotations

import dataclasses
import json
import random
import string
import struct
import typing
from collections import Counter
from typing import Any, NamedTuple

from rocketq.common.message import Message, encode_properties
from rocketq.common.record.codec import encode_batch
from rocketq.remoting.protocol.codes import LanguageCode, RequestCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.frame import MAX_FRAME_LENGTH, encode_frame
from rocketq.remoting.protocol.headers import admin, client, offset, pull, query, retry, send, transaction

EXCLUDED_CODES = frozenset(
    {
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
    }
)
REAL_CODES = tuple(sorted(int(c) for c in RequestCode if c not in EXCLUDED_CODES))

# extFields keys of real headers (V1 and V2 send, pull, offsets, topics, groups, queries, namesrv).
FIELD_NAMES = (
    "topic", "queueId", "queueOffset", "consumerGroup", "producerGroup", "defaultTopic", "defaultTopicQueueNums",
    "sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "batch", "maxReconsumeTimes",
    "maxMsgNums", "commitOffset", "suspendTimeoutMillis", "subscription", "subVersion", "expressionType",
    "readQueueNums", "writeQueueNums", "perm", "topicFilterType", "order", "offset", "timestamp", "key",
    "maxNum", "beginTimestamp", "endTimestamp", "group", "originMsgId", "delayLevel", "originTopic",
    "brokerName", "brokerAddr", "clusterName", "brokerId", "compressed", "bodyCrc32", "clientID", "msgId",
    "tranStateTableOffset", "commitLogOffset", "commitOrRollback", "fromTransactionCheck", "isForce",
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "bname", "lo",
)  # fmt: skip
KNOWN_NAMES = (
    "FuzzTopic", "TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "%RETRY%fuzz_cg", "%DLQ%fuzz_cg",
    "fuzz_cg", "fuzz_pg", "DefaultCluster", "broker-a", "*", "TagA || TagB", "a = 1", "SQL92", "TAG",
)  # fmt: skip
R = RequestCode
# Requests built from their real header class, every field present, then perturbed.
HEADER_OF_CODE: dict[int, type] = {
    R.SEND_MESSAGE: send.SendMessageRequestHeader,
    R.SEND_MESSAGE_V2: send.SendMessageRequestHeaderV2,
    R.SEND_BATCH_MESSAGE: send.SendMessageRequestHeaderV2,
    R.PULL_MESSAGE: pull.PullMessageRequestHeader,
    R.QUERY_CONSUMER_OFFSET: offset.QueryConsumerOffsetRequestHeader,
    R.UPDATE_CONSUMER_OFFSET: offset.UpdateConsumerOffsetRequestHeader,
    R.GET_MAX_OFFSET: offset.GetMaxOffsetRequestHeader,
    R.GET_MIN_OFFSET: offset.GetMinOffsetRequestHeader,
    R.SEARCH_OFFSET_BY_TIMESTAMP: offset.SearchOffsetRequestHeader,
    R.GET_EARLIEST_MSG_STORETIME: offset.GetEarliestMsgStoretimeRequestHeader,
    R.UPDATE_AND_CREATE_TOPIC: admin.CreateTopicRequestHeader,
    R.DELETE_TOPIC_IN_BROKER: admin.DeleteTopicRequestHeader,
    R.GET_TOPIC_STATS_INFO: admin.GetTopicStatsInfoRequestHeader,
    R.GET_CONSUME_STATS: admin.GetConsumeStatsRequestHeader,
    R.GET_CONSUMER_CONNECTION_LIST: admin.GetConsumerConnectionListRequestHeader,
    R.GET_PRODUCER_CONNECTION_LIST: admin.GetProducerConnectionListRequestHeader,
    R.DELETE_SUBSCRIPTIONGROUP: admin.DeleteSubscriptionGroupRequestHeader,
    R.QUERY_CONSUME_TIME_SPAN: admin.QueryConsumeTimeSpanRequestHeader,
    R.QUERY_CORRECTION_OFFSET: admin.QueryCorrectionOffsetHeader,
    R.CLONE_GROUP_OFFSET: admin.CloneGroupOffsetRequestHeader,
    R.QUERY_CONSUME_QUEUE: admin.QueryConsumeQueueRequestHeader,
    R.INVOKE_BROKER_TO_RESET_OFFSET: admin.ResetOffsetRequestHeader,
    R.QUERY_TOPIC_CONSUME_BY_WHO: admin.QueryTopicConsumeByWhoRequestHeader,
    R.VIEW_BROKER_STATS_DATA: admin.ViewBrokerStatsDataRequestHeader,
    R.GET_BROKER_CONSUME_STATS: admin.GetConsumeStatsInBrokerHeader,
    R.RESUME_CHECK_HALF_MESSAGE: admin.ResumeCheckHalfMessageRequestHeader,
    R.UNREGISTER_CLIENT: client.UnregisterClientRequestHeader,
    R.GET_CONSUMER_LIST_BY_GROUP: client.GetConsumerListByGroupRequestHeader,
    R.QUERY_MESSAGE: query.QueryMessageRequestHeader,
    R.VIEW_MESSAGE_BY_ID: query.ViewMessageRequestHeader,
    R.CONSUMER_SEND_MSG_BACK: retry.ConsumerSendMsgBackRequestHeader,
    R.END_TRANSACTION: transaction.EndTransactionRequestHeader,
}
# Requests whose substance is a JSON body (built as the client would, then perturbed).
BODY_CODES = (R.HEART_BEAT, R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, R.LOCK_BATCH_MQ, R.UNLOCK_BATCH_MQ)
PROPERTY_KEYS = (
    "TAGS",
    "KEYS",
    "DELAY",
    "UNIQ_KEY",
    "TRAN_MSG",
    "WAIT",
    "PGROUP",
    "REAL_TOPIC",
    "MAX_OFFSET",
    "x",
)
_JUNK = string.printable + "\u00e9\u4e2d\U0001f600\x00"

MUTATIONS = (
    ("bit_flip", 10),
    ("truncate", 5),
    ("length_lie", 8),
    ("serialize_type", 5),
    ("huge_header_length", 5),
    ("garbage_header", 4),
    ("random_bytes", 3),
)


class FuzzFrame(NamedTuple):
    kind: str
    data: bytes


class FrameFuzzer:
    """`next()` gives the next frame; `kinds` counts what was generated."""

    def __init__(
        self,
        seed: int,
        *,
        big_body_ratio: float = 0.005,
        max_big_body: int = 1 << 20,
        max_queue_nums: int = 1024,
    ) -> None:
        self.rng = random.Random(seed)
        self.max_queue_nums = max_queue_nums
        self.big_body_ratio = big_body_ratio
        self.max_big_body = max_big_body
        self.kinds: Counter[str] = Counter()
        self._mutation_names = [k for k, _ in MUTATIONS]
        self._mutation_weights = [w for _, w in MUTATIONS]
        self._new_topics = 0
        # Junk strings are slices of one random pool (generating each character is too slow).
        self._junk_pool = "".join(self.rng.choices(_JUNK, k=1 << 16))

    def next(self, mutation_ratio: float = 0.4) -> FuzzFrame:
        """A mutated frame with probability `mutation_ratio`, else a well-formed one."""
        return self.mutated() if self.rng.random() < mutation_ratio else self.valid()

    def valid(self) -> FuzzFrame:
        """A well-formed frame: random code, extFields, body, header codec and flags."""
        self.kinds["valid"] += 1
        return FuzzFrame("valid", self.valid_frame())

    def mutated(self) -> FuzzFrame:
        """A well-formed frame broken by one of MUTATIONS (picked by weight)."""
        kind = self.rng.choices(self._mutation_names, self._mutation_weights)[0]
        self.kinds[kind] += 1
        return FuzzFrame(kind, getattr(self, f"_{kind}")(self.valid_frame()))

    # -- well-formed frames with random contents ------------------------------------------------
    def valid_frame(self) -> bytes:
        rng = self.rng
        pick = rng.random()
        if pick < 0.5:
            code = rng.choice(tuple(HEADER_OF_CODE))
            cmd = RemotingCommand.request(
                code, self._typed_fields(HEADER_OF_CODE[code]), self._body_for(code)
            )
        elif pick < 0.6:
            code = rng.choice(BODY_CODES)
            cmd = RemotingCommand.request(code, self._ext_fields(), self._json_body(code))
        else:
            cmd = RemotingCommand.request(self._code(), self._ext_fields(), self._body())
        cmd.language = rng.choice(list(LanguageCode))
        cmd.version = rng.choice((409, 317, 0, -1, 32767, rng.randrange(-(2**15), 2**15)))
        cmd.flag = rng.choice((0, 0, 0, 0, 0, 0, 2, 1, rng.randrange(2**31)))
        if rng.random() < 0.1:
            cmd.remark = self._value()
        cmd.serialize_type = rng.choices(
            (SerializeType.JSON, SerializeType.ROCKETMQ, SerializeType.MSGPACK), (70, 25, 5)
        )[0]
        try:
            return encode_frame(cmd)
        except (ValueError, OverflowError, struct.error, UnicodeEncodeError):
            cmd.serialize_type = SerializeType.JSON  # the binary header cannot hold every value
            return encode_frame(cmd)

    def _code(self) -> int:
        rng = self.rng
        if rng.random() < 0.7:
            return rng.choice(REAL_CODES)
        code = rng.choice((rng.randrange(-1000, 1000), rng.randrange(1000, 400_000), -(2**31), 2**31 - 1))
        return code if code not in EXCLUDED_CODES else 9999

    def _ext_fields(self) -> dict[str, str] | None:
        rng = self.rng
        if rng.random() < 0.05:
            return None
        fields = {}
        for _ in range(rng.choice((0, 1, 2, 3, 5, 8, 12, 20))):
            key = rng.choice(FIELD_NAMES) if rng.random() < 0.85 else self._junk(1, 12)
            fields[key] = self._value()
        for key in ("readQueueNums", "writeQueueNums"):
            if key in fields:
                fields[key] = self._typed_value(key, int)
        return fields

    def _typed_fields(self, header_cls: type) -> dict[str, str]:
        """Every field of `header_cls` with a value of its type (mostly), then one perturbation."""
        rng = self.rng
        hints = typing.get_type_hints(header_cls)
        fields: dict[str, str] = {}
        for f in dataclasses.fields(header_cls):
            java = f.metadata.get("java", f.name)
            fields[java] = self._typed_value(java, hints.get(f.name))
        if fields and rng.random() < 0.25:
            del fields[rng.choice(list(fields))]
        if rng.random() < 0.15:
            fields[self._junk(1, 10)] = self._value()
        return fields

    def _typed_value(self, java_name: str, annotation: Any) -> str:
        rng = self.rng
        if java_name in ("readQueueNums", "writeQueueNums"):
            return str(rng.choice((-1, 0, 1, 4, 8, 16, self.max_queue_nums)))
        if rng.random() < 0.1:
            return self._value()  # any value at all, of the wrong type often
        text = str(annotation)
        if "bool" in text:
            return rng.choice(("true", "false"))
        if "int" in text:
            return str(
                rng.choice(
                    (
                        0,
                        0,
                        1,
                        1,
                        2,
                        3,
                        -1,
                        7,
                        17,
                        18,
                        99,
                        1000,
                        2**31 - 1,
                        -(2**31),
                        2**63 - 1,
                        rng.randrange(-(10**12), 10**12),
                    )
                )
            )
        if java_name in ("properties", "i"):
            return self._properties()
        return rng.choice(KNOWN_NAMES) if rng.random() < 0.8 else self._value()

    def _properties(self) -> str:
        rng = self.rng
        props = {}
        for _ in range(rng.randrange(0, 5)):
            key = rng.choice(PROPERTY_KEYS)
            props[key] = rng.choice((str(rng.randrange(-5, 100)), "true", "TagA", self._junk(0, 20)))
        text = encode_properties(props)
        if rng.random() < 0.1:
            text = text.replace("\x01", "", 1)  # a name without a value separator
        return text

    def _body_for(self, code: int) -> bytes:
        if code == R.SEND_BATCH_MESSAGE and self.rng.random() < 0.7:
            count = self.rng.randrange(0, 6)
            messages = [
                Message("FuzzTopic", self.rng.randbytes(self.rng.randrange(0, 200))) for _ in range(count)
            ]
            for message in messages:
                message.properties.update({"TAGS": "TagA"} if self.rng.random() < 0.5 else {})
            return encode_batch(messages)
        return self._body()

    def _json_body(self, code: int) -> bytes:
        rng = self.rng

        def name() -> str:
            return rng.choice(KNOWN_NAMES)

        doc: Any
        if code == R.HEART_BEAT:
            subscription = {
                "topic": name(), "subString": name(), "tagsSet": [name()], "codeSet": [rng.randrange(-9, 9)],
                "subVersion": rng.randrange(2**40), "expressionType": rng.choice(("TAG", "SQL92", "x")),
                "classFilterMode": False,
            }  # fmt: skip
            doc = {
                "clientID": rng.choice(("fuzz@1", name(), "")),
                "producerDataSet": [{"groupName": name()}],
                "consumerDataSet": [
                    {
                        "groupName": name(), "consumeType": rng.choice(("CONSUME_PASSIVELY", "CONSUME_ACTIVELY", 1, "?")),
                        "messageModel": rng.choice(("CLUSTERING", "BROADCASTING", 0, "?")),
                        "consumeFromWhere": rng.choice(("CONSUME_FROM_LAST_OFFSET", 4, "?")),
                        "subscriptionDataSet": [subscription], "unitMode": False,
                    }
                ],
            }  # fmt: skip
        elif code == R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP:
            doc = {
                "groupName": name(), "consumeEnable": True, "consumeBroadcastEnable": rng.random() < 0.5,
                "retryQueueNums": rng.randrange(-2, 5), "retryMaxTimes": rng.randrange(-2, 20),
                "brokerId": rng.randrange(-1, 3), "whichBrokerWhenConsumeSlowly": 1,
            }  # fmt: skip
        else:
            doc = {
                "consumerGroup": name(), "clientId": name(), "onlyThisBroker": rng.random() < 0.5,
                "mqSet": [{"topic": name(), "brokerName": "broker-a", "queueId": rng.randrange(-2, 10)}],
            }  # fmt: skip
        self._perturb(doc)
        return json.dumps(doc).encode()

    def _perturb(self, doc: Any) -> None:
        """Replace one leaf of a JSON document with a value of another type, sometimes."""
        rng = self.rng
        if rng.random() > 0.3:
            return
        while True:
            if isinstance(doc, dict) and doc:
                key = rng.choice(list(doc))
                if isinstance(doc[key], (dict, list)) and doc[key] and rng.random() < 0.6:
                    doc = doc[key]
                    continue
                doc[key] = rng.choice((None, [], {}, -1, 1.5, "", self._junk(0, 10), [None]))
            elif isinstance(doc, list) and doc:
                index = rng.randrange(len(doc))
                if isinstance(doc[index], (dict, list)) and doc[index] and rng.random() < 0.6:
                    doc = doc[index]
                    continue
                doc[index] = rng.choice((None, 0, "", {}))
            return

    def _value(self) -> str:
        rng = self.rng
        pick = rng.random()
        if pick < 0.30:
            return rng.choice(KNOWN_NAMES)
        if pick < 0.55:
            return str(
                rng.choice(
                    (0, 1, -1, 2, 7, 17, 2**31 - 1, -(2**31), 2**63 - 1, rng.randrange(-(10**12), 10**12))
                )
            )
        if pick < 0.60 and self._new_topics < 40:  # a few new, valid topic names (auto-create)
            self._new_topics += 1
            return f"FuzzNew{self._new_topics}"
        if pick < 0.86:
            return self._junk(0, 40)
        if pick < 0.96:
            return rng.choice(("", " ", "true", "false", "null", "NaN", "1e309", "0x10"))
        return self._junk(200, 3000)

    def _junk(self, low: int, high: int) -> str:
        length = self.rng.randrange(low, high + 1)
        start = self.rng.randrange(len(self._junk_pool) - length)
        return self._junk_pool[start : start + length]

    def _body(self) -> bytes:
        rng = self.rng
        pick = rng.random()
        if pick < 0.4:
            return b""
        if pick < 0.7:
            return rng.randbytes(rng.randrange(1, 300))
        if pick < 0.9:
            return (
                b'{"clientID":"fuzz","producerDataSet":[{"groupName":"fuzz_pg"}],"consumerDataSet":['
                + rng.randbytes(8)
                + b"]}"
            )
        if rng.random() < self.big_body_ratio * 10:
            return rng.randbytes(rng.randrange(64 * 1024, self.max_big_body))
        return rng.randbytes(rng.randrange(300, 8192))

    # -- mutations ------------------------------------------------------------------------------
    def _bit_flip(self, frame: bytes) -> bytes:
        data = bytearray(frame)
        for _ in range(self.rng.randrange(1, 9)):
            position = self.rng.randrange(len(data))
            data[position] ^= 1 << self.rng.randrange(8)
        return bytes(data)

    def _truncate(self, frame: bytes) -> bytes:
        return frame[: self.rng.randrange(0, len(frame))]

    def _length_lie(self, frame: bytes) -> bytes:
        true_length = len(frame) - 4
        lie = self.rng.choice(
            (
                true_length - self.rng.randrange(1, 16),
                true_length + self.rng.randrange(1, 4096),
                0,
                3,
                -1,
                MAX_FRAME_LENGTH,
                MAX_FRAME_LENGTH + 1,
                2**31 - 1,
            )
        )
        return struct.pack(">i", lie) + frame[4:]

    def _serialize_type(self, frame: bytes) -> bytes:
        return frame[:4] + bytes([self.rng.randrange(256)]) + frame[5:]

    def _huge_header_length(self, frame: bytes) -> bytes:
        length = self.rng.choice((0xFFFFFF, len(frame), len(frame) - 8 + self.rng.randrange(1, 100), 0))
        return frame[:5] + length.to_bytes(3, "big") + frame[8:]

    def _garbage_header(self, frame: bytes) -> bytes:
        header = self.rng.randbytes(self.rng.randrange(0, 200))
        serialize_type = self.rng.choice((0, 1, 0x4D))
        return struct.pack(">iI", 4 + len(header), (serialize_type << 24) | len(header)) + header

    def _random_bytes(self, frame: bytes) -> bytes:
        return self.rng.randbytes(self.rng.randrange(1, 512))
