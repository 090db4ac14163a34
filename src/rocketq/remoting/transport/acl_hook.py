"""The client side of ACL: an RPC hook that signs every request with an access key and secret key.

Port of org.apache.rocketmq.acl.common.AclClientRPCHook: AccessKey (and SecurityToken) are added to
the request's extFields and Signature = Base64(HmacSHA1(secretKey, values in key order + body)), so a
RocketMQ 4.x broker with aclEnable=true accepts our requests, and ours accepts the Java client's.
"""

from __future__ import annotations

import json.encoder

from rocketq.remoting.acl.signing import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, request_signer, sign_request
from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.header_json import EncodedExt

# How the JSON header codec writes a string (its extFields encoder uses this function, no ASCII escaping).
_json_str = json.encoder.encode_basestring
_MSGPACK = SerializeType.MSGPACK


class AclClientRPCHook:
    """Signs requests; give it to RemotingClient.register_rpc_hook."""

    __slots__ = ("_sign", "_signed_json", "access_key", "secret_key", "security_token")
    # Nothing to do after a response: a send takes the producer's fast path (RemotingClient.start_sync).
    after_response = False

    def __init__(self, access_key: str, secret_key: str, security_token: str | None = None) -> None:
        if not access_key or not secret_key:
            raise ValueError("ACL signing needs both an access key and a secret key")
        self.access_key = access_key
        self.secret_key = secret_key
        self.security_token = security_token
        # The compiled signing of this account (AccessKey and Signature added and the HMAC computed in
        # one call, about 1 us a send less than sign_request's steps): None without the compiled twin,
        # and with a security token, which goes between the two (sign_request places it).
        self._sign = None if security_token else request_signer(access_key, secret_key)
        # the JSON text of the fields signing adds before Signature (see do_before_request)
        self._signed_json = f",{_json_str(ACCESS_KEY)}:{_json_str(access_key)}" + (
            f",{_json_str(SECURITY_TOKEN)}:{_json_str(security_token)}" if security_token else ""
        )

    def __repr__(self) -> str:  # never the secret
        return f"AclClientRPCHook(access_key={self.access_key!r})"

    def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
        fields = request.ext_fields
        if fields is None:
            fields = request.ext_fields = {}
        sign = self._sign
        if sign is not None:
            # every request but a send (a send's EncodedExt is signed below, its text kept or dropped)
            if type(fields) is dict and sign(fields, request.body) is not None:
                return
        key, secret, token = self.access_key, self.secret_key, self.security_token
        if not isinstance(fields, EncodedExt):
            sign_request(fields, request.body, key, secret, token)
            return
        # A header that carries its own JSON text (the producer's send header) keeps it: the fields signing
        # adds go at its end, as the codec would write them, instead of the whole map being encoded again
        # (about 2 us a send). Not on a connection that agreed on msgpack headers, which never reads the
        # text (a deferred one is then never formatted), nor for a header signed before (a retry: its keys
        # keep their places), whose map is encoded afresh.
        text = None if request.serialize_type == _MSGPACK else fields.json
        if text is not None and (ACCESS_KEY in fields or SECURITY_TOKEN in fields or SIGNATURE in fields):
            text = None
        # dict's own __setitem__: EncodedExt's drops the text (set right below) and, being Python, costs
        # 0.3 us a field more. The compiled signing stores the same way.
        signature = None if sign is None else sign(fields, request.body)
        if signature is None:
            sign_request(fields, request.body, key, secret, token, put=dict.__setitem__)
            signature = fields[SIGNATURE]
        # in the order sign_request added them; a Base64 signature needs no escaping
        fields.json = (
            None
            if text is None or len(text) <= 2
            else f'{text[:-1]}{self._signed_json},"{SIGNATURE}":"{signature}"}}'
        )

    def do_after_response(
        self, remote_addr: str, request: RemotingCommand, response: RemotingCommand
    ) -> None:
        return None
