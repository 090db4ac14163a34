"""A well-formed broker client on one RawConnection: typed send / pull / admin calls and a round trip.

Fault tests keep one of these open on its own connection while they abuse others, and call
`roundtrip()` after each fault: it sends a fresh body and pulls it back byte for byte, so "the
broker still works for everyone else" is checked end to end, on a connection that was never
reopened.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass

from rocketq.common.constants import PullSysFlag
from rocketq.common.message import MessageExt, encode_properties
from rocketq.common.record.codec import decode_records
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import CreateTopicRequestHeader
from rocketq.remoting.protocol.headers.offset import GetMaxOffsetRequestHeader
from rocketq.remoting.protocol.headers.pull import PullMessageRequestHeader
from rocketq.remoting.protocol.headers.send import SendMessageRequestHeader
from rocketq.testing.wire import DEFAULT_TIMEOUT_S, RawConnection

_probe_ids = itertools.count(1)


def send_request(
    topic: str,
    body: bytes,
    properties: Mapping[str, str] | None = None,
    *,
    queue_id: int = 0,
    producer_group: str = "probe_pg",
    v2: bool = True,
) -> RemotingCommand:
    """A SEND_MESSAGE_V2 (or V1) request as a Java producer builds it."""
    header = SendMessageRequestHeader(
        producer_group=producer_group,
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=8,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties(properties or {}),
    )
    if v2:
        return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), body)
    return RemotingCommand.request(RequestCode.SEND_MESSAGE, header.to_ext_fields(), body)


def pull_request(
    topic: str, queue_id: int, offset: int, *, group: str = "probe_cg", max_msgs: int = 32
) -> RemotingCommand:
    """A PULL_MESSAGE that is answered at once (no suspend), subscription "*"."""
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_msgs,
        sys_flag=PullSysFlag.build(False, False, True),
        commit_offset=0,
        suspend_timeout_millis=0,
        sub_version=0,
        subscription="*",
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


def create_topic_request(topic: str, queues: int = 8, perm: int = 6) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=perm,
        topic_filter_type="SINGLE_TAG",
    )
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())


@dataclass(slots=True)
class Sent:
    topic: str
    queue_id: int
    queue_offset: int
    msg_id: str
    body: bytes


class BrokerProbe:
    """Typed calls over one RawConnection; every method asserts on unexpected answers."""

    def __init__(
        self, conn: RawConnection, topic: str = "ProbeTopic", timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.conn = conn
        self.topic = topic
        self.timeout_s = timeout_s
        self.roundtrips = 0

    @classmethod
    async def open(
        cls, addr: str, topic: str = "ProbeTopic", timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> BrokerProbe:
        return cls(await RawConnection.open(addr, timeout_s), topic, timeout_s)

    async def close(self) -> None:
        await self.conn.close()

    async def send(
        self, topic: str, body: bytes, properties: Mapping[str, str] | None = None, *, queue_id: int = 0
    ) -> Sent:
        response = await self.conn.request(
            send_request(topic, body, properties, queue_id=queue_id), self.timeout_s
        )
        assert response.code == ResponseCode.SUCCESS, f"send to {topic}: {response.code} {response.remark}"
        ext = response.ext_fields or {}
        return Sent(topic, int(ext["queueId"]), int(ext["queueOffset"]), ext["msgId"], body)

    async def pull(self, topic: str, queue_id: int, offset: int, max_msgs: int = 32) -> RemotingCommand:
        return await self.conn.request(
            pull_request(topic, queue_id, offset, max_msgs=max_msgs), self.timeout_s
        )

    async def pull_messages(
        self, topic: str, queue_id: int, offset: int = 0, max_msgs: int = 32
    ) -> list[MessageExt]:
        response = await self.pull(topic, queue_id, offset, max_msgs)
        assert response.code == ResponseCode.SUCCESS, (
            f"pull {topic}/{queue_id}@{offset}: {response.code} {response.remark}"
        )
        return decode_records(response.body)

    async def pull_all(self, topic: str, queue_id: int, offset: int = 0) -> list[MessageExt]:
        """Every message of the queue from `offset` to its end (pulls until PULL_NOT_FOUND)."""
        out: list[MessageExt] = []
        while True:
            response = await self.pull(topic, queue_id, offset)
            if response.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_OFFSET_MOVED):
                return out
            assert response.code == ResponseCode.SUCCESS, (
                f"pull {topic}/{queue_id}@{offset}: {response.code} {response.remark}"
            )
            out.extend(decode_records(response.body))
            offset = int((response.ext_fields or {})["nextBeginOffset"])

    async def max_offset(self, topic: str, queue_id: int) -> int:
        header = GetMaxOffsetRequestHeader(topic=topic, queue_id=queue_id).to_ext_fields()
        response = await self.conn.call(RequestCode.GET_MAX_OFFSET, header, timeout_s=self.timeout_s)
        assert response.code == ResponseCode.SUCCESS, (
            f"max offset {topic}/{queue_id}: {response.code} {response.remark}"
        )
        return int((response.ext_fields or {})["offset"])

    async def create_topic(self, topic: str, queues: int = 8, perm: int = 6) -> None:
        response = await self.conn.request(create_topic_request(topic, queues, perm), self.timeout_s)
        assert response.code == ResponseCode.SUCCESS, f"create {topic}: {response.code} {response.remark}"

    async def roundtrip(self) -> Sent:
        """Send a fresh body to the probe topic, pull it back at its offset, compare byte for byte."""
        body = b"probe-%d-%d" % (next(_probe_ids), time.monotonic_ns())
        sent = await self.send(self.topic, body, queue_id=0)
        got = await self.pull_messages(self.topic, 0, sent.queue_offset, max_msgs=1)
        assert [m.body for m in got] == [body], f"the probe's message came back as {[m.body for m in got]!r}"
        self.roundtrips += 1
        return sent


# Small store files keep a test broker's start, stop and restart fast (the defaults are 1 GiB / 6 MB).
SMALL_STORE_OVERRIDES: dict[str, object] = {
    "mappedFileSizeCommitLog": 16 << 20,
    "mappedFileSizeConsumeQueue": 6000,
}
