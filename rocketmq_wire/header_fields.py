"""What both header serializations carry, as one plain record.

The two serializations (``header_json`` and ``header_binary``) read into and write from this record, so
neither needs to know the ``RemotingCommand`` class and the command needs to know nothing of either layout.
"""

from __future__ import annotations

from typing import NamedTuple

from rocketmq_wire.codes import LanguageCode
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.javahash import ExtFields

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT16_MIN = -(1 << 15)
INT16_MAX = (1 << 15) - 1


class HeaderFields(NamedTuple):
    code: int
    language: LanguageCode
    version: int
    opaque: int
    flag: int
    remark: str | None
    ext_fields: ExtFields | None
    #: A fast-path header read from the front of a binary ext map (``None`` otherwise).
    fast_header: CommandHeader | None = None
