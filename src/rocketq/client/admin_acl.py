"""Admin's ACL verbs (mqadmin updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr,
clusterAclConfigVersion), sent to every master broker of a cluster or to one broker.

Port of org.apache.rocketmq.tools.admin.DefaultMQAdminExtImpl's createAndUpdatePlainAccessConfig /
deletePlainAccessConfig / updateGlobalWhiteAddrConfig / examineBrokerClusterAclVersionInfo (the
request codes 50, 51, 53, 52 and Java's header field names). The account running them must be an
admin account of the brokers' ACL.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rocketq.remoting.protocol.codes import RequestCode

if TYPE_CHECKING:
    from rocketq.client.instance import ClientInstance


class AclAdminMixin:
    """Mixed into Admin: needs its `_inst()` and `_masters(cluster)`."""

    async def _inst(self) -> ClientInstance:
        raise NotImplementedError  # Admin's

    async def _masters(self, cluster: str | None) -> list[tuple[str, str]]:
        raise NotImplementedError  # Admin's

    async def _acl_targets(self, cluster: str | None, broker_addr: str | None) -> list[str]:
        if broker_addr:
            return [broker_addr]
        return [addr for _name, addr in await self._masters(cluster)]

    async def update_acl_config(
        self,
        access_key: str,
        secret_key: str | None = None,
        *,
        white_remote_address: str | None = None,
        admin: bool | None = None,
        default_topic_perm: str | None = None,
        default_group_perm: str | None = None,
        topic_perms: list[str] | None = None,
        group_perms: list[str] | None = None,
        cluster: str | None = None,
        broker_addr: str | None = None,
    ) -> list[str]:
        """Create or update an account on the brokers; the addresses changed."""
        header = {
            "accessKey": access_key,
            "secretKey": secret_key,
            "whiteRemoteAddress": white_remote_address,
            "admin": None if admin is None else str(admin).lower(),
            "defaultTopicPerm": default_topic_perm,
            "defaultGroupPerm": default_group_perm,
            "topicPerms": None if topic_perms is None else ",".join(topic_perms),
            "groupPerms": None if group_perms is None else ",".join(group_perms),
        }
        fields = {k: v for k, v in header.items() if v is not None}
        return await self._acl_call(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, fields, cluster, broker_addr)

    async def delete_acl_config(
        self, access_key: str, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        """Delete an account on the brokers; the addresses changed."""
        return await self._acl_call(
            RequestCode.DELETE_ACL_CONFIG, {"accessKey": access_key}, cluster, broker_addr
        )

    async def update_global_white_addr(
        self,
        patterns: list[str],
        *,
        acl_file: str | None = None,
        cluster: str | None = None,
        broker_addr: str | None = None,
    ) -> list[str]:
        """Replace the global whitelist (of `acl_file`, default the broker's aclFilePath)."""
        fields = {"globalWhiteAddrs": ",".join(patterns)}
        if acl_file:
            fields["aclFileFullPath"] = acl_file
        return await self._acl_call(
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, fields, cluster, broker_addr
        )

    async def cluster_acl_config_version(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[dict[str, Any]]:
        """Each broker's ACL file versions (GET_BROKER_CLUSTER_ACL_INFO)."""
        inst = await self._inst()
        out = []
        for addr in await self._acl_targets(cluster, broker_addr):
            resp = await inst.api.invoke(addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
            f = resp.ext_fields or {}
            out.append(
                {
                    "clusterName": f.get("clusterName"),
                    "brokerName": f.get("brokerName"),
                    "brokerAddr": f.get("brokerAddr", addr),
                    "version": json.loads(f.get("version") or "{}"),
                    "allAclFileVersion": json.loads(f.get("allAclFileVersion") or "{}"),
                }
            )
        return out

    async def get_acl_config(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[dict[str, Any]]:
        """Each broker's whitelist and accounts, secret keys left out (GET_BROKER_CLUSTER_ACL_CONFIG)."""
        inst = await self._inst()
        out = []
        for addr in await self._acl_targets(cluster, broker_addr):
            resp = await inst.api.invoke(addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
            out.append({"brokerAddr": addr, **json.loads(resp.body or b"{}")})
        return out

    async def _acl_call(
        self, code: int, fields: dict[str, str], cluster: str | None, broker_addr: str | None
    ) -> list[str]:
        inst = await self._inst()
        targets = await self._acl_targets(cluster, broker_addr)
        for addr in targets:
            await inst.api.invoke(addr, code, fields)
        return targets
