"""The store checkpoint: how far the derived files (consume queues, index) are known to be durable.

The file keeps Apache's ``checkpoint`` layout in its first 40 bytes (store timestamps of the last message
made durable in the commit log, the consume queues and the index, then two offsets 5.x uses for HA), so an
Apache broker pointed at the directory recovers by its own rules. Our own record follows at byte 64: a
magic, the commit-log offset up to which every message had its consume-queue and index entries fsynced,
and a CRC over everything before it. Recovery starts re-dispatching at that offset; a file that fails the
CRC is treated as absent (recover from the oldest segment).
"""

from __future__ import annotations

import logging
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from broker.store.atomic_file import read_if_exists, write_atomically

log = logging.getLogger("broker.store.checkpoint")

FILE_NAME = "checkpoint"
FILE_SIZE = 4096
_APACHE = struct.Struct(">qqqqq")
_OURS_AT = 64
_OURS = struct.Struct(">4sIq")
_CRC = struct.Struct(">I")
_MAGIC = b"PYCK"
_VERSION = 1


@dataclass(frozen=True, slots=True)
class Checkpoint:
    dispatched_offset: int = 0
    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0

    def encode(self) -> bytes:
        buffer = bytearray(FILE_SIZE)
        _APACHE.pack_into(
            buffer, 0, self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp, 0, 0
        )
        _OURS.pack_into(buffer, _OURS_AT, _MAGIC, _VERSION, self.dispatched_offset)
        crc_at = _OURS_AT + _OURS.size
        _CRC.pack_into(buffer, crc_at, zlib.crc32(bytes(buffer[:crc_at])))
        return bytes(buffer)

    @classmethod
    def decode(cls, data: bytes) -> Checkpoint | None:
        crc_at = _OURS_AT + _OURS.size
        if len(data) < crc_at + _CRC.size:
            return None
        magic, version, dispatched = _OURS.unpack_from(data, _OURS_AT)
        (crc,) = _CRC.unpack_from(data, crc_at)
        if magic != _MAGIC or version != _VERSION or crc != zlib.crc32(data[:crc_at]) or dispatched < 0:
            return None
        physic, logics, index, _, _ = _APACHE.unpack_from(data, 0)
        return cls(dispatched, physic, logics, index)


def load_checkpoint(root: Path) -> Checkpoint | None:
    data = read_if_exists(root / FILE_NAME)
    if data is None:
        return None
    checkpoint = Checkpoint.decode(data)
    if checkpoint is None:
        log.warning("checkpoint in %s is unreadable; recovering from the oldest commit-log segment", root)
    return checkpoint


def save_checkpoint(root: Path, checkpoint: Checkpoint) -> None:
    write_atomically(root / FILE_NAME, checkpoint.encode())
