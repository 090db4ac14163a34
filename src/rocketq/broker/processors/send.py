"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320).

Port of org.apache.rocketmq.broker.processor.{SendMessageProcessor, AbstractSendMessageProcessor}
(4.9.8; docs/protocol.md 2.4): the same checks in the same order, the same response codes and headers
(msgId = offset msgId(s), queueId = the queue asked for, queueOffset = where it landed, plus MSG_REGION
and TRACE_ON on every answer). The batch path is chosen by the header's `batch` flag, not the code.
Deviations: a topic whose perm lacks WRITE, or a broker whose brokerPermission lacks WRITE,
refuses every send with NO_PERMISSION (Java refuses only order topics of an unwritable broker and
relies on the route); a body over maxMessageSize is refused here with MESSAGE_ILLEGAL before the store
sees it; a malformed batch body is MESSAGE_ILLEGAL (Java: SYSTEM_ERROR from its encoder).
Hooks: delayed messages are redirected into SCHEDULE_TOPIC_XXXX (rocketq.store.delay, the helper both
sides agree on; delivery is the store's schedule service), timer messages into the timer topic
(rocketq.store.timer; a time over timerMaxDelaySec is MESSAGE_ILLEGAL); CONSUMER_SEND_MSG_BACK (36) is
served here too, as in Java (send_back.py); half messages go through
`prepare_half_message` (broker/transaction/half.py: Java's TransactionalMessageBridge rewrite; a
delayed half message is MESSAGE_ILLEGAL). A batch holding a TRAN_MSG entry is MESSAGE_ILLEGAL too.

Hot path (about 11 us of broker work per message on top of the store, measured in-process): one header
decode into a tuple, one properties decode, cached tag hashes and born hosts, one store call; a topic
name is validated only when it is not in the table yet.
"""

from __future__ import annotations

import json.encoder
import logging
import random
import struct
from collections.abc import Callable, Iterable, Mapping
from itertools import repeat
from operator import contains, itemgetter
from time import perf_counter_ns
from typing import NamedTuple

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import (
    FAQ_SUFFIX,
    Connection,
    Processor,
    RequestError,
    decode_header,
    error_response,
    parse_host,
)
from rocketq.broker.processors.send_back import ConsumerSendMsgBack
from rocketq.broker.topic_config import RW, build_topic_sys_flag, topic_problem
from rocketq.broker.transaction.half import prepare_half_message
from rocketq.common import constants as C
from rocketq.common.constants import MessageSysFlag, PermName
from rocketq.common.message import decode_properties
from rocketq.common.record.codec import decode_batch_for_store
from rocketq.common.record.layout import MAX_PROPERTIES_BYTES
from rocketq.common.record.properties import (
    encode_properties_bytes,
    properties_for_store,
    properties_for_store_py,
)
from rocketq.common.tags import hash_of_tag
from rocketq.remoting.protocol.bodies.register import TopicConfig, TopicFilterType
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.compiled import constructor
from rocketq.remoting.protocol.errors import BadHeaderValueError, MissingHeaderFieldError
from rocketq.remoting.protocol.header_json import EncodedExt
from rocketq.remoting.protocol.headers.send import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from rocketq.store.config import BrokerRole, FlushDiskType
from rocketq.store.delay import redirect_to_schedule
from rocketq.store.message import BrokerMessage, BrokerMessageBatch
from rocketq.store.status import PutMessageStatus, PutResult
from rocketq.store.timer import TimerMessageIllegal, drop_timer_request, is_timer_request, redirect_to_timer
from rocketq.store.timer.redirect import REQUEST_PROPERTIES as TIMER_REQUEST_PROPERTIES

log = logging.getLogger("rocketq.broker.send")

DLQ_NUMS_PER_GROUP = 1
V3_4_9 = 121  # MQVersion ordinal from which the header's maxReconsumeTimes is honoured

_PUT_OK = PutMessageStatus.PUT_OK
_SUCCESS = int(ResponseCode.SUCCESS)
_STORED_CODES = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
}

HalfMessageHook = Callable[[BrokerContext, BrokerMessage], BrokerMessage]

_json_str: Callable[[str], str] = json.encoder.encode_basestring  # as the JSON codec
# Enum members and constants read on every send, as module constants (a class attribute costs ~80 ns).
_PERM_WRITE = int(PermName.PERM_WRITE)
_MULTI_TAG = TopicFilterType.MULTI_TAG
_MULTI_TAGS_FLAG = int(MessageSysFlag.MULTI_TAGS_FLAG)
_TAGS = C.PROPERTY_TAGS
_DELAY = C.PROPERTY_DELAY_TIME_LEVEL
_WAIT = C.PROPERTY_WAIT_STORE_MSG_OK
_PREPARED = C.PROPERTY_TRANSACTION_PREPARED
_PROPS_OF = itemgetter(2)  # a decoded batch entry's properties
_REQUEST_OF, _QUEUE_OF = itemgetter(1), itemgetter(3)  # of a stored put of a run (process_requests)
# A delay level or a timer time (is_timer_request's names): the properties that redirect a send.
_REDIRECTING = frozenset((C.PROPERTY_DELAY_TIME_LEVEL, *TIMER_REQUEST_PROPERTIES))
_CLUSTER = C.PROPERTY_CLUSTER
_RETRY_PREFIX = C.RETRY_GROUP_TOPIC_PREFIX
_NOT_ALLOWED = C.NOT_ALLOWED_SEND_TOPICS
_MSGPACK = SerializeType.MSGPACK
# The compiled properties_for_store (which also gives the stored bytes), None on the pure path.
_CUT = properties_for_store if properties_for_store is not properties_for_store_py else None
# The codes whose header has the long field names (SendMessageRequestHeader); as ints, read once.
# BrokerMessage from every field without the dataclass's Python __init__ (rocketq.remoting.protocol.compiled).
_new_message = constructor(BrokerMessage)
_V1_CODES = frozenset((int(RequestCode.SEND_MESSAGE), int(RequestCode.SEND_REPLY_MESSAGE)))


def _for_store(text: str, cluster: str) -> tuple[dict[str, str], bytes | None]:
    """A send's properties as stored: WAIT dropped, CLUSTER set; with the stored bytes cut from `text` by
    the compiled properties_for_store, else None (pure Python: properties_for_store_py's edit, without the
    cut, which in Python costs more than encoding the map again)."""
    if _CUT is not None:
        return _CUT(text, _WAIT, _CLUSTER, cluster)
    properties = decode_properties(text)
    properties.pop(_WAIT, None)
    properties[_CLUSTER] = cluster
    return properties, None


class SendRequest(NamedTuple):
    """The fields of either send header (V1 long names, V2 letters), read once on the hot path."""

    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None
    reconsume_times: int | None
    unit_mode: bool
    batch: bool
    max_reconsume_times: int | None

    @classmethod
    def of(cls, request: RemotingCommand) -> SendRequest:
        """Decode the header of a 10 / 310 / 320 / 324 / 325 request (SYSTEM_ERROR naming a missing field)."""
        if request.code in _V1_CODES:
            h = decode_header(SendMessageRequestHeader, request)
            return cls(
                h.topic, h.default_topic, h.default_topic_queue_nums, h.queue_id, h.sys_flag, h.born_timestamp,
                h.flag, h.properties, h.reconsume_times, h.unit_mode, h.batch, h.max_reconsume_times,
            )  # fmt: skip
        try:  # the V2 header's own rules, straight into this tuple (no header object on the hot path)
            return _decode_v2_request(request.ext_fields)
        except (MissingHeaderFieldError, BadHeaderValueError) as exc:
            raise RequestError(ResponseCode.SYSTEM_ERROR, str(exc)) from None


_decode_v2_request = SendMessageRequestHeaderV2.compile_decoder_into(
    SendRequest, ("b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "m", "l")
)


def delay_level_of(properties: dict[str, str]) -> int:
    """The DELAY property as an int; 0 when absent or not a number (where Java's parseInt would throw)."""
    raw = properties.get(C.PROPERTY_DELAY_TIME_LEVEL)
    if not raw:
        return 0
    try:
        return int(raw)
    except ValueError:
        return 0


def born_host_of(conn: Connection) -> tuple[str, int]:
    """The producer's address as BORNHOST, parsed once per connection."""
    attributes = conn.attributes
    host = attributes.get("born_host")
    if host is None:
        host = attributes["born_host"] = parse_host(conn.remote_addr)
    return host


_WAIT_SEGMENT = "\x02" + _WAIT + "\x01"


def _waits_store_msg_ok(text: str) -> bool:
    """Java's Message.isWaitStoreMsgOK over a request's properties string: true unless WAIT is there with a
    value Boolean.parseBoolean does not take for true; the last WAIT counts and an empty value is no WAIT,
    as in MessageDecoder.string2messageProperties."""
    at = text.rfind(_WAIT_SEGMENT)
    if at >= 0:
        at += len(_WAIT_SEGMENT)
    elif text.startswith(_WAIT_SEGMENT[1:]):
        at = len(_WAIT_SEGMENT) - 1
    else:
        return True
    end = text.find("\x02", at)
    value = text[at:] if end < 0 else text[at:end]
    return not value or value.lower() == "true"


def _keep_no_wait(msg: BrokerMessage) -> None:
    """A producer's WAIT=false reaches the store, which reads it from the message (no flush or replica wait),
    and is not stored: Java's SendMessageProcessor.sendMessage takes WAIT out of the stored string and puts
    it back into the message's map. The stored bytes are fixed first where the store would encode the map."""
    if msg.properties_bytes is None:
        msg.properties_bytes = encode_properties_bytes(msg.properties)
    msg.properties[_WAIT] = "false"


class SendMessageProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.prepare_half_message: HalfMessageHook = prepare_half_message
        self._random = random.Random()
        self._answer_tails: dict[tuple[str | None, bool | None], str] = {}
        # Taken together when one read brings several (process_requests).
        self.batch_codes = frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2})
        # A put that may wait (SYNC_FLUSH, SYNC_MASTER) reads the producer's WAIT (_keep_no_wait).
        store_config = ctx.store_config
        self._store_waits = (
            store_config.flush_disk_type is FlushDiskType.SYNC_FLUSH
            or store_config.broker_role is BrokerRole.SYNC_MASTER
        )
        self.handlers = {
            RequestCode.SEND_MESSAGE: self.send,
            RequestCode.SEND_MESSAGE_V2: self.send,
            RequestCode.SEND_BATCH_MESSAGE: self.send,
            RequestCode.CONSUMER_SEND_MSG_BACK: ConsumerSendMsgBack(ctx).handle,
        }

    def _response_ext(self) -> dict[str, str]:
        cfg = self.ctx.broker_config
        return {
            C.PROPERTY_MSG_REGION: cfg.region_id,
            C.PROPERTY_TRACE_SWITCH: "true" if cfg.trace_on else "false",
        }

    async def send(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        header = SendRequest.of(request)
        topics = self.ctx.topic_config_manager
        changes = topics.changes
        try:
            if header.batch:
                response = await self._send_batch(conn, request, header)
            else:
                response = await self._send_one(conn, request, header)
        except RequestError as err:
            return self._refused(conn, request, err)
        if topics.changes != changes:
            # This send created its topic (or a DLQ): Java persists topics.json before answering, so
            # a kill -9 right after the acknowledgement cannot lose the topic of an acknowledged message.
            await topics.persist_changes()
        return response

    # -- checks shared by both paths (Java msgCheck) -----------------------------------------------
    def _check(self, conn: Connection, request: RemotingCommand, header: SendRequest) -> TopicConfig:
        cfg = self.ctx.broker_config
        if (
            cfg.start_accept_send_request_timestamp_ms
            and self.ctx.clock.now_ms() < cfg.start_accept_send_request_timestamp_ms
        ):
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, "broker unable to service until the configured start time"
            )
        topic = header.topic
        if cfg.broker_permission & _PERM_WRITE != _PERM_WRITE:  # PermName.is_writeable, inlined
            raise RequestError(
                ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] sending message is forbidden"
            )
        config = self.ctx.topic_config_manager.topic_config_table.get(topic)
        if config is None:
            # A topic in the table passed this check when it was created; only new names need it.
            problem = topic_problem(topic)
            if problem is not None:
                raise RequestError(ResponseCode.SYSTEM_ERROR, problem)
        if topic in C.NOT_ALLOWED_SEND_TOPICS:
            raise RequestError(ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
        if config is None:
            config = self._create_topic(conn, header)
        if config.perm & _PERM_WRITE != _PERM_WRITE:
            raise RequestError(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        valid = max(config.write_queue_nums, config.read_queue_nums)
        if header.queue_id >= valid:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{header.queue_id}] is illegal, {config.java_string()} Producer: {conn.remote_addr}",
            )
        if len(request.body) > self.ctx.max_message_size:
            # Java's store refuses it with MESSAGE_ILLEGAL and this remark (SendMessageProcessor.handlePutMessageResult);
            # ours adds what was wrong: the body's size and the setting it is over.
            raise RequestError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"{self._illegal_remark()} The body is {len(request.body)} bytes, over maxMessageSize.",
            )
        if header.properties is not None and len(header.properties) > MAX_PROPERTIES_BYTES:
            raise RequestError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"the message properties are {len(header.properties)} characters, more than {MAX_PROPERTIES_BYTES}",
            )
        return config

    def _create_topic(self, conn: Connection, header: SendRequest) -> TopicConfig:
        topic = header.topic
        sys_flag = 0
        if header.unit_mode:
            retry = topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX)
            sys_flag = build_topic_sys_flag(not retry, retry)
        manager = self.ctx.topic_config_manager
        log.info("topic %s does not exist, producer %s", topic, conn.remote_addr)
        config = manager.create_topic_in_send_message_method(
            topic, header.default_topic, conn.remote_addr, header.default_topic_queue_nums, sys_flag
        )
        if config is None and topic.startswith(C.RETRY_GROUP_TOPIC_PREFIX):
            config = manager.create_topic_in_send_message_back_method(topic, 1, RW, sys_flag)
        if config is None:
            raise RequestError(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!{FAQ_SUFFIX}"
            )
        return config

    def _pick_queue(self, header: SendRequest, config: TopicConfig) -> int:
        if header.queue_id >= 0:
            return int(header.queue_id)
        if config.write_queue_nums <= 0:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"topic {config.topic_name} has no writable queue")
        return self._random.randrange(99_999_999) % config.write_queue_nums

    # -- single messages of one read, together ---------------------------------------------------------
    async def process_requests(
        self, conn: Connection, requests: list[RemotingCommand]
    ) -> list[RemotingCommand | None]:
        """Consecutive SEND_MESSAGE / SEND_MESSAGE_V2 requests of one read (the transport's runs): each
        checked and turned into its message as `send` does, then one store call for all of them (one
        flush wait under SYNC_FLUSH) and one answer each. A refused request is answered alone; a
        request with the batch flag makes the run go one request at a time."""
        answers: list[RemotingCommand | None] = [None] * len(requests)
        msgs: list[BrokerMessage] = []
        stored: list[tuple[int, RemotingCommand, SendRequest, int, dict[str, str]]] = []
        topics = self.ctx.topic_config_manager
        changes = topics.changes
        # What every request of the run reads, read once (the plain message's own steps below); a request
        # the plain steps do not cover takes `_message`, the complete path, which reads them itself.
        ctx = self.ctx
        cfg = ctx.broker_config
        plain = not cfg.start_accept_send_request_timestamp_ms and cfg.broker_permission & _PERM_WRITE
        config_of = topics.topic_config_table.get
        max_body = ctx.max_message_size
        cluster = cfg.broker_cluster_name
        hosts = (born_host_of(conn), ctx.store_host)
        store_waits = self._store_waits
        for i, request in enumerate(requests):
            try:
                header = SendRequest.of(request)
            except RequestError as err:  # as `send`: a header that does not decode gets no send fields
                answers[i] = error_response(conn, request, err)
                continue
            if header.batch:  # one at a time; the ones refused already keep their (logged) answers
                return [
                    answer if answer is not None else await self.process_request(conn, r)
                    for answer, r in zip(answers, requests, strict=True)
                ]
            msg = None
            topic, _dt, _dq, queue_id, sys_flag, born_ts, flag, text, reconsume, _unit, _batch, _max = header
            config = config_of(topic) if plain else None
            body = request.body
            # A plain message: its topic known, writable and allowed, its queue asked for and there, sizes
            # in bounds, properties with no WAIT=false to honour, not a retry, half or delayed message.
            # Everything `_check` and `_message` would refuse or redirect is outside these conditions.
            if (
                config is not None
                and text
                and config.perm & _PERM_WRITE
                and 0 <= queue_id < config.write_queue_nums
                and len(body) <= max_body
                and len(text) <= MAX_PROPERTIES_BYTES
                and topic not in _NOT_ALLOWED
                and not topic.startswith(_RETRY_PREFIX)
                and not (store_waits and not _waits_store_msg_ok(text))
            ):
                properties, cut = _for_store(text, cluster)
                if _PREPARED not in properties and properties.keys().isdisjoint(_REDIRECTING):
                    if config.topic_filter_type is _MULTI_TAG:
                        sys_flag |= _MULTI_TAGS_FLAG
                    tags = properties.get(_TAGS)
                    # Every field, in order (_new_message): topic .. reconsume_times, the prepared offset, the
                    # three the store fills, properties_bytes.
                    msg = _new_message(
                        topic, queue_id, body, flag, properties, hash_of_tag(tags) if tags else 0, sys_flag,
                        born_ts, *hosts, reconsume or 0, 0, 0, 0, 0, cut,
                    )  # fmt: skip
            if msg is None:
                try:
                    msg, queue_id, properties = self._message(conn, request, header)
                except RequestError as err:
                    answers[i] = self._refused(conn, request, err)
                    continue
            msgs.append(msg)
            stored.append((i, request, header, queue_id, properties))
        if msgs:
            started = perf_counter_ns()
            results = await ctx.store.put_message_list(msgs)
            elapsed = perf_counter_ns() - started
            self._count_run([put[2].topic for put in stored], stored, results, elapsed)
            ready = self._answers(conn, map(_REQUEST_OF, stored), results, map(_QUEUE_OF, stored))
            for put, answer in zip(stored, ready, strict=True):
                answers[put[0]] = answer
        if topics.changes != changes:  # as `send`: topics.json is durable before the answers
            await topics.persist_changes()
        return answers

    def _refused(self, conn: Connection, request: RemotingCommand, err: RequestError) -> RemotingCommand:
        # Every send answer carries MSG_REGION / TRACE_ON, errors included (Java's preSend).
        response = error_response(conn, request, err)
        response.ext_fields = self._response_ext()
        return response

    # -- single message -----------------------------------------------------------------------------
    async def _send_one(
        self, conn: Connection, request: RemotingCommand, header: SendRequest
    ) -> RemotingCommand:
        msg, queue_id, properties = self._message(conn, request, header)
        started = perf_counter_ns()
        result = await self.ctx.store.put_message(msg)
        self._count(header.topic, properties, result, perf_counter_ns() - started)
        return self._answers(conn, (request,), (result,), (queue_id,))[0]

    def _message(
        self, conn: Connection, request: RemotingCommand, header: SendRequest
    ) -> tuple[BrokerMessage, int, dict[str, str]]:
        """The checks of one message; the message to store, the queue asked for and the request's
        properties (RequestError when refused)."""
        config = self._check(conn, request, header)
        queue_id = self._pick_queue(header, config)
        # WAIT is not worth storing (9 bytes a message); CLUSTER tells consumers where it was stored. Java
        # (SendMessageProcessor.sendMessage) encodes the edited map again; the compiled properties_for_store
        # cuts the stored bytes from the request's string instead, when that gives the same bytes.
        cluster = self.ctx.broker_config.broker_cluster_name
        text = header.properties
        if not text:
            properties, stored = {_CLUSTER: cluster}, None
        else:
            properties, stored = _for_store(text, cluster)
        sys_flag = header.sys_flag
        if config.topic_filter_type is _MULTI_TAG:
            sys_flag |= _MULTI_TAGS_FLAG
        tags = properties.get(_TAGS)
        # Positional, in BrokerMessage's field order (topic, queue_id, body, flag, properties, tags_code,
        # sys_flag, born_timestamp, born_host, store_host, reconsume_times): keywords cost ~0.5 us more.
        msg = BrokerMessage(
            header.topic, queue_id, request.body, header.flag, properties, hash_of_tag(tags) if tags else 0,
            sys_flag, header.born_timestamp, born_host_of(conn), self.ctx.store_host, header.reconsume_times or 0,
        )  # fmt: skip
        if header.topic.startswith(_RETRY_PREFIX):
            self._handle_retry_and_dlq(request, header, msg)
        as_received = False  # the record stores the request's properties as they came (WAIT out, CLUSTER in)
        prepared = properties.get(_PREPARED)
        if prepared is not None and prepared.lower() == "true":
            if self.ctx.broker_config.reject_transaction_message:
                raise RequestError(
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{self.ctx.broker_config.broker_ip1}] sending transaction message is forbidden",
                )
            msg = self.prepare_half_message(self.ctx, msg)
        elif not properties.keys().isdisjoint(_REDIRECTING):  # else nothing to redirect (one C call)
            self._redirect_delayed(msg)
        else:  # the properties are stored as they are now
            msg.properties_bytes = stored
            as_received = True
        if text and self._store_waits and not _waits_store_msg_ok(text):
            if as_received:
                _keep_no_wait(msg)  # WAIT kept out of the record
            else:  # a half or redirected message's edited map is stored with it, as Java stores these
                msg.properties[_WAIT] = "false"
        return msg, queue_id, properties

    def _redirect_delayed(self, msg: BrokerMessage) -> None:
        """A delay level parks the message in SCHEDULE_TOPIC_XXXX; else a future timer time in the timer topic."""
        properties = msg.properties
        level = delay_level_of(properties)
        now = self.ctx.clock.now_ms()
        if level > 0:
            drop_timer_request(properties)  # a delay level wins over a timer (RocketMQ 5)
            redirect_to_schedule(msg, level, self.ctx.delay_levels, now)
        elif is_timer_request(properties):
            try:
                redirect_to_timer(msg, now, self.ctx.broker_config.timer_max_delay_s * 1000)
            except TimerMessageIllegal as exc:
                raise RequestError(ResponseCode.MESSAGE_ILLEGAL, str(exc)) from None

    def _handle_retry_and_dlq(
        self, request: RemotingCommand, header: SendRequest, msg: BrokerMessage
    ) -> None:
        group = header.topic[len(C.RETRY_GROUP_TOPIC_PREFIX) :]
        group_config = self.ctx.subscription_group_manager.find_subscription_group_config(group)
        if group_config is None:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}"
            )
        max_times = group_config.retry_max_times
        if request.version >= V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        if (header.reconsume_times or 0) >= max_times:
            dlq = C.dlq_topic(group)
            self.ctx.topic_config_manager.create_topic_in_send_message_back_method(
                dlq, DLQ_NUMS_PER_GROUP, RW, 0
            )
            msg.topic = dlq
            msg.queue_id = 0
            # The client's DELAY is kept, as Java's: handleRetryAndDLQ's setDelayTimeLevel(0) is overwritten
            # by the request's properties right after, so a delayed direct send (the Java client's fallback
            # when CONSUMER_SEND_MSG_BACK fails sets level 3 + reconsume times) waits in SCHEDULE_TOPIC_XXXX
            # and then lands in the DLQ.

    # -- batch ----------------------------------------------------------------------------------------
    async def _send_batch(
        self, conn: Connection, request: RemotingCommand, header: SendRequest
    ) -> RemotingCommand:
        config = self._check(conn, request, header)
        queue_id = self._pick_queue(header, config)
        batch_props = decode_properties(header.properties) if header.properties else {}
        if MessageSysFlag.transaction_value(header.sys_flag) != MessageSysFlag.TRANSACTION_NOT_TYPE:
            raise RequestError(ResponseCode.MESSAGE_ILLEGAL, "a batch cannot hold transactional messages")
        if delay_level_of(batch_props) > 0 or is_timer_request(batch_props):
            raise RequestError(ResponseCode.MESSAGE_ILLEGAL, "a batch cannot hold delayed or timer messages")
        batch_props[C.PROPERTY_CLUSTER] = self.ctx.broker_config.broker_cluster_name
        try:
            # Each record stores its own properties followed by the batch's (Java MessageExtBatchEncoder);
            # compiled, the stored bytes are cut from the entry's own (`stored`), not encoded again.
            merged, stored = decode_batch_for_store(request.body, batch_props)
        except (ValueError, IndexError, struct.error) as exc:
            raise RequestError(
                ResponseCode.MESSAGE_ILLEGAL, f"the batch body does not decode: {exc}"
            ) from None
        if not merged:
            raise RequestError(ResponseCode.MESSAGE_ILLEGAL, "the batch body holds no message")
        # Whether any entry has the property at all, in C (a generator per entry was 3 % of a batch), then
        # its value only where it is.
        if any(map(contains, map(_PROPS_OF, merged), repeat(_PREPARED))) and any(
            props.get(_PREPARED, "").lower() == "true" for _f, _b, props in merged
        ):
            raise RequestError(ResponseCode.MESSAGE_ILLEGAL, "a batch cannot hold transactional messages")
        sys_flag = header.sys_flag
        if config.topic_filter_type is TopicFilterType.MULTI_TAG:
            sys_flag |= MessageSysFlag.MULTI_TAGS_FLAG
        batch = BrokerMessageBatch(
            topic=header.topic,
            queue_id=queue_id,
            entries=merged,
            sys_flag=sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=born_host_of(conn),
            store_host=self.ctx.store_host,
            reconsume_times=header.reconsume_times or 0,
            properties_bytes=stored,
        )
        started = perf_counter_ns()
        result = await self.ctx.store.put_messages(batch)
        self._count(header.topic, batch_props, result, perf_counter_ns() - started)
        return self._answers(conn, (request,), (result,), (queue_id,))[0]

    def _count(self, topic: str, properties: Mapping[str, str], result: PutResult, elapsed_ns: int) -> None:
        """A put into the statistics (BrokerStatsManager) and, with metrics on, into BrokerMetrics."""
        self.ctx.stats.on_put(topic, result, elapsed_ns)
        metrics = self.ctx.metrics
        if metrics is not None:
            metrics.on_put(topic, properties, result)

    def _count_run(
        self,
        topics: list[str],
        stored: list[tuple[int, RemotingCommand, SendRequest, int, dict[str, str]]],
        results: list[PutResult],
        elapsed_ns: int,
    ) -> None:
        """`_count` for the puts of a run, which one store call took `elapsed_ns` to make: one call each
        into the statistics and, with metrics on, into BrokerMetrics."""
        self.ctx.stats.on_put_run(topics, results, elapsed_ns)
        metrics = self.ctx.metrics
        if metrics is not None:
            metrics.on_put_many(topics, [put[4] for put in stored], results)

    # -- the answer -------------------------------------------------------------------------------------
    def _answers(
        self,
        conn: Connection,
        requests: Iterable[RemotingCommand],
        results: Iterable[PutResult],
        queue_ids: Iterable[int],
    ) -> list[RemotingCommand]:
        """The answers to stored requests (the results of their puts, the queues they asked for), the
        settings they carry read once; a request the store refused gets its refusal (`_refused`)."""
        cfg = self.ctx.broker_config
        # SendMessageResponseHeader(msg_id, queue_id, queue_offset, msg_region=region, trace_on=...)
        # .to_ext_fields(), written out: the same keys in the same order, without the header object,
        # and with the JSON text the JSON codec would write for them (EncodedExt; the region/trace tail
        # is formatted once per setting).
        region, trace_on = cfg.region_id, cfg.trace_on
        usual = region is not None and trace_on is not None  # the usual settings: the map in one call
        trace = "true" if trace_on else "false"
        tail = self._answer_tails.get((region, trace_on))
        if tail is None:
            tail = self._answer_tail(region, trace_on)
        answers: list[RemotingCommand] = []
        add = answers.append
        for request, result, queue_id in zip(requests, results, queue_ids, strict=True):
            status = result.status
            append = result.append
            code = _SUCCESS if status is _PUT_OK else _STORED_CODES.get(status)
            if code is None or append is None:
                # The store logs its refusals (SERVICE_NOT_AVAILABLE) itself, one in REFUSAL_LOG_EVERY.
                logged = status is PutMessageStatus.SERVICE_NOT_AVAILABLE
                add(self._refused(conn, request, RequestError(*self._failure(result), logged=logged)))
                continue
            msg_id, queue_text, offset_text = append.msg_id, str(queue_id), str(append.logical_offset)
            if usual:
                ext = EncodedExt(
                    msgId=msg_id, queueId=queue_text, queueOffset=offset_text, MSG_REGION=region, TRACE_ON=trace
                )  # fmt: skip
            else:
                ext = EncodedExt(msgId=msg_id, queueId=queue_text, queueOffset=offset_text)
                if region is not None:
                    dict.__setitem__(ext, "MSG_REGION", region)
                if trace_on is not None:
                    dict.__setitem__(ext, "TRACE_ON", trace)
            if request.serialize_type is not _MSGPACK:  # a msgpack answer (our SDK) never reads the text
                ext.json = f'{{"msgId":{_json_str(msg_id)},"queueId":"{queue_text}","queueOffset":"{offset_text}"{tail}'
            add(request.make_response(code, None, ext))
        return answers

    def _answer_tail(self, region: str | None, trace_on: bool | None) -> str:
        tail = (
            ("" if region is None else f',"MSG_REGION":{_json_str(region)}')
            + ("" if trace_on is None else f',"TRACE_ON":"{"true" if trace_on else "false"}"')
            + "}"
        )
        if len(self._answer_tails) < 16:
            self._answer_tails[(region, trace_on)] = tail
        return tail

    def _illegal_remark(self) -> str:
        return (
            f"the message is illegal, maybe msg body or properties length not matched. msg body length "
            f"limit {self.ctx.max_message_size}B, msg properties length limit 32KB."
        )

    def _failure(self, result: PutResult) -> tuple[int, str]:
        status = result.status
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return ResponseCode.MESSAGE_ILLEGAL, result.remark or self._illegal_remark()
        if status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
            return ResponseCode.SERVICE_NOT_AVAILABLE, (
                result.remark
                or "service not available now: the disk may be full, the store is shutting down or this is a slave"
            )
        if status is PutMessageStatus.CREATE_MAPEDFILE_FAILED:
            return ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."
        if status is PutMessageStatus.OS_PAGECACHE_BUSY:
            return ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
        return ResponseCode.SYSTEM_ERROR, result.remark or status.value
