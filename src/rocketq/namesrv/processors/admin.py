"""Admin codes: topic lists (206, 224, 304, 311-313), DELETE_TOPIC_IN_NAMESRV (216), write permission
(205, 327) and the NameServer's own config (318, 319).

Port of the matching DefaultRequestProcessor handlers (4.9.8). Deviation: UPDATE_NAMESRV_CONFIG
refuses a key NamesrvConfig does not know or a bad value with SYSTEM_ERROR naming it (Java ignores
unknown keys); black-listed keys answer NO_PERMISSION as in Java. The brokerChannelExpiredTime
change applies at once; the scan interval and listen port only at the next start.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketq.common.config import parse_properties
from rocketq.common.errors import ConfigError
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.processors.base import NamesrvContext, Peer, error, ok
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.codes import ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetTopicsByClusterRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)

log = logging.getLogger("rocketq.namesrv")


def topic_list_body(topics: list[str], broker_addr: str | None = None) -> bytes:
    """TopicList JSON: `{"topicList":[...]}` plus `brokerAddr` when set."""
    obj: dict[str, Any] = {"topicList": sorted(set(topics))}
    if broker_addr is not None:
        obj["brokerAddr"] = broker_addr
    return fastjson.dumps(obj)


def config_properties_text(config: NamesrvConfig) -> str:
    """Java properties text of every setting (RocketMQ key names), as GET_NAMESRV_CONFIG returns it."""
    lines = []
    for name, info in sorted(type(config).model_fields.items(), key=lambda kv: kv[1].alias or kv[0]):
        value = getattr(config, name)
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{info.alias or name}={text}")
    return "\n".join(lines) + "\n"


class AdminProcessor:
    def __init__(self, ctx: NamesrvContext) -> None:
        self.ctx = ctx

    # -- write permission -----------------------------------------------------------------------
    def wipe_write_perm_of_broker(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = WipeWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self.ctx.routes.wipe_write_perm_of_broker(header.broker_name)
        log.info("wipe write perm of broker[%s], client: %s, %d", header.broker_name, peer.remote_addr, count)
        return ok(request, WipeWritePermOfBrokerResponseHeader(count).to_ext_fields())

    def add_write_perm_of_broker(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = AddWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self.ctx.routes.add_write_perm_of_broker(header.broker_name)
        log.info("add write perm of broker[%s], client: %s, %d", header.broker_name, peer.remote_addr, count)
        return ok(request, AddWritePermOfBrokerResponseHeader(count).to_ext_fields())

    # -- topics ---------------------------------------------------------------------------------
    def get_all_topic_list(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=topic_list_body(self.ctx.routes.all_topics()))

    def delete_topic_in_namesrv(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = DeleteTopicFromNamesrvRequestHeader.from_ext_fields(request.ext_fields)
        self.ctx.routes.delete_topic(header.topic, header.cluster_name)
        log.info(
            "delete topic %s in namesrv (cluster %s), client: %s",
            header.topic,
            header.cluster_name,
            peer.remote_addr,
        )
        return ok(request)

    def get_topics_by_cluster(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        header = GetTopicsByClusterRequestHeader.from_ext_fields(request.ext_fields)
        return ok(request, body=topic_list_body(self.ctx.routes.topics_by_cluster(header.cluster)))

    def get_system_topic_list(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        topics, broker_addr = self.ctx.routes.system_topics()
        return ok(request, body=topic_list_body(topics, broker_addr))

    def get_unit_topic_list(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=topic_list_body(self.ctx.routes.unit_topics()))

    def get_has_unit_sub_topic_list(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=topic_list_body(self.ctx.routes.has_unit_sub_topics()))

    def get_has_unit_sub_ununit_topic_list(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=topic_list_body(self.ctx.routes.has_unit_sub_ununit_topics()))

    # -- config ---------------------------------------------------------------------------------
    def update_namesrv_config(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        if not request.body:
            return ok(request)
        try:
            values = parse_properties(request.body.decode("utf-8"))
        except UnicodeDecodeError:
            return error(request, ResponseCode.SYSTEM_ERROR, "the config body is not UTF-8 text")
        config = self.ctx.config
        known = type(config).known_keys()
        black = {known.get(k, k) for k in config.black_listed_keys()}
        if any(known.get(key, key) in black for key in values):
            return error(request, ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        try:
            merged = {
                **config.model_dump(),
                **{self._field(known, key): value for key, value in values.items()},
            }
            updated = type(config).build(merged, "UPDATE_NAMESRV_CONFIG")
        except ConfigError as exc:
            return error(request, ResponseCode.SYSTEM_ERROR, str(exc))
        for name in type(config).model_fields:
            setattr(config, name, getattr(updated, name))
        self.ctx.routes.broker_channel_expired_ms = config.broker_channel_expired_time_ms
        log.info("updateConfig called by %s: %s", peer.remote_addr, sorted(values))
        return ok(request)

    @staticmethod
    def _field(known: dict[str, str], key: str) -> str:
        if key not in known:
            raise ConfigError(f"UPDATE_NAMESRV_CONFIG: unknown key {key!r} for NamesrvConfig")
        return known[key]

    def get_namesrv_config(self, peer: Peer, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=config_properties_text(self.ctx.config).encode("utf-8"))
