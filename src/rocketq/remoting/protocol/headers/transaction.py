"""Typed headers of transactions: END_TRANSACTION (37) and CHECK_TRANSACTION_STATE (39).

Ports of org.apache.rocketmq.common.protocol.header.{EndTransactionRequestHeader,
EndTransactionResponseHeader, CheckTransactionStateRequestHeader, CheckTransactionStateResponseHeader}
(4.9.8; docs/protocol.md 2.9). `commit_or_rollback` holds MessageSysFlag transaction bits: 0 unknown,
8 commit, 12 rollback (rocketq.common.constants.MessageSysFlag.TRANSACTION_*_TYPE).
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.headers.base import CommandHeader, Int32, jfield


@dataclass(frozen=True, slots=True)
class EndTransactionRequestHeader(CommandHeader):
    """END_TRANSACTION (37, oneway): commit or roll back the half message at these offsets."""

    producer_group: str = jfield("producerGroup")
    tran_state_table_offset: int = jfield("tranStateTableOffset")  # the half message's queue offset
    commit_log_offset: int = jfield("commitLogOffset")
    commit_or_rollback: Int32 = jfield("commitOrRollback")
    msg_id: str = jfield("msgId")  # UNIQ_KEY
    from_transaction_check: bool = jfield("fromTransactionCheck", False)
    transaction_id: str | None = jfield("transactionId", None)
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class EndTransactionResponseHeader(CommandHeader):
    """Empty."""


@dataclass(frozen=True, slots=True)
class CheckTransactionStateRequestHeader(CommandHeader):
    """CHECK_TRANSACTION_STATE (39, broker -> producer, oneway); the body is the half message."""

    tran_state_table_offset: int = jfield("tranStateTableOffset")
    commit_log_offset: int = jfield("commitLogOffset")
    msg_id: str | None = jfield("msgId", None)
    transaction_id: str | None = jfield("transactionId", None)
    offset_msg_id: str | None = jfield("offsetMsgId", None)
    bname: str | None = jfield("bname", None)


@dataclass(frozen=True, slots=True)
class CheckTransactionStateResponseHeader(CommandHeader):
    producer_group: str = jfield("producerGroup")
    tran_state_table_offset: int = jfield("tranStateTableOffset")
    commit_log_offset: int = jfield("commitLogOffset")
    commit_or_rollback: Int32 = jfield("commitOrRollback")
