"""Transaction unit-test helpers: a broker context over a small real store, a socketless connection,
and request builders for half messages and END_TRANSACTION."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from rocketq.broker.clients import ClientChannelInfo, ConsumerManager, ProducerManager
from rocketq.broker.config import BrokerConfig
from rocketq.broker.context import BrokerContext
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.processors.end_transaction import EndTransactionProcessor
from rocketq.broker.processors.send import SendMessageProcessor
from rocketq.broker.rebalance_lock import RebalanceLockManager
from rocketq.broker.subscription_group import SubscriptionGroupManager
from rocketq.broker.topic_config import TopicConfigManager
from rocketq.broker.transaction.check import TransactionalMessageCheckService
from rocketq.broker.transaction.service import TransactionalMessageService
from rocketq.common.clock import ManualClock
from rocketq.common.constants import MessageSysFlag
from rocketq.common.message import MessageExt, encode_properties
from rocketq.common.msg_id import parse_offset_msg_id
from rocketq.common.record.codec import decode_records
from rocketq.remoting.protocol.codes import LanguageCode, RequestCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.send import SendMessageRequestHeader
from rocketq.remoting.protocol.headers.transaction import EndTransactionRequestHeader
from rocketq.store.config import MessageStoreConfig
from rocketq.store.delay import DelayLevels
from rocketq.store.message_store import MessageStore

SMALL: dict[str, Any] = {
    "mappedFileSizeCommitLog": 256 * 1024,
    "mappedFileSizeConsumeQueue": 20 * 256,
    "maxMessageSize": 8192,
    "maxHashSlotNum": 64,
    "maxIndexNum": 256,
    "mappedFileReserveAhead": 4096,
}
COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
UNKNOWN = MessageSysFlag.TRANSACTION_NOT_TYPE
GROUP = "pg_tx"

_ids = itertools.count(1)


class FakeConnection:
    def __init__(self, remote_addr: str = "10.0.0.5:4321") -> None:
        self.id = next(_ids)
        self.remote_addr = remote_addr
        self.is_active = True
        self.attributes: dict[str, Any] = {}
        self.sent: list[RemotingCommand] = []

    def send_response(self, cmd: RemotingCommand) -> None:
        self.sent.append(cmd)

    def close(self, reason: str = "") -> None:
        self.is_active = False


def open_store(root: Path, clock: ManualClock) -> MessageStore:
    store = MessageStore(MessageStoreConfig.build({"storePathRootDir": str(root), **SMALL}), clock)
    store.open()
    return store


def make_context(
    store: MessageStore, clock: ManualClock, config_dir: Path | None = None, **broker_cfg: Any
) -> BrokerContext:
    cfg = BrokerConfig(**broker_cfg)
    offsets = ConsumerOffsetManager(str(config_dir) if config_dir else None)
    if config_dir is not None:
        offsets.load()
    return BrokerContext(
        broker_config=cfg,
        store_config=store.config,
        store=store,  # type: ignore[arg-type]
        topic_config_manager=TopicConfigManager(cfg, None, clock),
        subscription_group_manager=SubscriptionGroupManager(cfg, None, clock),
        consumer_offset_manager=offsets,
        consumer_manager=ConsumerManager(None, clock),
        producer_manager=ProducerManager(clock),
        rebalance_lock_manager=RebalanceLockManager(60_000, clock),
        delay_levels=DelayLevels(),
        clock=clock,
        port=10911,
    )


class Broker:
    """The transaction parts of one broker over `store`: send, END_TRANSACTION, the checker."""

    def __init__(
        self, store: MessageStore, clock: ManualClock, config_dir: Path | None = None, **cfg: Any
    ) -> None:
        self.store = store
        self.clock = clock
        self.ctx = make_context(store, clock, config_dir, **cfg)
        self.service = TransactionalMessageService(self.ctx)
        self.ctx.transaction_service = self.service
        self.sent_checks: list[tuple[Any, RemotingCommand]] = []
        self.checker = TransactionalMessageCheckService(self.ctx, self.service, self._send_oneway)
        self.send_proc = SendMessageProcessor(self.ctx)
        self.end_proc = EndTransactionProcessor(self.ctx)
        self.producer_conn = FakeConnection()

    async def _send_oneway(self, conn: Any, cmd: RemotingCommand) -> None:
        self.sent_checks.append((conn, cmd))

    def register_producer(self, group: str = GROUP) -> FakeConnection:
        conn = FakeConnection()
        info = ClientChannelInfo(conn, f"client-{conn.id}", LanguageCode.JAVA, 0, self.clock.monotonic_ms())
        self.ctx.producer_manager.register_producer(group, info)
        return conn

    async def send_half(
        self,
        topic: str = "TopicTx",
        queue_id: int = 2,
        body: bytes = b"order-1",
        group: str = GROUP,
        **props: str,
    ) -> RemotingCommand:
        properties = {
            "UNIQ_KEY": f"UNIQ{next(_ids):04d}",
            "TAGS": "TagA",
            "TRAN_MSG": "true",
            "PGROUP": group,
            **props,
        }
        header = SendMessageRequestHeader(
            producer_group=group, topic=topic, default_topic="TBW102", default_topic_queue_nums=4, queue_id=queue_id,
            sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE, born_timestamp=self.clock.now_ms(), flag=3,
            properties=encode_properties(properties),
        )  # fmt: skip
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE, header.to_ext_fields(), body)
        response = await self.send_proc.process_request(self.producer_conn, request)
        assert response is not None
        return response

    async def end(
        self, sent: RemotingCommand | None = None, state: int = COMMIT, *, oneway: bool = False,
        from_check: bool = False, group: str = GROUP, offset: int | None = None, phy: int | None = None,
    ) -> RemotingCommand | None:  # fmt: skip
        ext = (sent.ext_fields or {}) if sent is not None else {}
        header = EndTransactionRequestHeader(
            producer_group=group,
            tran_state_table_offset=int(ext.get("queueOffset", 0)) if offset is None else offset,
            commit_log_offset=parse_offset_msg_id(ext["msgId"])[2] if phy is None else phy,
            commit_or_rollback=state,
            msg_id="m",
            from_transaction_check=from_check,
        )
        request = RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext_fields(), oneway=oneway)
        return await self.end_proc.process_request(self.producer_conn, request)

    async def answer_check(self, check: RemotingCommand, state: int = COMMIT) -> RemotingCommand | None:
        ext = check.ext_fields or {}
        return await self.end(
            state=state,
            from_check=True,
            offset=int(ext["tranStateTableOffset"]),
            phy=int(ext["commitLogOffset"]),
        )

    def read(self, topic: str, queue_id: int = 0) -> list[MessageExt]:
        records: list[bytes] = []
        offset = max(self.store.get_min_offset_in_queue(topic, queue_id), 0)
        for _ in range(100):
            got = self.store.get_message("g", topic, queue_id, offset, 32)
            if not got.records:
                break
            records.extend(got.records)
            offset = got.next_begin_offset
        return decode_records(b"".join(records), decompress_body=False)
