"""MQClientAPI: one coroutine per request code the SDK sends; typed headers in, typed results out.

Port of org.apache.rocketmq.client.impl.MQClientAPIImpl (4.9.8). This is the only client module that
builds RemotingCommands. An error response becomes a typed error (client/errors.py `broker_error`);
transport failures are the transport's RemotingError subclasses. Request headers are serialized with
the configured codec (`header_codec`: json for any RocketMQ server, msgpack for rocketq's own).
Admin requests live in client/admin.py and client/admin_acl.py, which build their commands through `invoke()` here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from rocketq.client.errors import broker_error
from rocketq.client.model import PullResult, PullStatus, SendResult, SendStatus
from rocketq.common import constants as C
from rocketq.common.message import MessageExt, MessageQueue, decode_properties
from rocketq.common.record.codec import decode_records
from rocketq.common.record.lazy import decode_records_lazy
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.route import ClusterInfo, TopicRouteData
from rocketq.remoting.protocol.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from rocketq.remoting.protocol.command import CURRENT_VERSION, RPC_ONEWAY, RemotingCommand, next_opaque
from rocketq.remoting.protocol.compiled import constructor
from rocketq.remoting.protocol.headers.base import CommandHeader
from rocketq.remoting.protocol.headers.namesrv import GetRouteInfoRequestHeader
from rocketq.remoting.protocol.headers.offset import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.remoting.protocol.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketq.remoting.protocol.headers.send import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)

# The headers and bodies of the requests off the send / pull / offset / route paths are imported by the
# method that sends them: a process that only pulls (a Spark reader) does not pay for defining them all.
if TYPE_CHECKING:
    from rocketq.remoting.protocol.bodies.heartbeat import HeartbeatData, SubscriptionData
    from rocketq.remoting.protocol.headers.transaction import EndTransactionRequestHeader

log = logging.getLogger("rocketq.client.api")

# "auto" starts with JSON; the transport switches a connection to msgpack once its server accepts.
CODECS = {
    "auto": SerializeType.JSON,
    "json": SerializeType.JSON,
    "msgpack": SerializeType.MSGPACK,
    "rocketmq": SerializeType.ROCKETMQ,
}

_SEND_STATUS = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
_PULL_STATUS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


def pull_all_header(group: str, mq: MessageQueue, offset: int, max_nums: int) -> PullMessageRequestHeader:
    """A pull of every message ("*", its own subscription) from `offset`, as DefaultMQPullConsumer
    pulls: the group need not be online, no offset is committed, the broker answers at once."""
    return PullMessageRequestHeader(
        consumer_group=group,
        topic=mq.topic,
        queue_id=mq.queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=C.PullSysFlag.FLAG_SUBSCRIPTION,
        commit_offset=0,
        suspend_timeout_millis=0,
        sub_version=0,
        subscription="*",
        expression_type="TAG",
        bname=mq.broker_name,
    )


# SendMessageResponseHeader's rules (the same errors), its fields as a tuple: one object less per send.
_decode_send_response = SendMessageResponseHeader.compile_decoder_into(
    tuple, ("msg_id", "queue_id", "queue_offset", "transaction_id", "msg_region", "trace_on")
)


class Transport(Protocol):
    """What the API needs of rocketq.remoting.transport's RemotingClient."""

    async def invoke_sync(self, addr: str, cmd: RemotingCommand, timeout_ms: float) -> RemotingCommand: ...

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand, timeout_ms: float) -> None: ...

    def start_sync(
        self, addr: str, cmd: RemotingCommand, timeout_ms: float
    ) -> asyncio.Future[RemotingCommand] | None: ...


_REPLY_MARK = "MSG_TYPE\x01reply"  # cheap pre-check of the properties string on the send path
# Read on every send: plain ints and the member, not attribute reads through the enum classes.
_SEND_V2, _SEND_BATCH = int(RequestCode.SEND_MESSAGE_V2), int(RequestCode.SEND_BATCH_MESSAGE)
_PYTHON = LanguageCode.PYTHON
# Built once per send with every field given: without the dataclasses' Python __init__ when compiled.
_new_command = constructor(RemotingCommand)
_new_send_result = constructor(SendResult)


