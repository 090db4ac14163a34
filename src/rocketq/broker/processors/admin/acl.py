"""The mqadmin ACL verbs: updateAclConfig (50), deleteAclConfig (51), clusterAclConfigVersion (52),
updateGlobalWhiteAddr (53), and RocketMQ 4.7's getAccessConfigSubCommand (54).

Port of AdminBrokerProcessor.updateAndCreateAccessConfig / deleteAccessConfig /
getBrokerAclConfigVersion / updateGlobalWhiteAddrsConfig (4.9.8): the change is written to the ACL
file that holds the account (a new one goes to aclFilePath), then reloaded. Header fields are Java's
(CreateAccessConfigRequestHeader: accessKey, secretKey, whiteRemoteAddress, defaultTopicPerm,
defaultGroupPerm, topicPerms and groupPerms comma-separated, admin; GetBrokerAclConfigResponseHeader:
version, allAclFileVersion, brokerName, brokerAddr, clusterName). With aclEnable=false they answer
the *_FAILED code naming the reason. Only admin accounts reach them (rocketq.remoting.acl.permission).
Deviation: code 54's body (GetBrokerClusterAclConfigResponseBody: globalWhiteAddrs,
plainAccessConfigs) leaves the secret keys out; Java 4.7 sent them.
"""

from __future__ import annotations

import json
import logging

from rocketq.broker.context import BrokerContext
from rocketq.broker.processors.common import Connection, Processor, RequestError, ok
from rocketq.remoting.acl.errors import AclError
from rocketq.remoting.acl.plain_config import PlainAclConfig
from rocketq.remoting.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.protocol.command import RemotingCommand

log = logging.getLogger("rocketq.acl")


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


class AclAdminProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.handlers = {
            RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: self.update_acl_config,
            RequestCode.DELETE_ACL_CONFIG: self.delete_acl_config,
            RequestCode.GET_BROKER_CLUSTER_ACL_INFO: self.get_acl_config_version,
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.update_global_white_addrs,
            RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: self.get_acl_config,
        }

    def _acl(self, failed_code: int) -> PlainAclConfig:
        acl: PlainAclConfig | None = self.ctx.acl_config
        if acl is None:
            raise RequestError(failed_code, "ACL is not enabled on this broker (aclEnable=false)")
        return acl

    async def update_acl_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        failed = ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        acl = self._acl(failed)
        f = request.ext_fields or {}
        admin = f.get("admin")
        fields = {
            "accessKey": f.get("accessKey"),
            "secretKey": f.get("secretKey"),
            "whiteRemoteAddress": f.get("whiteRemoteAddress"),
            "admin": None if admin is None else admin.lower() == "true",
            "defaultTopicPerm": f.get("defaultTopicPerm"),
            "defaultGroupPerm": f.get("defaultGroupPerm"),
            "topicPerms": _split(f.get("topicPerms")),
            "groupPerms": _split(f.get("groupPerms")),
        }
        try:
            acl.update_account(fields)
        except (AclError, OSError) as exc:
            raise RequestError(failed, str(exc)) from None
        log.info("ACL account %s updated by %s", fields["accessKey"], conn.remote_addr)
        return ok(request)

    async def delete_acl_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        failed = ResponseCode.DELETE_ACL_CONFIG_FAILED
        acl = self._acl(failed)
        access_key = request.ext("accessKey") or ""
        try:
            deleted = acl.delete_account(access_key)
        except (AclError, OSError) as exc:
            raise RequestError(failed, str(exc)) from None
        if not deleted:
            raise RequestError(
                failed, f"The accesskey[{access_key}] corresponding to accessConfig has been deleted failed."
            )
        log.info("ACL account %s deleted by %s", access_key, conn.remote_addr)
        return ok(request)

    async def update_global_white_addrs(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        failed = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        acl = self._acl(failed)
        patterns = _split(request.ext("globalWhiteAddrs")) or []
        try:
            acl.update_global_white(patterns, request.ext("aclFileFullPath") or None)
        except (AclError, OSError) as exc:
            raise RequestError(failed, str(exc)) from None
        log.info("ACL global whitelist set to %s by %s", patterns, conn.remote_addr)
        return ok(request)

    async def get_acl_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        acl = self._acl(ResponseCode.SYSTEM_ERROR)
        return ok(request, body=json.dumps(acl.describe()).encode("utf-8"))

    async def get_acl_config_version(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        acl = self._acl(ResponseCode.SYSTEM_ERROR)
        versions = acl.tables.versions
        cfg = self.ctx.broker_config
        return ok(
            request,
            {
                "version": json.dumps(versions.get(acl.default_file, {"counter": 0, "timestamp": 0})),
                "allAclFileVersion": json.dumps(versions),
                "brokerName": cfg.broker_name,
                "brokerAddr": self.ctx.broker_addr,
                "clusterName": cfg.broker_cluster_name,
            },
        )
