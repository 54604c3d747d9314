"""The bit fields of a message's ``sysFlag`` and of a pull request's ``sysFlag``.

Plain ``int`` constants rather than an ``IntFlag``: these are tested once per decoded message, and enum
arithmetic would cost more than the decoding around it.
"""

from __future__ import annotations

import enum
from typing import Final

# --- MessageSysFlag -------------------------------------------------------------------------------
COMPRESSED: Final = 0x1
MULTI_TAGS: Final = 0x1 << 1
TRANSACTION_NOT_TYPE: Final = 0
TRANSACTION_PREPARED_TYPE: Final = 0x1 << 2
TRANSACTION_COMMIT_TYPE: Final = 0x2 << 2
TRANSACTION_ROLLBACK_TYPE: Final = 0x3 << 2
#: Both transaction bits: the mask that extracts the transaction type.
TRANSACTION_MASK: Final = TRANSACTION_ROLLBACK_TYPE
BORNHOST_V6: Final = 0x1 << 4
STOREHOSTADDRESS_V6: Final = 0x1 << 5
NEED_UNWRAP: Final = 0x1 << 6
INNER_BATCH: Final = 0x1 << 7
#: Bits 8-10 name the codec of a compressed body (4.9.4+ and 5.x); zero means zlib, as before they existed.
COMPRESSION_TYPE_SHIFT: Final = 8
COMPRESSION_TYPE_MASK: Final = 0x7 << COMPRESSION_TYPE_SHIFT
COMPRESSION_LZ4_TYPE: Final = 0x1 << COMPRESSION_TYPE_SHIFT
COMPRESSION_ZSTD_TYPE: Final = 0x2 << COMPRESSION_TYPE_SHIFT
COMPRESSION_ZLIB_TYPE: Final = 0x3 << COMPRESSION_TYPE_SHIFT


class TransactionType(enum.IntEnum):
    """The two transaction bits of a message's sysFlag."""

    NOT_TYPE = TRANSACTION_NOT_TYPE
    PREPARED = TRANSACTION_PREPARED_TYPE
    COMMIT = TRANSACTION_COMMIT_TYPE
    ROLLBACK = TRANSACTION_ROLLBACK_TYPE


def transaction_type(sys_flag: int) -> TransactionType:
    return TransactionType(sys_flag & TRANSACTION_MASK)


def with_transaction_type(sys_flag: int, kind: int) -> int:
    """``sys_flag`` with its transaction bits replaced (what an end-transaction turns a half message into)."""
    return (sys_flag & ~TRANSACTION_MASK) | (kind & TRANSACTION_MASK)


def is_compressed(sys_flag: int) -> bool:
    return bool(sys_flag & COMPRESSED)


def without_compressed(sys_flag: int) -> int:
    return sys_flag & ~COMPRESSED


def compression_bits(sys_flag: int) -> int:
    """The raw 3-bit codec number (0 to 7); :mod:`.compression` maps it to a codec."""
    return (sys_flag & COMPRESSION_TYPE_MASK) >> COMPRESSION_TYPE_SHIFT


def with_compression_bits(sys_flag: int, codec_number: int) -> int:
    bits = (codec_number << COMPRESSION_TYPE_SHIFT) & COMPRESSION_TYPE_MASK
    return (sys_flag & ~COMPRESSION_TYPE_MASK) | bits


def host_lengths(sys_flag: int) -> tuple[int, int]:
    """Byte lengths of the born and store address fields (IP + 4-byte port) a stored message carries."""
    return (20 if sys_flag & BORNHOST_V6 else 8), (20 if sys_flag & STOREHOSTADDRESS_V6 else 8)


# --- PullSysFlag ----------------------------------------------------------------------------------
PULL_COMMIT_OFFSET: Final = 0x1
PULL_SUSPEND: Final = 0x1 << 1
PULL_SUBSCRIPTION: Final = 0x1 << 2
PULL_CLASS_FILTER: Final = 0x1 << 3
PULL_LITE_PULL: Final = 0x1 << 4


def build_pull_sys_flag(
    *,
    commit_offset: bool = False,
    suspend: bool = False,
    subscription: bool = False,
    class_filter: bool = False,
    lite_pull: bool = False,
) -> int:
    return (
        (PULL_COMMIT_OFFSET if commit_offset else 0)
        | (PULL_SUSPEND if suspend else 0)
        | (PULL_SUBSCRIPTION if subscription else 0)
        | (PULL_CLASS_FILTER if class_filter else 0)
        | (PULL_LITE_PULL if lite_pull else 0)
    )


def has_commit_offset(pull_flag: int) -> bool:
    return bool(pull_flag & PULL_COMMIT_OFFSET)


def has_suspend(pull_flag: int) -> bool:
    return bool(pull_flag & PULL_SUSPEND)


def has_subscription(pull_flag: int) -> bool:
    return bool(pull_flag & PULL_SUBSCRIPTION)


def has_class_filter(pull_flag: int) -> bool:
    return bool(pull_flag & PULL_CLASS_FILTER)


def has_lite_pull(pull_flag: int) -> bool:
    return bool(pull_flag & PULL_LITE_PULL)


def without_commit_offset(pull_flag: int) -> int:
    """A broker clears this bit when it has no offset to commit for the consumer (a slave, say)."""
    return pull_flag & ~PULL_COMMIT_OFFSET


def without_suspend(pull_flag: int) -> int:
    return pull_flag & ~PULL_SUSPEND


def with_subscription(pull_flag: int) -> int:
    return pull_flag | PULL_SUBSCRIPTION
