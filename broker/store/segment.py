"""One fixed-size file of a segmented log (commit log or consume queue).

Apache maps each file into memory. Here a commit-log file is written through a map too (a copy into the
page cache, where a ``pwrite`` is a system call per message), except for writes of a page or more (a
batch), which go with one ``pwrite`` rather than a fault per page (:data:`PWRITE_FROM`); files are read
with ``pread`` on the descriptor: a read through the map would hand out buffers, and a map
with a buffer still exported cannot be closed, so deleting a file being read would fail. Consume-queue
files are too when the C accelerator's ``FileMap`` is at hand, and are written with ``pwrite`` otherwise:
a broker has one per queue, thousands, and Python's ``mmap`` keeps a duplicate of the file's descriptor
open for each map, which would double what they take of the process's descriptor limit (``FileMap``
holds none). Files are created at their full size, as Apache preallocates them, so the byte layout
on disk is identical; the unwritten tail reads as zeros, which is what recovery treats as "nothing here".

A write through a map into a hole of a sparse file that the disk has no room for kills the process
(SIGBUS) where ``pwrite`` would fail with ENOSPC. So disk blocks are reserved (``posix_fallocate``) a
little ahead of the write position, :data:`RESERVE_AHEAD` at a time: a full disk fails that call, as a
failed write would, and the file stays sparse past what was written. Where blocks cannot be reserved
(no ``posix_fallocate``, or a file system that refuses it) the segment writes with ``pwrite``.
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
from collections.abc import Callable
from pathlib import Path

from rocketmq_wire.accel import FileMap, Speedups, speedups

log = logging.getLogger("broker.store.segment")

NAME_DIGITS = 20

# Segments are preallocated, so a data-only sync suffices (the size never changes); fdatasync still writes
# the block allocation metadata needed to read the data back.
_sync_data = getattr(os, "fdatasync", os.fsync)
_reserve_blocks = getattr(os, "posix_fallocate", None)
#: Disk blocks reserved past the write position of a commit-log segment written through its map, one call
#: at a time.
RESERVE_AHEAD = 1 << 20
#: The same for a consume-queue file: a page (204 entries) at a time, so a queue takes on disk about what
#: Apache's sparse file would hold, where 1 MiB ahead cost 10^4 topics x 8 queues some 80 GiB of blocks.
SMALL_RESERVE_AHEAD = 4096
#: A write of this many bytes or more goes to a mapped segment with ``pwrite`` (into blocks reserved all
#: the same): through the map it would fault once for every page it fills, where one ``pwrite`` fills them
#: all. Load tool, batches of 32 in flight 8 at a time, alternated: 1 KiB messages 77-78k -> 90-91k msg/s
#: (ASYNC_FLUSH) and 59-60k -> 63-69k (SYNC_FLUSH), 100 B messages 97-100k -> 104-105k (ASYNC_FLUSH);
#: single sends (one record, under a page) were as fast either way and keep the map.
PWRITE_FROM = 4096
#: What ``posix_fallocate`` answers when the file system cannot reserve blocks: write with ``pwrite``.
_CANNOT_RESERVE = frozenset({errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS, errno.ENODEV})


#: The C accelerator, for its ``FileMap`` (read when a segment is first written through a map).
_c: Speedups | None = speedups


def advise_no_readahead(mapped: mmap.mmap) -> None:
    """Ask for no readahead on faults, as the accelerator's ``FileMap`` does: a write fault would otherwise
    bring its neighbours into the page cache as one large folio, and every fsync after it writes the whole
    folio back (a 64 MiB commit-log file synced every few KiB: ~0.2 ms an fdatasync with the hint, ~0.7 ms
    without once writing passed ~40 MiB). A hint only: where it is refused, writes are slower, not wrong."""
    advice = getattr(mmap, "MADV_RANDOM", None)
    if advice is not None:
        try:
            mapped.madvise(advice)
        except OSError as exc:
            log.debug("madvise(MADV_RANDOM) refused: %s", exc)


class _PythonFileMap:
    """Python's ``mmap`` behind :class:`~rocketmq_wire.accel.FileMap`'s calls; it holds a duplicate of the
    file's descriptor while it lives."""

    __slots__ = ("_map",)

    def __init__(self, fd: int, size: int) -> None:
        self._map = mmap.mmap(fd, size)
        advise_no_readahead(self._map)

    @property
    def closed(self) -> bool:
        return self._map.closed

    def write(self, offset: int, data: bytes) -> None:
        self._map[offset : offset + len(data)] = data

    def close(self) -> None:
        self._map.close()  # never exported (reads use pread), so it always closes


