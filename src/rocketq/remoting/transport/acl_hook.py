"""The client side of ACL: an RPC hook that signs every request with an access key and secret key.

Port of org.apache.rocketmq.acl.common.AclClientRPCHook: AccessKey (and SecurityToken) are added to
the request's extFields and Signature = Base64(HmacSHA1(secretKey, values in key order + body)), so a
RocketMQ 4.x broker with aclEnable=true accepts our requests, and ours accepts the Java client's.
"""

from __future__ import annotations

from rocketq.remoting.acl.signing import sign_request
from rocketq.remoting.protocol.command import RemotingCommand


class AclClientRPCHook:
    """Signs requests; give it to RemotingClient.register_rpc_hook."""

    __slots__ = ("access_key", "secret_key", "security_token")

    def __init__(self, access_key: str, secret_key: str, security_token: str | None = None) -> None:
        if not access_key or not secret_key:
            raise ValueError("ACL signing needs both an access key and a secret key")
        self.access_key = access_key
        self.secret_key = secret_key
        self.security_token = security_token

    def __repr__(self) -> str:  # never the secret
        return f"AclClientRPCHook(access_key={self.access_key!r})"

    def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
        if request.ext_fields is None:
            request.ext_fields = {}
        sign_request(request.ext_fields, request.body, self.access_key, self.secret_key, self.security_token)

    def do_after_response(
        self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
    ) -> None:
        return None
