"""The recall handle a 5.3.2+ broker puts on its answer to a timer message's send.

The handle is URL-safe base64 (with padding) of ``v1 TOPIC BROKER_NAME TIMESTAMP UNIQ_KEY``, single spaces
between: the real topic, the broker that holds the message, one past the floored delivery time in
milliseconds (as text), and the message's unique id. The producer sends it back unchanged with
RECALL_MESSAGE; clients read it only to know which broker to ask, and the broker to find the message.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses

from rocketmq_wire.errors import CodecError

VERSION_1 = "v1"


@dataclasses.dataclass(frozen=True, slots=True)
class RecallHandle:
    """A decoded v1 handle; ``timestamp`` stays text, as the broker reads it."""

    topic: str
    broker_name: str
    timestamp: str
    message_id: str

    def encode(self) -> str:
        raw = " ".join((VERSION_1, self.topic, self.broker_name, self.timestamp, self.message_id))
        return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii")

    @classmethod
    def decode(cls, handle: str) -> RecallHandle:
        """Read a handle as Apache's client does (fields past the fifth are ignored); anything else is a
        :class:`CodecError` saying the handle is invalid."""
        if not handle:
            raise CodecError("recall handle is invalid: it is empty")
        try:
            raw = base64.urlsafe_b64decode(handle.encode("ascii")).decode("utf-8")
        except (UnicodeError, binascii.Error, ValueError):
            raise CodecError(f"recall handle is invalid: {handle!r} is not URL-safe base64 text") from None
        items = raw.split(" ")
        if items[0] != VERSION_1 or len(items) < 5:
            raise CodecError(f"recall handle is invalid: {raw!r} is not a v1 handle")
        return cls(items[1], items[2], items[3], items[4])
