"""Binary layouts of the remoting frame, declared once with ``construct``.

These declarations are the reference a reader checks a byte layout against. The hot paths in
``header_binary`` and ``framing`` use ``struct`` with the same formats for speed, and the tests check that
both agree on arbitrary input.
"""

from __future__ import annotations

from construct import (
    Bytes,
    GreedyRange,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    PascalString,
    Prefixed,
    Struct,
    this,
)

#: A whole frame: the length prefix counts everything after itself.
FRAME = Struct(
    "length" / Int32ub,
    "header_word" / Int32ub,  # high byte: SerializeType; low 24 bits: header length
    "header" / Bytes(this.header_word & 0xFFFFFF),
    "body" / Bytes(this.length - 4 - (this.header_word & 0xFFFFFF)),
)

#: One ext-map entry of the ROCKETMQ binary header.
EXT_ENTRY = Struct(
    "key" / PascalString(Int16sb, "utf8"),
    "value" / PascalString(Int32sb, "utf8"),
)

#: The ROCKETMQ binary header (``RocketMQSerializable``).
ROCKETMQ_HEADER = Struct(
    "code" / Int16sb,
    "language" / Int8sb,
    "version" / Int16sb,
    "opaque" / Int32sb,
    "flag" / Int32sb,
    "remark" / PascalString(Int32sb, "utf8"),
    "ext" / Prefixed(Int32sb, GreedyRange(EXT_ENTRY)),
)

#: ``struct`` formats the fast paths use; they must describe the same bytes as the declarations above.
FRAME_PREFIX_FORMAT = ">II"
ROCKETMQ_FIXED_FORMAT = ">hbhiii"  # code, language, version, opaque, flag, remark length
