"""Typed request/response headers, one module per request family, Java field names as extFields keys."""

from rocketq.remoting.protocol.headers.base import CommandHeader, jfield

__all__ = ["CommandHeader", "jfield"]
