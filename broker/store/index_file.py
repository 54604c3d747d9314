"""One message-key index file in Apache's ``IndexFile`` layout, so a store directory stays readable by both.

Layout (big-endian): a 40-byte header (begin/end store timestamp, begin/end commit-log offset, used slot
count, entry count), then ``slot_count`` 4-byte hash slots, then ``entry_count`` 20-byte entries. A slot
holds the number of the newest entry whose key hashes to it; each entry holds the key hash (4), the
message's commit-log offset (8), its store time as seconds after the header's begin timestamp (4) and the
number of the previous entry of the same slot (4), so a slot heads a newest-first chain. Entry number 0 is
never used, which lets 0 mean "empty" in slots and chain links.

The file is memory-mapped: every append touches three small places (entry, slot, header), which as
system calls would cost more than the hashing. The header is kept current in the mapping on every append
so that after a process crash the file on disk describes exactly the entries it holds.

The file is sparse, as Apache's is, but a write through a map into a hole the disk has no room for kills
the process (SIGBUS). So its disk blocks are reserved before the map writes to them: the header and slots
(written all over) with the first append, the entries (written front to back) a stretch ahead of the
last one. On a full disk the reservation fails with ENOSPC, as a write would, and the store refuses
appends until it can index again.
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
import struct
from collections.abc import Sequence
from pathlib import Path

from broker.store.segment import RESERVE_AHEAD, advise_no_readahead
from rocketmq_wire.accel import Speedups, speedups
from rocketmq_wire.javahash import java_string_hash

log = logging.getLogger("broker.store.index_file")

HEADER = struct.Struct(">qqqqii")
SLOT = struct.Struct(">i")
ENTRY = struct.Struct(">iqii")
HEADER_SIZE = HEADER.size
SLOT_SIZE = SLOT.size
ENTRY_SIZE = ENTRY.size
assert (HEADER_SIZE, ENTRY_SIZE) == (40, 20)

_MAX_INT = 0x7FFFFFFF
_reserve_blocks = getattr(os, "posix_fallocate", None)
#: What ``posix_fallocate`` answers where the file system cannot reserve blocks: the file stays as it is.
_CANNOT_RESERVE = frozenset({errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS, errno.ENODEV})

#: The C accelerator's index writer, read on each call (tests set this to ``None`` for the reference).
_c: Speedups | None = speedups


def index_key_hash(key: str) -> int:
    """Java's ``Math.abs(key.hashCode())``, with the one value abs cannot fix (MIN_VALUE) mapped to 0."""
    h = java_string_hash(key)
    if h >= 0x8000_0000:
        h = 0x1_0000_0000 - h
    return 0 if h > _MAX_INT else h


def index_file_size(slot_count: int, entry_count: int) -> int:
    return HEADER_SIZE + slot_count * SLOT_SIZE + entry_count * ENTRY_SIZE


