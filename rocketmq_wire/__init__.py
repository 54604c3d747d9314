"""The RocketMQ remoting protocol, byte-exact with Apache's Java implementation.

Pure codec (no I/O): frames, header serializations, codes, typed headers, message formats and JSON bodies.
The asyncio transport lives in :mod:`rocketmq_wire.transport`.

The names below are loaded on first use, so that importing one light submodule (``rocketmq_wire.topics``,
``rocketmq_wire.errors``) does not build every header class: a command line tool checking its arguments
starts in a fraction of the time.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocketmq_wire.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
    from rocketmq_wire.command import DEFAULT_VERSION, RemotingCommand
    from rocketmq_wire.errors import CodecError, FrameTooLargeError
    from rocketmq_wire.framing import MAX_FRAME_SIZE, FrameDecoder
    from rocketmq_wire.headers.base import CommandHeader
    from rocketmq_wire.javahash import ExtFields

#: Each exported name -> the submodule defining it.
_EXPORTS = {
    "LanguageCode": "rocketmq_wire.codes",
    "RequestCode": "rocketmq_wire.codes",
    "ResponseCode": "rocketmq_wire.codes",
    "SerializeType": "rocketmq_wire.codes",
    "DEFAULT_VERSION": "rocketmq_wire.command",
    "RemotingCommand": "rocketmq_wire.command",
    "CodecError": "rocketmq_wire.errors",
    "FrameTooLargeError": "rocketmq_wire.errors",
    "MAX_FRAME_SIZE": "rocketmq_wire.framing",
    "FrameDecoder": "rocketmq_wire.framing",
    "CommandHeader": "rocketmq_wire.headers.base",
    "ExtFields": "rocketmq_wire.javahash",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
