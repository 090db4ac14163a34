"""A thin broker client for integration tests: raw remoting calls with typed headers, no SDK."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from rocketq.common.constants import PullSysFlag
from rocketq.common.message import Message, MessageExt, encode_properties
from rocketq.common.record.codec import decode_records, encode_batch
from rocketq.remoting.protocol.codes import RequestCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import CreateTopicRequestHeader
from rocketq.remoting.protocol.headers.base import CommandHeader
from rocketq.remoting.protocol.headers.offset import (
    GetMaxOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.remoting.protocol.headers.pull import PullMessageRequestHeader
from rocketq.remoting.protocol.headers.send import SendMessageRequestHeader
from rocketq.remoting.transport import RemotingClient

TIMEOUT_MS = 5000


class BrokerTestClient:
    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.remoting = RemotingClient()

    async def close(self) -> None:
        await self.remoting.shutdown()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def call(
        self,
        code: int,
        header: CommandHeader | Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout_ms: int = TIMEOUT_MS,
        oneway: bool = False,
    ) -> RemotingCommand:
        ext = (
            header.to_ext_fields()
            if isinstance(header, CommandHeader)
            else (dict(header) if header else None)
        )
        request = RemotingCommand.request(code, ext, body, oneway=oneway)
        if oneway:
            await self.remoting.invoke_oneway(self.addr, request, timeout_ms)
            return request
        return await self.remoting.invoke_sync(self.addr, request, timeout_ms)

    @staticmethod
    def send_header(
        topic: str, properties: Mapping[str, str], queue_id: int = 0, **kw: Any
    ) -> SendMessageRequestHeader:
        fields: dict[str, Any] = dict(
            producer_group="pg_test",
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=int(time.time() * 1000),
            flag=0,
            properties=encode_properties(properties),
        )
        fields.update(kw)
        return SendMessageRequestHeader(**fields)

    async def send(
        self,
        topic: str,
        body: bytes,
        properties: Mapping[str, str] | None = None,
        *,
        queue_id: int = 0,
        code: int = RequestCode.SEND_MESSAGE_V2,
        **kw: Any,
    ) -> RemotingCommand:
        header = self.send_header(topic, properties or {}, queue_id, **kw)
        if code == RequestCode.SEND_MESSAGE:
            return await self.call(code, header, body)
        return await self.call(code, header.to_v2(), body)

    async def send_batch(self, topic: str, messages: list[Message], *, queue_id: int = 0) -> RemotingCommand:
        header = self.send_header(topic, {"WAIT": "true"}, queue_id, batch=True)
        return await self.call(RequestCode.SEND_BATCH_MESSAGE, header.to_v2(), encode_batch(messages))

    async def pull(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        max_msgs: int = 32,
        suspend_ms: int = 0,
        subscription: str = "*",
        commit_offset: int | None = None,
        timeout_ms: int = TIMEOUT_MS,
    ) -> RemotingCommand:
        flag = PullSysFlag.build(commit_offset is not None, suspend_ms > 0, True)
        header = PullMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            queue_offset=offset,
            max_msg_nums=max_msgs,
            sys_flag=flag,
            commit_offset=commit_offset or 0,
            suspend_timeout_millis=suspend_ms,
            sub_version=0,
            subscription=subscription,
        )
        return await self.call(RequestCode.PULL_MESSAGE, header, timeout_ms=timeout_ms)

    async def pull_messages(self, group: str, topic: str, queue_id: int, offset: int = 0) -> list[MessageExt]:
        response = await self.pull(group, topic, queue_id, offset)
        assert response.code == 0, f"pull: {response.code} {response.remark}"
        return decode_records(response.body)

    async def create_topic(self, topic: str, queues: int = 4, perm: int = 6) -> RemotingCommand:
        header = CreateTopicRequestHeader(
            topic=topic,
            default_topic="TBW102",
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=perm,
            topic_filter_type="SINGLE_TAG",
        )
        return await self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, header)

    async def commit_offset(
        self, group: str, topic: str, queue_id: int, offset: int, *, oneway: bool = False
    ) -> None:
        header = UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset
        )
        await self.call(RequestCode.UPDATE_CONSUMER_OFFSET, header, oneway=oneway)

    async def query_offset(self, group: str, topic: str, queue_id: int) -> RemotingCommand:
        header = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id)
        return await self.call(RequestCode.QUERY_CONSUMER_OFFSET, header)

    async def max_offset(self, topic: str, queue_id: int) -> int:
        response = await self.call(
            RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic=topic, queue_id=queue_id)
        )
        return int((response.ext_fields or {})["offset"])


# Small store files keep a test broker's start and stop fast (a 1 GiB commit-log file is warmed page by page).
SMALL_STORE: dict[str, Any] = {"mappedFileSizeCommitLog": 16 << 20, "mappedFileSizeConsumeQueue": 6000}
