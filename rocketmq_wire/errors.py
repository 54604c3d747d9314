"""The one exception type the codec raises.

Callers (servers, clients, fuzz tests) need a single thing to catch: any malformed input, whatever layer
finds it, surfaces as :class:`CodecError` with a message precise enough to log and act on. Nothing else may
escape a decoder.
"""

from __future__ import annotations


class CodecError(ValueError):
    """Input bytes or values that do not form a valid RocketMQ remoting structure."""


class FrameTooLargeError(CodecError):
    """A frame whose declared length exceeds the configured maximum.

    Raised from the length prefix alone, before any buffer for the frame is allocated.
    """

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"frame length {length} exceeds the limit of {limit} bytes")
        self.length = length
        self.limit = limit
