"""The RocketMQ remoting protocol, byte-exact with Apache's Java implementation.

Pure codec (no I/O): frames, header serializations, codes, typed headers, message formats and JSON bodies.
The asyncio transport lives in :mod:`rocketmq_wire.transport`.
"""

from rocketmq_wire.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from rocketmq_wire.command import DEFAULT_VERSION, RemotingCommand
from rocketmq_wire.errors import CodecError, FrameTooLargeError
from rocketmq_wire.framing import MAX_FRAME_SIZE, FrameDecoder
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.javahash import ExtFields

__all__ = [
    "DEFAULT_VERSION",
    "MAX_FRAME_SIZE",
    "CodecError",
    "CommandHeader",
    "ExtFields",
    "FrameDecoder",
    "FrameTooLargeError",
    "LanguageCode",
    "RemotingCommand",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
]
