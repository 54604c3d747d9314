"""Permission bits of a topic or queue (Java's ``PermName``) and topic system flags (``TopicSysFlag``).

Routes, topic configs and admin commands all carry these as plain integers; ``perm_to_string`` gives the
``RW-`` form mqadmin prints.
"""

from __future__ import annotations

from typing import Final

PERM_PRIORITY: Final = 0x1 << 3
PERM_READ: Final = 0x1 << 2
PERM_WRITE: Final = 0x1 << 1
PERM_INHERIT: Final = 0x1

#: Topic system flags: unit (cell) markers.
TOPIC_FLAG_UNIT: Final = 0x1
TOPIC_FLAG_UNIT_SUB: Final = 0x1 << 1


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def is_inherited(perm: int) -> bool:
    return bool(perm & PERM_INHERIT)


def perm_to_string(perm: int) -> str:
    """``RW-`` style: read, write, inherit."""
    return (
        ("R" if is_readable(perm) else "-")
        + ("W" if is_writeable(perm) else "-")
        + ("X" if is_inherited(perm) else "-")
    )


def has_unit_flag(sys_flag: int) -> bool:
    return bool(sys_flag & TOPIC_FLAG_UNIT)


def has_unit_sub_flag(sys_flag: int) -> bool:
    return bool(sys_flag & TOPIC_FLAG_UNIT_SUB)
