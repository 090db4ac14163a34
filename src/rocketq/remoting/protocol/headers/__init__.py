"""Typed request/response headers, one module per request family, Java field names as extFields keys.

Families: send, pull, offset, client, retry, query, transaction, admin, pop (RocketMQ 5), namesrv.
Import the family module you need; only the cheap machinery is re-exported here.
"""

from rocketq.remoting.protocol.headers.base import CommandHeader, Int32, jfield

__all__ = ["CommandHeader", "Int32", "jfield"]
