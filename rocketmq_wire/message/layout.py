"""Binary layouts of messages, declared once with ``construct``.

These declarations are the reference for a reader of the code and for the tests; the hot paths in
:mod:`.stored` and :mod:`.batch` use the ``struct`` formats below, and a test checks that both read the same
bytes the same way.

A stored message is what a broker's commit log holds and what PULL_MESSAGE, QUERY_MESSAGE and
VIEW_MESSAGE_BY_ID responses carry, concatenated. The address fields are 4 + 4 bytes for IPv4 and 16 + 4 for
IPv6, as the sysflag's two V6 bits say; the version-2 magic widens the topic length from one byte to two.
A batch entry is one message of a SEND_BATCH_MESSAGE body: only what a producer knows.
"""

from __future__ import annotations

import enum
import struct
from typing import Final

from construct import (
    Bytes,
    GreedyBytes,
    IfThenElse,
    Int8ub,
    Int16ub,
    Int32sb,
    Int32ub,
    Int64sb,
    Prefixed,
    Struct,
    this,
)

from rocketmq_wire.message.sysflag import BORNHOST_V6, STOREHOSTADDRESS_V6

MAGIC_V1: Final = 0xDAA320A7
MAGIC_V2: Final = 0xDAA320AB
#: The magic of the filler that closes a commit-log file; no message follows it in that file.
BLANK_MAGIC: Final = 0xCBD43194


class MessageVersion(enum.Enum):
    """Stored-message format versions, named by their magic code."""

    V1 = MAGIC_V1
    V2 = MAGIC_V2

    @property
    def topic_length_size(self) -> int:
        return 1 if self is MessageVersion.V1 else 2


STORED_MESSAGE = Struct(
    "total_size" / Int32sb,
    "magic" / Int32ub,
    "body_crc" / Int32sb,
    "queue_id" / Int32sb,
    "flag" / Int32sb,
    "queue_offset" / Int64sb,
    "physical_offset" / Int64sb,
    "sys_flag" / Int32sb,
    "born_timestamp" / Int64sb,
    "born_ip" / Bytes(lambda ctx: 16 if ctx.sys_flag & BORNHOST_V6 else 4),
    "born_port" / Int32sb,
    "store_timestamp" / Int64sb,
    "store_ip" / Bytes(lambda ctx: 16 if ctx.sys_flag & STOREHOSTADDRESS_V6 else 4),
    "store_port" / Int32sb,
    "reconsume_times" / Int32sb,
    "prepared_transaction_offset" / Int64sb,
    "body" / Prefixed(Int32sb, GreedyBytes),
    "topic" / Prefixed(IfThenElse(this.magic == MAGIC_V2, Int16ub, Int8ub), GreedyBytes),
    "properties" / Prefixed(Int16ub, GreedyBytes),
)

BATCH_ENTRY = Struct(
    "total_size" / Int32sb,
    "magic" / Int32sb,
    "body_crc" / Int32sb,
    "flag" / Int32sb,
    "body" / Prefixed(Int32sb, GreedyBytes),
    "properties" / Prefixed(Int16ub, GreedyBytes),
)

# --- the struct formats the fast paths use --------------------------------------------------------

#: Everything up to and including the body length, for each (born IPv6, store IPv6) combination.
_FIXED_FORMAT = ">iIiiiqqiq{born}siq{store}siiqi"
STORED_FIXED: Final[dict[tuple[bool, bool], struct.Struct]] = {
    (born_v6, store_v6): struct.Struct(
        _FIXED_FORMAT.format(born=16 if born_v6 else 4, store=16 if store_v6 else 4)
    )
    for born_v6 in (False, True)
    for store_v6 in (False, True)
}
#: The IPv4/IPv4 case, which is nearly every message.
STORED_FIXED_V4: Final = STORED_FIXED[(False, False)]

#: A batch entry up to and including its body length.
BATCH_FIXED: Final = struct.Struct(">iiiii")
