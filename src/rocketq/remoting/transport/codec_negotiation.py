"""Header codec negotiation: msgpack headers between a rocketq client and a rocketq server, JSON otherwise.

A RocketMQ server only reads the extFields its typed header names, so an extra field in a request is
ignored by Apache's broker and name server (and by older rocketq ones): they never answer the offer,
and a client that offered keeps JSON with them. A rocketq server that sees the offer on a JSON request
answers, on that response, which codec it speaks; from then on the client writes msgpack headers on
that connection (the server answers every request in the request's own codec, as
org.apache.rocketmq.remoting.protocol.RemotingCommand.createResponseCommand keeps its serialize type).
The state is per connection: a reconnect starts with JSON and offers again. Every other client keeps
the codec it chose (JSON for Java's).

The offer rides on the extFields, so a signing RPC hook (ACL) signs it with the rest of the header.
"""

from __future__ import annotations

from typing import Any

from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand

# Request extField: the header codecs the client could switch to. Response extField: the one chosen.
OFFER_FIELD = "rocketqHeaderCodecs"
ACCEPT_FIELD = "rocketqHeaderCodec"
MSGPACK_NAME = "msgpack"
# Connection.attributes key: the serialize type the server accepted on this connection.
AGREED_ATTRIBUTE = "agreed_serialize_type"


def offer(cmd: RemotingCommand) -> None:
    """Add the msgpack offer to a JSON request (a copy of its extFields: a caller may reuse its dict)."""
    ext = cmd.ext_fields
    cmd.ext_fields = {**ext, OFFER_FIELD: MSGPACK_NAME} if ext else {OFFER_FIELD: MSGPACK_NAME}


def accepted(response: RemotingCommand) -> bool:
    """Whether the server answered an offer with msgpack."""
    ext = response.ext_fields
    return ext is not None and ext.get(ACCEPT_FIELD) == MSGPACK_NAME


def answer_offer(request: RemotingCommand, response: RemotingCommand) -> None:
    """Server side: tell a client that offered msgpack on a JSON request that we speak it."""
    ext: Any = request.ext_fields
    if ext is None or request.serialize_type != SerializeType.JSON or OFFER_FIELD not in ext:
        return
    if MSGPACK_NAME not in ext[OFFER_FIELD].split(","):
        return
    # A copy: a processor may answer with a shared or pre-encoded extFields object.
    response.ext_fields = {**(response.ext_fields or {}), ACCEPT_FIELD: MSGPACK_NAME}
