"""GET_BROKER_RUNTIME_INFO (28), GET_BROKER_CONFIG (26), UPDATE_BROKER_CONFIG (25).

Port of AdminBrokerProcessor.getBrokerRuntimeInfo / getBrokerConfig / updateBrokerConfig (4.9.8;
docs/protocol.md 2.12). The runtime KVTable has Java's broker keys where we have the figure (version, queue
sizes and capacities, dispatchBehindBytes, earliestMessageTimeStamp, commitLogDirCapacity, ...) plus the
store's own runtime_info(); every value is a string. The config body is Java properties text
(`key=value` lines, RocketMQ key names). An update changes the running broker's and store's settings;
keys that identify the broker or its sockets cannot change while it runs (NO_PERMISSION, as Java's
configBlackList), an unknown key or a bad value is SYSTEM_ERROR naming it. A changed brokerPermission
bumps the topics' data version and re-registers with the NameServers, as Java does.
"""

from __future__ import annotations

import logging
import shutil
from typing import Any

from pydantic import ValidationError

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, ok
from rocketq.common.config import RocketConfig, parse_properties
from rocketq.common.constants import CURRENT_VERSION
from rocketq.remoting.protocol.bodies import fastjson
from rocketq.remoting.protocol.bodies.register import DataVersion, KVTable
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.headers.admin import GetBrokerConfigResponseHeader

log = logging.getLogger("rocketq.broker.admin")

# Settings a running broker cannot take (Java configBlackList, extended to what names or binds it).
FROZEN_KEYS = frozenset(
    {
        "brokerName", "brokerClusterName", "brokerId", "brokerIP1", "brokerIP2", "listenPort", "bindAddress",
        "storePathRootDir", "storePathCommitLog", "namesrvAddr", "configBlackList", "brokerConfigPath",
    }
)  # fmt: skip


def version_desc(ordinal: int) -> str:
    """MQVersion.getVersionDesc for 4.x ordinals: 409 -> V4_9_8, 408 -> V4_9_8_SNAPSHOT."""
    delta = ordinal - 213
    snapshot = delta % 2 == 1  # each release's ordinal is preceded by its _SNAPSHOT
    minor, rest = divmod(delta + (1 if snapshot else 0), 20)
    return f"V4_{minor}_{rest // 2}" + ("_SNAPSHOT" if snapshot else "")


def properties_text(*models: RocketConfig) -> str:
    """Java Configuration.getAllConfigsFormatString: `key=value` lines under RocketMQ's names."""
    lines: list[str] = []
    for model in models:
        for name, info in type(model).model_fields.items():
            value = getattr(model, name)
            if value is None:
                value = ""
            elif isinstance(value, bool):
                value = "true" if value else "false"
            elif hasattr(value, "value"):
                value = value.value
            lines.append(f"{info.alias or name}={value}")
    return "\n".join(sorted(lines)) + "\n"


class RuntimeAdminProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.config_version = DataVersion()
        self.handlers = {
            RequestCode.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
            RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
        }
        # Queue sizes of the executors, filled in by the controller once the registry exists.
        self.queue_sizes: dict[str, Any] = {}

    async def get_broker_runtime_info(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        table = {str(k): str(v) for k, v in self.runtime_info().items()}
        return ok(request, body=fastjson.dumps(KVTable(table).to_json()))

    def runtime_info(self) -> dict[str, Any]:
        ctx = self.ctx
        cfg = ctx.broker_config
        info: dict[str, Any] = dict(ctx.store.runtime_info())
        info.update(
            brokerVersionDesc=version_desc(CURRENT_VERSION),
            brokerVersion=CURRENT_VERSION,
            sendThreadPoolQueueCapacity=cfg.send_thread_pool_queue_capacity,
            pullThreadPoolQueueCapacity=cfg.pull_thread_pool_queue_capacity,
            queryThreadPoolQueueCapacity=cfg.query_thread_pool_queue_capacity,
            dispatchBehindBytes=ctx.store.dispatch_behind_bytes(),
            startAcceptSendRequestTimeStamp=cfg.start_accept_send_request_timestamp_ms,
            bootTimestamp=ctx.boot_timestamp_ms,
            brokerAddr=ctx.broker_addr,
        )
        if ctx.schedule_service is not None:  # Java: scheduleMessageOffset_<level> = "<delivered>,<max>"
            info.update(ctx.schedule_service.running_stats())
        for name, size in self.queue_sizes.items():
            info[f"{name}ThreadPoolQueueSize"] = size() if callable(size) else size
        info.update(ctx.stats.runtime_info())  # msgPutTotal*, putTps, ..., the 5.x totals (broker/stats)
        # Figures mqadmin clusterList prints (it shows "null" for a missing one): Java's come from its thread
        # pools' oldest queued task and the commit log's page-cache lock; ours has neither wait, so 0 unless a
        # component reports one.
        for key in (
            "sendThreadPoolQueueHeadWaitTimeMills",
            "pullThreadPoolQueueHeadWaitTimeMills",
            "pageCacheLockTimeMills",
        ):
            info.setdefault(key, 0)
        root = ctx.store_config.store_path_root_dir
        if root:
            try:
                usage = shutil.disk_usage(root)
                info["commitLogDirCapacity"] = (
                    f"Total : {usage.total / 2**30:.1f} GiB, Free : {usage.free / 2**30:.1f} GiB."
                )
            except OSError:
                pass
        return info

    async def get_broker_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        body = properties_text(self.ctx.broker_config, self.ctx.store_config).encode("utf-8")
        version = fastjson.dumps(self.config_version.to_json()).decode("utf-8")
        return ok(request, GetBrokerConfigResponseHeader(version=version).to_ext_fields(), body)

    async def update_broker_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            values = parse_properties(request.body.decode("utf-8"))
        except UnicodeDecodeError:
            raise RequestError(ResponseCode.SYSTEM_ERROR, "the config body is not UTF-8 text") from None
        # Checked on the canonical (RocketMQ) name: the loader takes several spellings of one key
        # (brokerIP1, broker_ip1, broker-ip1), and every one of them must meet the same refusal.
        frozen = sorted({name for name in map(self._canonical_key, values) if name in FROZEN_KEYS})
        if frozen:
            raise RequestError(
                ResponseCode.NO_PERMISSION, f"Can not update config in black list: {', '.join(frozen)}"
            )
        log.info("updateBrokerConfig %s by %s", values, conn.remote_addr)
        changed = self._apply(values)
        if changed:
            self.config_version.next_version(self.ctx.clock.now_ms())
            self.ctx.on_broker_config_changed(changed)
        return ok(request)

    def _canonical_key(self, key: str) -> str:
        """The RocketMQ name of any spelling the config loader accepts; an unknown key as it is."""
        for model in (self.ctx.broker_config, self.ctx.store_config):
            field = model.known_keys().get(key)
            if field is not None:
                return type(model).model_fields[field].alias or field
        return key

    def _apply(self, values: dict[str, str]) -> set[str]:
        """Validate every key first, then assign; returns the RocketMQ names of what changed."""
        targets: list[tuple[RocketConfig, str, Any]] = []
        for key, raw in values.items():
            target = next(
                (m for m in (self.ctx.broker_config, self.ctx.store_config) if key in m.known_keys()), None
            )
            if target is None:
                raise RequestError(ResponseCode.SYSTEM_ERROR, f"unknown configuration key {key!r}")
            field = target.known_keys()[key]
            try:
                probe = type(target).model_validate({**target.model_dump(), field: raw})
            except ValidationError as exc:
                raise RequestError(
                    ResponseCode.SYSTEM_ERROR,
                    f"bad value for {key!r}: {exc.errors()[0]['msg']} (got {raw!r})",
                ) from None
            targets.append((target, field, getattr(probe, field)))
        changed: set[str] = set()
        for config, field, value in targets:
            if getattr(config, field) != value:
                setattr(config, field, value)
                changed.add(type(config).model_fields[field].alias or field)
        return changed