class IndexFile:
    """Append-only hash index over ``topic#key`` strings, bounded to ``entry_count - 1`` entries."""

    def __init__(self, path: Path, slot_count: int, entry_count: int) -> None:
        self.path = path
        self.slot_count = slot_count
        self.entry_count = entry_count
        size = index_file_size(slot_count, entry_count)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            actual = os.fstat(fd).st_size
            if actual == 0:
                os.ftruncate(fd, size)
            elif actual != size:
                # Another slot or entry count: the slots would be read at the wrong places.
                raise ValueError(f"index file {path} is {actual} bytes, expected {size}")
            self._map = mmap.mmap(fd, size)
            advise_no_readahead(self._map)
        except BaseException:
            os.close(fd)
            raise
        # Kept open to flush with fsync, which releases the GIL; mmap.flush would hold it for the whole
        # msync and stall the event loop. On Linux fsync also writes back pages dirtied through the map.
        self._fd = fd
        self._closed = False
        self._size = size
        #: Bytes from the start whose disk blocks are allocated (a write through the map below cannot fault).
        self._reserved = 0 if _reserve_blocks is not None else size
        header: tuple[int, int, int, int, int, int] = HEADER.unpack_from(self._map, 0)
        self.begin_timestamp: int = header[0]
        self.end_timestamp: int = header[1]
        self.begin_phy_offset: int = header[2]
        self.end_phy_offset: int = header[3]
        self.used_slots: int = header[4]
        self.count: int = header[5]
        if self.count <= 0:
            self.count = 1
        self._dirty = False

    @classmethod
    def create(
        cls,
        path: Path,
        slot_count: int,
        entry_count: int,
        *,
        after_phy_offset: int = 0,
        after_timestamp: int = 0,
    ) -> IndexFile:
        """A new empty file; its range starts where the previous file ended, as Apache's does."""
        index = cls(path, slot_count, entry_count)
        if after_phy_offset > 0:
            index.begin_phy_offset = index.end_phy_offset = after_phy_offset
        if after_timestamp > 0:
            index.begin_timestamp = index.end_timestamp = after_timestamp
        index._write_header()
        return index

    @property
    def is_full(self) -> bool:
        return self.count >= self.entry_count

    @property
    def is_empty(self) -> bool:
        return self.count <= 1

    def _write_header(self) -> None:
        HEADER.pack_into(
            self._map,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.used_slots,
            self.count,
        )
        self._dirty = True

    def put(self, keys: list[str], phy_offset: int, store_timestamp: int) -> int:
        """Index one message under each of ``keys``; returns how many fitted before the file filled up."""
        return self.put_entries([(key, phy_offset, store_timestamp) for key in keys])

    def put_entries(self, entries: Sequence[tuple[str, int, int]]) -> int:
        """Index (key, commit-log offset, store timestamp) entries in order; returns how many fitted before
        the file filled up. The header is written once for all of them (a batch's messages)."""
        written = 0
        index_map = self._map
        slot_count = self.slot_count
        entries_base = HEADER_SIZE + slot_count * SLOT_SIZE
        count = self.count
        room = self.entry_count - count
        needed = entries_base + (count + min(room, len(entries))) * ENTRY_SIZE
        if needed > self._reserved:
            self._reserve(needed)
        if _c is not None and isinstance(entries, list):
            done = _c.index_put(
                index_map,
                slot_count,
                entries_base,
                room,
                count,
                self.begin_phy_offset,
                self.begin_timestamp,
                entries,
            )
            if done is not None:  # the C writer did what the loop below does (it declines odd input)
                written, count, added_slots, begin_phy, begin_ts, end_phy, end_ts = done
                if written:
                    self.count = count
                    self.used_slots += added_slots
                    self.begin_phy_offset, self.begin_timestamp = begin_phy, begin_ts
                    self.end_phy_offset, self.end_timestamp = end_phy, end_ts
                    self._write_header()
                return written
        for key, phy_offset, store_timestamp in entries:
            if written >= room:
                break
            key_hash = index_key_hash(key)
            slot_position = HEADER_SIZE + (key_hash % slot_count) * SLOT_SIZE
            (head,) = SLOT.unpack_from(index_map, slot_position)
            if head <= 0 or head > count:
                head = 0
            if count <= 1:
                self.begin_phy_offset = phy_offset
                self.begin_timestamp = store_timestamp
            if self.begin_timestamp <= 0:
                time_diff = 0
            else:
                time_diff = min(max((store_timestamp - self.begin_timestamp) // 1000, 0), _MAX_INT)
            entry_position = entries_base + count * ENTRY_SIZE
            ENTRY.pack_into(index_map, entry_position, key_hash, phy_offset, time_diff, head)
            SLOT.pack_into(index_map, slot_position, count)
            if head == 0:
                self.used_slots += 1
            count += 1
            self.end_phy_offset = phy_offset
            self.end_timestamp = store_timestamp
            written += 1
        if written:
            self.count = count
            self._write_header()
        return written

    def _reserve(self, end: int) -> None:
        """Allocate the disk blocks up to ``end`` and a stretch beyond; raises OSError (ENOSPC) when the
        disk has no room, before anything is written."""
        assert _reserve_blocks is not None
        target = min(self._size, max(end, self._reserved + RESERVE_AHEAD))
        try:
            _reserve_blocks(self._fd, self._reserved, target - self._reserved)
        except OSError as exc:
            if exc.errno not in _CANNOT_RESERVE:
                raise
            log.warning(
                "index file %s cannot have its blocks reserved (%s): a full disk may end the process",
                self.path,
                exc,
            )
            target = self._size
        self._reserved = target

    def overlaps(self, begin: int, end: int) -> bool:
        """Whether the file's time range meets [begin, end] (Apache's ``isTimeMatched``)."""
        return (
            (begin < self.begin_timestamp and end > self.end_timestamp)
            or self.begin_timestamp <= begin <= self.end_timestamp
            or self.begin_timestamp <= end <= self.end_timestamp
        )

    def lookup(self, key: str, max_results: int, begin: int, end: int) -> list[int]:
        """Commit-log offsets of entries whose key hash matches, newest first, stored within [begin, end].

        Hash collisions are possible; the caller confirms against the message itself.
        """
        found: list[int] = []
        if self.count <= 1 or max_results <= 0:
            return found
        key_hash = index_key_hash(key)
        slot_position = HEADER_SIZE + (key_hash % self.slot_count) * SLOT_SIZE
        (current,) = SLOT.unpack_from(self._map, slot_position)
        entries_base = HEADER_SIZE + self.slot_count * SLOT_SIZE
        visited = 0
        while 0 < current < self.count and len(found) < max_results and visited < self.count:
            visited += 1
            entry_hash, phy_offset, time_diff, previous = ENTRY.unpack_from(
                self._map, entries_base + current * ENTRY_SIZE
            )
            stored_at = self.begin_timestamp + time_diff * 1000
            if entry_hash == key_hash and begin <= stored_at <= end:
                found.append(phy_offset)
            if previous <= 0 or previous >= current or stored_at < begin:
                break
            current = previous
        return found

    def flush(self) -> None:
        if self._dirty and not self._closed:
            self._dirty = False
            try:
                os.fsync(self._fd)
            except OSError:
                if not self._closed:
                    raise

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._map.close()
            os.close(self._fd)

    def destroy(self) -> None:
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        log.info("deleted index file %s", self.path)