def _check(resp: RemotingCommand, *ok: int) -> RemotingCommand:
    if resp.code not in (ok or (ResponseCode.SUCCESS,)):
        raise broker_error(resp.code, resp.remark)
    return resp


class MQClientAPI:
    """Requests to name servers and brokers over one RemotingClient."""

    def __init__(self, transport: Transport, *, header_codec: str = "json", timeout_ms: int = 3000) -> None:
        self.transport = transport
        self.serialize_type = CODECS[header_codec]
        self.timeout_ms = timeout_ms

    # -- plumbing ---------------------------------------------------------------------------------
    def command(
        self,
        code: int,
        header: CommandHeader | Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        oneway: bool = False,
    ) -> RemotingCommand:
        ext = (
            header.to_ext_fields()
            if isinstance(header, CommandHeader)
            else (dict(header) if header else None)
        )
        return RemotingCommand.request(code, ext, body, oneway=oneway, serialize_type=self.serialize_type)

    async def invoke(
        self,
        addr: str,
        code: int,
        header: CommandHeader | Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout_ms: float | None = None,
        ok: Iterable[int] = (ResponseCode.SUCCESS,),
    ) -> RemotingCommand:
        """Send a request and return its response; a code outside `ok` raises its typed error."""
        cmd = self.command(code, header, body)
        resp = await self.transport.invoke_sync(addr, cmd, timeout_ms or self.timeout_ms)
        return _check(resp, *ok)

    async def invoke_oneway(
        self, addr: str, code: int, header: CommandHeader | Mapping[str, str] | None = None, body: bytes = b""
    ) -> None:
        await self.transport.invoke_oneway(
            addr, self.command(code, header, body, oneway=True), self.timeout_ms
        )

    # -- name server ------------------------------------------------------------------------------
    async def get_topic_route(
        self, namesrv: str, topic: str, timeout_ms: float | None = None
    ) -> TopicRouteData:
        """The topic's route; TopicNotExistError when the name server has none."""
        resp = await self.invoke(
            namesrv,
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            GetRouteInfoRequestHeader(topic),
            timeout_ms=timeout_ms,
        )
        return TopicRouteData.from_json(fastjson.loads(resp.body))

    async def get_all_topic_list(self, namesrv: str) -> list[str]:
        """Every topic the name server knows, sorted (GET_ALL_TOPIC_LIST_FROM_NAMESERVER)."""
        from rocketq.remoting.protocol.bodies.admin import TopicList

        resp = await self.invoke(namesrv, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(TopicList.decode(resp.body).topic_list) if resp.body else []

    async def get_cluster_info(self, namesrv: str) -> ClusterInfo:
        resp = await self.invoke(namesrv, RequestCode.GET_BROKER_CLUSTER_INFO)
        return ClusterInfo.from_json(fastjson.loads(resp.body))

    # -- send ---------------------------------------------------------------------------------------
    async def send_message(
        self,
        addr: str,
        broker_name: str,
        header: SendMessageRequestHeader | SendMessageRequestHeaderV2 | dict[str, str],
        body: bytes,
        msg_id: str,
        *,
        timeout_ms: float,
        oneway: bool = False,
        queue: MessageQueue | None = None,
    ) -> SendResult | None:
        """SEND_MESSAGE_V2 (SEND_BATCH_MESSAGE for a batch) as Java's default "smart" send.

        `header` may be the V2 header's extFields already (the producer builds them directly); `queue`,
        the queue sent to, is reused in the result when the broker answers that queue.
        """
        if isinstance(header, dict):
            ext = header
        else:
            ext = (
                header if isinstance(header, SendMessageRequestHeaderV2) else header.to_v2()
            ).to_ext_fields()
        cmd = self.send_command(ext, body, oneway=oneway)
        if oneway:
            await self.transport.invoke_oneway(addr, cmd, timeout_ms)
            return None
        resp = await self.transport.invoke_sync(addr, cmd, timeout_ms)
        return self.process_send_response(broker_name, ext["b"], msg_id, resp, queue)

    def send_command(self, ext: dict[str, str], body: bytes, *, oneway: bool = False) -> RemotingCommand:
        """The request of a send, given the V2 header's extFields: SEND_MESSAGE_V2, SEND_BATCH_MESSAGE for a
        batch, SEND_REPLY_MESSAGE_V2 for a request-reply reply (MQClientAPIImpl#sendMessage isReply)."""
        code = _SEND_BATCH if ext.get("m") == "true" else _SEND_V2
        if (
            _REPLY_MARK in (ext.get("i") or "")
            and decode_properties(ext["i"]).get(C.PROPERTY_MESSAGE_TYPE) == C.REPLY_MESSAGE_FLAG
        ):
            code = int(RequestCode.SEND_REPLY_MESSAGE_V2)
        # RemotingCommand.request's fields, every one positional (its keyword call costs a send about 1 us).
        flag = RPC_ONEWAY if oneway else 0
        return _new_command(
            code, _PYTHON, CURRENT_VERSION, next_opaque(), flag, None, ext, body, self.serialize_type, 0
        )

    def start_send(
        self, addr: str, ext: dict[str, str], body: bytes, timeout_ms: float
    ) -> asyncio.Future[RemotingCommand] | None:
        """send_message's request, sent now without a coroutine of its own: the future of the broker's
        answer (process_send_response reads it), or None when the transport cannot start it at once (no
        open connection yet, a codec offer to make, RPC hooks to run): await send_message then. The
        producer's common send awaits this future in its own frame instead of a chain of three."""
        return self.transport.start_sync(addr, self.send_command(ext, body), timeout_ms)

    @staticmethod
    def process_send_response(
        broker_name: str, topic: str, msg_id: str, resp: RemotingCommand, queue: MessageQueue | None = None
    ) -> SendResult:
        status = _SEND_STATUS.get(resp.code)  # type: ignore[call-overload]
        if status is None:
            raise broker_error(resp.code, resp.remark)
        offset_msg_id, queue_id, queue_offset, transaction_id, region, trace_on = _decode_send_response(
            resp.ext_fields
        )
        if (
            queue is None
            or queue.queue_id != queue_id
            or queue.topic != topic
            or queue.broker_name != broker_name
        ):
            queue = MessageQueue(topic, broker_name, queue_id)
        return _new_send_result(status, msg_id, offset_msg_id, queue, queue_offset, transaction_id,
                                region or "DefaultRegion", trace_on is not False)  # fmt: skip

    # -- pull ---------------------------------------------------------------------------------------
    async def pull_message(
        self, addr: str, header: PullMessageRequestHeader, timeout_ms: float
    ) -> PullResult:
        """One pull (long-polled by the broker when FLAG_SUSPEND is set); messages decoded, not filtered."""
        result, body = await self.pull_message_body(addr, header, timeout_ms)
        # Views over the pull body: a field is decoded when the listener (or the filter) first reads it.
        if body:
            result.messages = decode_records_lazy(body)
        return result

    async def pull_message_body(
        self, addr: str, header: PullMessageRequestHeader, timeout_ms: float
    ) -> tuple[PullResult, bytes]:
        """pull_message with the records left undecoded: the result without messages, and the body
        (b"" unless FOUND) for a reader that walks the records itself (the Spark source's columns)."""
        resp = await self.transport.invoke_sync(
            addr, self.command(RequestCode.PULL_MESSAGE, header), timeout_ms
        )
        status = _PULL_STATUS.get(resp.code)  # type: ignore[call-overload]
        if status is None:
            raise broker_error(resp.code, resp.remark)
        rh = PullMessageResponseHeader.from_ext_fields(resp.ext_fields)
        result = PullResult(
            status, rh.next_begin_offset, rh.min_offset, rh.max_offset, [], rh.suggest_which_broker_id
        )
        return result, resp.body if status is PullStatus.FOUND else b""

    # -- offsets ------------------------------------------------------------------------------------
    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int | None:
        """The group's committed offset of `mq`; None when the broker has none (QUERY_NOT_FOUND)."""
        header = QueryConsumerOffsetRequestHeader(group, mq.topic, mq.queue_id, mq.broker_name)
        resp = await self.invoke(
            addr,
            RequestCode.QUERY_CONSUMER_OFFSET,
            header,
            ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return QueryConsumerOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset

    async def update_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, offset: int, *, oneway: bool = True
    ) -> None:
        header = UpdateConsumerOffsetRequestHeader(group, mq.topic, mq.queue_id, offset, mq.broker_name)
        if oneway:
            await self.invoke_oneway(addr, RequestCode.UPDATE_CONSUMER_OFFSET, header)
        else:
            await self.invoke(addr, RequestCode.UPDATE_CONSUMER_OFFSET, header)

    async def get_max_offset(self, addr: str, mq: MessageQueue) -> int:
        resp = await self.invoke(
            addr, RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(mq.topic, mq.queue_id, mq.broker_name)
        )
        return GetMaxOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset

    async def get_min_offset(self, addr: str, mq: MessageQueue) -> int:
        resp = await self.invoke(
            addr, RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(mq.topic, mq.queue_id, mq.broker_name)
        )
        return GetMinOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp_ms: int) -> int:
        header = SearchOffsetRequestHeader(mq.topic, mq.queue_id, timestamp_ms, mq.broker_name)
        resp = await self.invoke(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header)
        return SearchOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset

    async def get_earliest_msg_storetime(self, addr: str, mq: MessageQueue) -> int:
        header = GetEarliestMsgStoretimeRequestHeader(mq.topic, mq.queue_id, mq.broker_name)
        resp = await self.invoke(addr, RequestCode.GET_EARLIEST_MSG_STORETIME, header)
        return GetEarliestMsgStoretimeResponseHeader.from_ext_fields(resp.ext_fields).timestamp

    # -- client registration ------------------------------------------------------------------------
    async def send_heartbeat(self, addr: str, data: HeartbeatData, timeout_ms: float | None = None) -> int:
        """HEART_BEAT; returns the broker's version."""
        resp = await self.invoke(addr, RequestCode.HEART_BEAT, None, data.encode(), timeout_ms=timeout_ms)
        return resp.version

    async def unregister_client(
        self, addr: str, client_id: str, producer_group: str | None = None, consumer_group: str | None = None
    ) -> None:
        from rocketq.remoting.protocol.headers.client import UnregisterClientRequestHeader

        header = UnregisterClientRequestHeader(client_id, producer_group, consumer_group)
        await self.invoke(addr, RequestCode.UNREGISTER_CLIENT, header)

    async def get_consumer_id_list(self, addr: str, group: str) -> list[str]:
        from rocketq.remoting.protocol.bodies.consumer import GetConsumerListByGroupResponseBody
        from rocketq.remoting.protocol.headers.client import GetConsumerListByGroupRequestHeader

        resp = await self.invoke(
            addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, GetConsumerListByGroupRequestHeader(group)
        )
        if not resp.body:
            return []
        return GetConsumerListByGroupResponseBody.decode(resp.body).consumer_id_list

    async def check_client_config(self, addr: str, client_id: str, group: str, sub: SubscriptionData) -> None:
        from rocketq.remoting.protocol.bodies.heartbeat import CheckClientRequestBody

        body = CheckClientRequestBody(client_id, group, sub).encode()
        await self.invoke(addr, RequestCode.CHECK_CLIENT_CONFIG, None, body)

    # -- consumer retry, locks --------------------------------------------------------------------------
    async def consumer_send_message_back(
        self,
        addr: str,
        msg: MessageExt,
        group: str,
        delay_level: int,
        max_reconsume_times: int,
        timeout_ms: float | None = None,
    ) -> None:
        from rocketq.remoting.protocol.headers.retry import ConsumerSendMsgBackRequestHeader

        header = ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset,
            group=group,
            delay_level=delay_level,
            origin_msg_id=msg.msg_id,
            origin_topic=msg.topic,
            max_reconsume_times=max_reconsume_times,
            bname=msg.broker_name or None,
        )
        await self.invoke(addr, RequestCode.CONSUMER_SEND_MSG_BACK, header, timeout_ms=timeout_ms)

    async def lock_batch_mq(
        self, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue]
    ) -> set[MessageQueue]:
        """LOCK_BATCH_MQ; the queues now held by this client."""
        from rocketq.remoting.protocol.bodies.consumer import LockBatchRequestBody, LockBatchResponseBody

        body = LockBatchRequestBody(group, client_id, list(mqs)).encode()
        resp = await self.invoke(addr, RequestCode.LOCK_BATCH_MQ, None, body)
        return set(LockBatchResponseBody.decode(resp.body).lock_ok_mq_set) if resp.body else set()

    async def unlock_batch_mq(
        self, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue], *, oneway: bool = False
    ) -> None:
        from rocketq.remoting.protocol.bodies.consumer import UnlockBatchRequestBody

        body = UnlockBatchRequestBody(group, client_id, list(mqs)).encode()
        if oneway:
            await self.invoke_oneway(addr, RequestCode.UNLOCK_BATCH_MQ, None, body)
        else:
            await self.invoke(addr, RequestCode.UNLOCK_BATCH_MQ, None, body)

    # -- transactions ---------------------------------------------------------------------------------
    async def end_transaction_oneway(
        self, addr: str, header: EndTransactionRequestHeader, remark: str | None = None
    ) -> None:
        cmd = self.command(RequestCode.END_TRANSACTION, header, oneway=True)
        cmd.remark = remark
        await self.transport.invoke_oneway(addr, cmd, self.timeout_ms)

    # -- message lookup ---------------------------------------------------------------------------------
    async def view_message(
        self, addr: str, commit_log_offset: int, timeout_ms: float | None = None
    ) -> MessageExt:
        from rocketq.remoting.protocol.headers.query import ViewMessageRequestHeader

        resp = await self.invoke(
            addr,
            RequestCode.VIEW_MESSAGE_BY_ID,
            ViewMessageRequestHeader(commit_log_offset),
            timeout_ms=timeout_ms,
        )
        msgs = decode_records(resp.body)
        if not msgs:
            raise broker_error(ResponseCode.SYSTEM_ERROR, f"no message at offset {commit_log_offset}")
        return msgs[0]

    async def query_message(
        self,
        addr: str,
        topic: str,
        key: str,
        max_num: int,
        begin_ms: int,
        end_ms: int,
        *,
        unique_key: bool = False,
        timeout_ms: float | None = None,
    ) -> list[MessageExt]:
        """QUERY_MESSAGE by key (or by UNIQ_KEY); [] when the broker finds nothing."""
        from rocketq.remoting.protocol.headers.query import QueryMessageRequestHeader

        header = QueryMessageRequestHeader(topic, key, max_num, begin_ms, end_ms, unique_key)
        resp = await self.invoke(
            addr,
            RequestCode.QUERY_MESSAGE,
            header,
            timeout_ms=timeout_ms,
            ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        return decode_records(resp.body) if resp.code == ResponseCode.SUCCESS and resp.body else []


def as_json(body: bytes) -> Any:
    """A response body parsed with the fastjson-compatible reader ({} when empty)."""
    return fastjson.loads(body) if body else {}
