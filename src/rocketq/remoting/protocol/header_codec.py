"""Header codecs chosen by SerializeType: JSON (0), ROCKETMQ binary (1) and our MSGPACK (0x4D).

Strategy: one codec object per serialize type in `HEADER_CODECS`; `frame.py` picks by the type byte
and a response is encoded with its request's codec (RemotingCommand.make_response keeps the type).
Every decode problem raises HeaderDecodeError (a FrameError), never anything else; decoders accept
any buffer (bytes or a memoryview into the receive buffer, so the frame decoder copies no header).
The codecs live in header_json.py, header_binary.py and header_msgpack.py (layouts documented there).
"""

from __future__ import annotations

from typing import Protocol

from rocketq.remoting.protocol.codes import SerializeType
from rocketq.remoting.protocol.command import RemotingCommand
from rocketq.remoting.protocol.errors import HeaderDecodeError
from rocketq.remoting.protocol.header_binary import ROCKETMQ_CODEC, RocketMQHeaderCodec
from rocketq.remoting.protocol.header_json import JSON_CODEC, JsonHeaderCodec
from rocketq.remoting.protocol.header_msgpack import MSGPACK_CODEC, MsgpackHeaderCodec

__all__ = [
    "HEADER_CODECS",
    "JSON_CODEC",
    "MSGPACK_CODEC",
    "ROCKETMQ_CODEC",
    "HeaderCodec",
    "JsonHeaderCodec",
    "MsgpackHeaderCodec",
    "RocketMQHeaderCodec",
    "codec_for",
]


class HeaderCodec(Protocol):
    serialize_type: SerializeType

    def encode(self, cmd: RemotingCommand) -> bytes: ...

    def decode(self, data: bytes | bytearray | memoryview) -> RemotingCommand: ...


HEADER_CODECS: dict[int, HeaderCodec] = {
    SerializeType.JSON: JSON_CODEC,
    SerializeType.ROCKETMQ: ROCKETMQ_CODEC,
    SerializeType.MSGPACK: MSGPACK_CODEC,
}


def codec_for(serialize_type: int) -> HeaderCodec:
    try:
        return HEADER_CODECS[serialize_type]
    except KeyError:
        raise HeaderDecodeError(f"unknown serialize type {serialize_type}") from None
