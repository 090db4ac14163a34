"""Typed headers of message lookup: QUERY_MESSAGE (12) by key and VIEW_MESSAGE_BY_ID (33) by offset.

Ports of org.apache.rocketmq.common.protocol.header.{QueryMessageRequestHeader,
QueryMessageResponseHeader, ViewMessageRequestHeader, ViewMessageResponseHeader} (4.9.8;
docs/protocol.md 2.11). Deviation: QueryMessageRequestHeader also names the extra extField
`_UNIQUE_KEY_QUERY` ("true": `key` is a UNIQ_KEY) that Java clients put beside the header.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.remoting.protocol.headers.base import CommandHeader, Int32, jfield


@dataclass(frozen=True, slots=True)
class QueryMessageRequestHeader(CommandHeader):
    """QUERY_MESSAGE (12): messages of `topic` indexed under `key`, stored within [begin, end] ms."""

    topic: str = jfield("topic")
    key: str = jfield("key")
    max_num: Int32 = jfield("maxNum")
    begin_timestamp: int = jfield("beginTimestamp")
    end_timestamp: int = jfield("endTimestamp")
    unique_key_query: bool | None = jfield("_UNIQUE_KEY_QUERY", None)  # MixAll.UNIQUE_MSG_QUERY_FLAG


@dataclass(frozen=True, slots=True)
class QueryMessageResponseHeader(CommandHeader):
    index_last_update_timestamp: int = jfield("indexLastUpdateTimestamp")
    index_last_update_phyoffset: int = jfield("indexLastUpdatePhyoffset")


@dataclass(frozen=True, slots=True)
class ViewMessageRequestHeader(CommandHeader):
    """VIEW_MESSAGE_BY_ID (33): `offset` is the commit-log offset decoded from an offset msgId."""

    offset: int = jfield("offset")


@dataclass(frozen=True, slots=True)
class ViewMessageResponseHeader(CommandHeader):
    """Empty."""
