"""SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325): the replier's half of request-reply (4.6+).

Port of org.apache.rocketmq.broker.processor.ReplyMessageProcessor (4.9.8). The reply, sent by the
replying consumer to `<cluster>_REPLY_TOPIC` with the request's CORRELATION_ID and REPLY_TO_CLIENT, is
pushed to the requesting client over its own connection (PUSH_REPLY_MESSAGE_TO_CLIENT, 326; the
requester is found among the producers that heartbeat to this broker) and, with storeReplyMessageEnable,
stored in the reply topic too. The answer says whether the push reached the requester: SYSTEM_ERROR
naming the client when it did not (unknown, gone, or refusing), as Java. The checks before are a send's.
"""

from __future__ import annotations

import logging

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, RequestError, error_response
from rocketq.broker.processors.send import SendMessageProcessor, SendRequest, born_host_of
from rocketq.common import constants as C
from rocketq.common.errors import RocketQError
from rocketq.common.message import decode_properties, encode_properties
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.send import ReplyMessageRequestHeader
from rocketq.store.message import BrokerMessage

log = logging.getLogger("rocketq.broker.reply")

PUSH_REPLY_TIMEOUT_MS = 10_000  # Broker2Client.callClient


class ReplyMessageProcessor(SendMessageProcessor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__(ctx)
        self.handlers = {
            RequestCode.SEND_REPLY_MESSAGE: self.reply,
            RequestCode.SEND_REPLY_MESSAGE_V2: self.reply,
        }

    async def reply(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        header = SendRequest.of(request)
        try:
            config = self._check(conn, request, header)
        except RequestError as err:
            response = error_response(conn, request, err)
            response.ext_fields = self._response_ext()
            return response
        queue_id = self._pick_queue(header, config)
        properties = decode_properties(header.properties) if header.properties else {}
        pushed, remark = await self._push_reply(conn, request, header, properties)
        if pushed:
            ext = {**self._response_ext(), "msgId": "0", "queueId": str(queue_id), "queueOffset": "0"}
            response = request.make_response(ResponseCode.SUCCESS, None, ext)
        else:
            response = request.make_response(ResponseCode.SYSTEM_ERROR, remark, self._response_ext())
        if self.ctx.broker_config.store_reply_message_enable:
            properties[C.PROPERTY_CLUSTER] = self.ctx.broker_config.broker_cluster_name
            msg = BrokerMessage(
                topic=header.topic,
                queue_id=queue_id,
                body=request.body,
                flag=header.flag,
                properties=properties,
                tags_code=0,
                sys_flag=header.sys_flag,
                born_timestamp=header.born_timestamp,
                born_host=born_host_of(conn),
                store_host=self.ctx.store_host,
                reconsume_times=header.reconsume_times or 0,
            )
            result = await self.ctx.store.put_message(msg)
            if (
                result.append is not None and pushed
            ):  # handlePutMessageResult: the stored position when put OK
                response.ext_fields = {**(response.ext_fields or {}), "msgId": result.append.msg_id,
                                       "queueOffset": str(result.append.logical_offset)}  # fmt: skip
            elif result.append is None:
                log.warning("storing reply message in %s failed: %s", header.topic, result.status)
        return response

    async def _push_reply(
        self, conn: Connection, request: RemotingCommand, header: SendRequest, properties: dict[str, str]
    ) -> tuple[bool, str]:
        sender = properties.get(C.PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        if sender is None:
            log.warning("%s is null, can not reply message", C.PROPERTY_MESSAGE_REPLY_TO_CLIENT)
            return False, f"reply message properties[{C.PROPERTY_MESSAGE_REPLY_TO_CLIENT}] is null"
        channel = self.ctx.producer_manager.find_channel(sender)
        if channel is None:
            remark = f"push reply message fail, channel of <{sender}> not found."
            log.warning(remark)
            return False, remark
        pushed = {**properties, C.PROPERTY_PUSH_REPLY_TIME: str(self.ctx.clock.now_ms())}
        host, port = self.ctx.store_host
        born = born_host_of(conn)
        push_header = ReplyMessageRequestHeader(
            producer_group=_producer_group(request),
            topic=header.topic,
            default_topic=header.default_topic,
            default_topic_queue_nums=header.default_topic_queue_nums,
            queue_id=header.queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            flag=header.flag,
            born_host=f"{born[0]}:{born[1]}",
            store_host=f"{host}:{port}",
            store_timestamp=self.ctx.clock.now_ms(),
            properties=encode_properties(pushed),
            reconsume_times=header.reconsume_times,
            unit_mode=header.unit_mode,
        )
        push = RemotingCommand.request(
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, push_header.to_ext_fields(), request.body
        )
        try:
            answer = await self.ctx.call_client(channel, push, PUSH_REPLY_TIMEOUT_MS)
        except RocketQError as exc:
            log.warning("push reply message to <%s> fail. %s", sender, exc)
            return False, f"push reply message to {sender}fail."
        if answer.code != ResponseCode.SUCCESS:
            log.warning("push reply message to <%s> return fail, response remark: %s", sender, answer.remark)
            return False, f"push reply message to {sender}fail."
        return True, ""


def _producer_group(request: RemotingCommand) -> str:
    ext = request.ext_fields or {}
    return ext.get("a") or ext.get("producerGroup") or ""  # V2 letter, V1 name