def _map_file() -> Callable[[int, int], FileMap]:
    """How to map a file: the accelerator's ``FileMap`` when it has one, else Python's ``mmap``."""
    native: Callable[[int, int], FileMap] | None = getattr(_c, "FileMap", None)
    return native if native is not None else _PythonFileMap


def maps_hold_no_descriptor() -> bool:
    """Whether a map of a segment costs no descriptor of its own (whether consume queues map theirs)."""
    return _map_file() is not _PythonFileMap


def segment_name(start_offset: int) -> str:
    """Apache's file name: the global offset of the file's first byte, zero-padded to 20 digits."""
    return f"{start_offset:0{NAME_DIGITS}d}"


def parse_segment_name(name: str) -> int | None:
    if len(name) == NAME_DIGITS and name.isdigit():
        return int(name)
    return None


class Segment:
    """A preallocated file covering global offsets ``[start, start + size)``.

    ``write_position`` is how far the owner has written (relative to ``start``); ``flushed_position`` how
    far an fsync is known to cover. Both are plain ints so a flushing thread can read them without locks:
    a stale read only makes that flush cover a little less.
    """

    __slots__ = (
        "_closed",
        "_fd",
        "_map",
        "_mappable",
        "_reserve_ahead",
        "_reserved",
        "flushed_position",
        "path",
        "size",
        "start",
        "write_position",
    )

    def __init__(
        self,
        path: Path,
        start: int,
        size: int,
        fd: int,
        *,
        mapped: bool = False,
        reserve_ahead: int = RESERVE_AHEAD,
    ) -> None:
        self.path = path
        self.start = start
        self.size = size
        self._fd = fd
        self._closed = False
        self.write_position = 0
        self.flushed_position = 0
        #: Written through once the first write reserved blocks; a file only read is never mapped.
        self._map: FileMap | None = None
        self._mappable = mapped and _reserve_blocks is not None
        #: Blocks of ``[0, _reserved)`` are allocated on disk: a write through the map below it cannot fault.
        self._reserved = 0
        self._reserve_ahead = reserve_ahead

    @classmethod
    def create(
        cls,
        directory: Path,
        start: int,
        size: int,
        *,
        mapped: bool = False,
        reserve_ahead: int = RESERVE_AHEAD,
    ) -> Segment:
        """A new file at its full size; ``mapped``: written through a map, with disk blocks reserved
        ``reserve_ahead`` bytes at a time (see the module)."""
        path = directory / segment_name(start)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size != size:
                os.ftruncate(fd, size)
        except OSError:
            os.close(fd)
            raise
        log.debug("created segment %s", path)
        return cls(path, start, size, fd, mapped=mapped, reserve_ahead=reserve_ahead)

    @classmethod
    def open_existing(
        cls, path: Path, start: int, size: int, *, mapped: bool = False, reserve_ahead: int = RESERVE_AHEAD
    ) -> Segment:
        """Open a file found on disk; a short file (a crash while creating it) is extended to full size."""
        fd = os.open(path, os.O_RDWR)
        try:
            actual = os.fstat(fd).st_size
            if actual < size:
                log.warning("segment %s is %d bytes, extending to %d", path, actual, size)
                os.ftruncate(fd, size)
            elif actual > size:
                raise ValueError(f"segment {path} is {actual} bytes, larger than the configured {size}")
        except BaseException:
            os.close(fd)
            raise
        return cls(path, start, size, fd, mapped=mapped, reserve_ahead=reserve_ahead)

    @property
    def end(self) -> int:
        """Global offset one past the file's last byte."""
        return self.start + self.size

    @property
    def write_offset(self) -> int:
        """Global offset of the next byte to write."""
        return self.start + self.write_position

    @property
    def remaining(self) -> int:
        return self.size - self.write_position

    @property
    def is_full(self) -> bool:
        return self.write_position >= self.size

    @property
    def closed(self) -> bool:
        return self._closed

    def append(self, data: bytes) -> int:
        """Write ``data`` at the write position; returns the global offset it went to."""
        if len(data) > self.remaining:
            raise ValueError(f"{len(data)} bytes do not fit in the {self.remaining} left in {self.path}")
        position = self.write_position
        self._write_fully(position, data)
        self.write_position = position + len(data)
        return self.start + position

    def write_at(self, position: int, data: bytes) -> None:
        """Write at a relative position without moving the write position (consume-queue gap filling)."""
        if position < 0 or position + len(data) > self.size:
            raise ValueError(f"write of {len(data)} bytes at {position} outside {self.path}")
        self._write_fully(position, data)

    def _write_fully(self, position: int, data: bytes) -> None:
        end = position + len(data)
        reserved = end <= self._reserved or (self._mappable and self._reserve(end))
        if reserved and len(data) < PWRITE_FROM:
            assert self._map is not None
            self._map.write(position, data)
            return
        written = os.pwrite(self._fd, data, position)
        if written == len(data):  # the usual case: one call wrote it all
            return
        view = memoryview(data)[written:]
        position += written
        while view:
            written = os.pwrite(self._fd, view, position)
            view = view[written:]
            position += written

    def _reserve(self, end: int) -> bool:
        """Reserve disk blocks up to at least ``end`` and map the file; False when this segment cannot be
        written through a map (then it never tries again). A full disk raises, as a write would."""
        assert _reserve_blocks is not None
        target = min(self.size, max(end, self._reserved + self._reserve_ahead))
        try:
            _reserve_blocks(self._fd, self._reserved, target - self._reserved)
            if self._map is None:
                self._map = _map_file()(self._fd, self.size)
        except OSError as exc:
            if exc.errno not in _CANNOT_RESERVE:
                raise
            log.info("segment %s is written without a map: %s", self.path, exc)
            self._mappable = False
            return False
        self._reserved = target
        return True

    def read(self, position: int, length: int) -> bytes:
        """Bytes at a relative position; short only if the range runs past the file."""
        if position < 0 or length <= 0 or position >= self.size:
            return b""
        length = min(length, self.size - position)
        chunks: list[bytes] = []
        while length > 0:
            chunk = os.pread(self._fd, length, position)
            if not chunk:
                break
            chunks.append(chunk)
            position += len(chunk)
            length -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def flush(self) -> bool:
        """fsync if anything was written since the last flush; returns whether a sync was issued."""
        target = self.write_position
        if target <= self.flushed_position or self._closed:
            return False
        try:
            _sync_data(self._fd)
        except OSError:
            if not self._closed:
                raise
            # Deleted by retention while a flusher thread held it: nothing left to make durable.
            return False
        self.flushed_position = max(self.flushed_position, target)
        return True

    def truncate_to(self, position: int) -> None:
        """Forget everything from ``position`` on: the bytes become zeros again and the file keeps its size.

        Recovery relies on the zeros: a later scan must never meet stale records past the end it settled on.
        """
        position = max(0, min(position, self.size))
        # Pages of the map past ``position`` are dropped with the blocks, and read as zeros afterwards.
        self._reserved = min(self._reserved, position)
        os.ftruncate(self._fd, position)
        os.ftruncate(self._fd, self.size)
        os.fsync(self._fd)
        self.write_position = position
        self.flushed_position = min(self.flushed_position, position)

    def last_modified(self) -> float:
        """Seconds since the epoch of the file's last write: what retention judges age by, as Apache does."""
        return os.stat(self.path).st_mtime

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._reserved = 0
            if self._map is not None:
                self._map.close()
                self._map = None
            os.close(self._fd)

    def destroy(self) -> None:
        """Close and delete the file."""
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        log.info("deleted segment %s", self.path)

    def __repr__(self) -> str:
        return f"Segment({self.path.name}, write={self.write_position}, flushed={self.flushed_position})"
