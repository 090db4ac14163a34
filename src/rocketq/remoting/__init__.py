"""The RocketMQ 4.x remoting protocol (sans-IO, in protocol/) and its asyncio transport (transport/)."""

from rocketq.remoting.protocol.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from rocketq.remoting.protocol.command import RemotingCommand

__all__ = ["LanguageCode", "RemotingCommand", "RequestCode", "ResponseCode", "SerializeType"]
