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

A commit-log file keeps its descriptor while it lives. A consume-queue file does not: a broker with 10^4
topics of 8 queues has 80,000 of them, more than a descriptor limit of 1,024 or 4,096 allows (and each map
counts against ``vm.max_map_count``, 65,530 by default). Their segments share an :class:`OpenFileCache`,
which keeps a bounded number of them open, the least recently used closed first (descriptor and map), and
opens a file again on its next read or write. Nothing but the descriptor and the map goes with an eviction:
written bytes are in the page cache whichever way they went, and the write and flush positions, the
reserved blocks and the map-ability are attributes of the segment, so a re-opened file carries on where it
left off (it is neither truncated nor extended again). An fsync on any descriptor of a file writes back
every dirty page of it, so a file written, evicted and only then flushed is made durable all the same; its
``write_position`` ahead of its ``flushed_position`` is the dirty marker that says it needs that flush.
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
import resource
import threading
from collections import OrderedDict
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
#: The most consume-queue files a store keeps open by default, whatever the descriptor limit: a thousand
#: covers the queues a broker writes at once many times over, and each costs a descriptor and a map.
MAX_OPEN_FILES = 1024
#: The fewest it keeps open by default, however low the descriptor limit.
MIN_OPEN_FILES = 16
#: Writes a consume-queue file re-opened after the cache closed it takes with ``pwrite`` before it is mapped
#: again: a map and its unmapping cost some 25 us, a ``pwrite`` of an entry about 1 us more than a write
#: through a map, so a file that would be closed again after a few writes is cheaper never mapped. With
#: more busy queues than the cache holds (every write re-opening its file), a put measured 14-19 us this
#: way and 37-47 us re-mapping every time (a shared, loaded 2-core machine).
REMAP_AFTER_WRITES = 32
#: What ``open`` answers when the process (or the system) has no descriptor left.
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})


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


def default_open_files() -> int:
    """How many consume-queue files a store keeps open unless told: a quarter of the process's soft
    ``RLIMIT_NOFILE`` (the rest is for the commit log, the index, sockets and the interpreter), between
    :data:`MIN_OPEN_FILES` and :data:`MAX_OPEN_FILES`. Read when a store is built, so a limit raised or
    lowered before that counts."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return MAX_OPEN_FILES
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return MAX_OPEN_FILES
    return max(MIN_OPEN_FILES, min(MAX_OPEN_FILES, soft // 4))


class OpenFileCache:
    """The open consume-queue files of one store, at most ``limit`` of them, least recently used closed
    first (a bound of None: :func:`default_open_files`).

    Who may call what: a segment's owner (the store, under its lock) reads, writes, truncates, creates and
    closes files, and only it opens files into the cache or evicts them, so its writes and reads use a
    segment's descriptor without a lock; a hit costs one ``move_to_end``. Flushes run on other threads
    without the store's lock: a flush *pins* the segment it fsyncs (under :attr:`_lock`, which eviction
    and closing take too), so no descriptor is closed (and then perhaps reused for another file) under an
    fsync; a flush of a file not open uses a descriptor of its own for that one fsync and never evicts,
    so the owner's unlocked reads of descriptors stay safe.
    """

    __slots__ = ("_lock", "_recent", "evictions", "limit", "opens")

    def __init__(self, limit: int | None = None) -> None:
        self.limit = default_open_files() if limit is None else max(1, limit)
        #: Segments with an open descriptor, least recently used first (the values mean nothing).
        self._recent: OrderedDict[Segment, None] = OrderedDict()
        self._lock = threading.Lock()
        #: Files opened into the cache (misses) and closed to make room, since it was made.
        self.opens = 0
        self.evictions = 0

    def __len__(self) -> int:
        """How many files the cache holds open."""
        return len(self._recent)

    def open(self, segment: Segment) -> int:
        """Open ``segment``'s file (evicted earlier, or found at load) into the cache; its descriptor.

        The file is opened as it is, never truncated or extended: it had its full size when it was created
        or loaded. Out of descriptors, the cache closes half of what it holds and tries once more."""
        if segment._closed:
            raise OSError(errno.EBADF, f"segment {segment.path} is closed")
        try:
            fd = os.open(segment.path, os.O_RDWR)
        except OSError as exc:
            if exc.errno not in _OUT_OF_DESCRIPTORS or not self._shed(len(self._recent) // 2 or 1):
                raise
            log.warning("out of descriptors opening %s: closed cached consume-queue files", segment.path)
            fd = os.open(segment.path, os.O_RDWR)
        self.adopt(segment, fd)
        return fd

    def adopt(self, segment: Segment, fd: int) -> None:
        """Take ``segment``, just opened on ``fd``, into the cache, closing the least recently used files
        beyond the bound."""
        with self._lock:
            segment._fd = fd
            self._recent[segment] = None
            self.opens += 1
            excess = len(self._recent) - self.limit
            if excess > 0:
                self._evict(excess, keep=segment)

    def _shed(self, count: int) -> int:
        with self._lock:
            return self._evict(count, keep=None)

    def _evict(self, count: int, keep: Segment | None) -> int:
        """Close up to ``count`` of the least recently used files no flush has pinned; the lock is held."""
        victims: list[Segment] = []
        for candidate in self._recent:
            if candidate._pins == 0 and candidate is not keep:
                victims.append(candidate)
                if len(victims) == count:
                    break
        if self.evictions == 0 and victims:
            log.info(
                "keeping at most %d consume-queue files open; the least recently used are closed and "
                "opened again when next used",
                self.limit,
            )
        for victim in victims:
            del self._recent[victim]
            victim._release()
        self.evictions += len(victims)
        return len(victims)

    def pin(self, segment: Segment) -> tuple[int, bool] | None:
        """A descriptor to fsync ``segment`` through, and whether it is the flush's own (to close after);
        None when the segment is closed for good. A cached descriptor is pinned: :meth:`unpin` it."""
        with self._lock:
            if segment._closed:
                return None
            fd = segment._fd
            if fd >= 0:
                segment._pins += 1
                return fd, False
            # Not open: a descriptor for this fsync only, outside the cache (a flusher never evicts). Taken
            # under the lock, so a concurrent destroy either sees it first or the file is already gone.
            return os.open(segment.path, os.O_RDONLY), True

    def unpin(self, segment: Segment) -> None:
        """A flush is done with ``segment``'s descriptor; it is closed now if the segment was closed
        meanwhile."""
        with self._lock:
            segment._pins -= 1
            if segment._pins == 0 and segment._closed and segment._fd >= 0:
                segment._release()

    def forget(self, segment: Segment) -> None:
        """``segment`` is closed for good: out of the cache, its map and descriptor closed (the descriptor
        once no flush holds it)."""
        with self._lock:
            segment._closed = True
            segment._reserved = 0
            self._recent.pop(segment, None)
            if segment._pins == 0 and segment._fd >= 0:
                segment._release()
            elif segment._map is not None:
                segment._map.close()
                segment._map = None


class Segment:
    """A preallocated file covering global offsets ``[start, start + size)``.

    ``write_position`` is how far the owner has written (relative to ``start``); ``flushed_position`` how
    far an fsync is known to cover. Both are plain ints so a flushing thread can read them without locks:
    a stale read only makes that flush cover a little less.

    With ``files`` (consume queues) the descriptor is the cache's to open and close (``_fd`` is -1 while
    the file is closed); without, the segment holds it from creation to :meth:`close`.
    """

    __slots__ = (
        "_closed",
        "_fd",
        "_files",
        "_map",
        "_mappable",
        "_pins",
        "_reserve_ahead",
        "_reserved",
        "_unmapped_writes",
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
        files: OpenFileCache | None = None,
    ) -> None:
        self.path = path
        self.start = start
        self.size = size
        self._fd = fd
        self._files = files
        #: Flushes using the cached descriptor right now (changed under the cache's lock).
        self._pins = 0
        #: Writes with ``pwrite`` since a cached file whose map went with an eviction was opened again.
        self._unmapped_writes = 0
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
        files: OpenFileCache | None = None,
    ) -> Segment:
        """A new file at its full size; ``mapped``: written through a map, with disk blocks reserved
        ``reserve_ahead`` bytes at a time (see the module); ``files``: the cache it is opened in."""
        path = directory / segment_name(start)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size != size:
                os.ftruncate(fd, size)
        except OSError:
            os.close(fd)
            raise
        log.debug("created segment %s", path)
        if files is None:
            return cls(path, start, size, fd, mapped=mapped, reserve_ahead=reserve_ahead)
        segment = cls(path, start, size, -1, mapped=mapped, reserve_ahead=reserve_ahead, files=files)
        files.adopt(segment, fd)  # it is about to be written
        return segment

    @classmethod
    def open_existing(
        cls,
        path: Path,
        start: int,
        size: int,
        *,
        mapped: bool = False,
        reserve_ahead: int = RESERVE_AHEAD,
        files: OpenFileCache | None = None,
    ) -> Segment:
        """Open a file found on disk; a short file (a crash while creating it) is extended to full size.

        With ``files`` the file is only checked (by its path): the cache opens it when it is first used,
        so a store with more files than descriptors loads."""
        if files is not None:
            actual = os.stat(path).st_size
            if actual < size:
                log.warning("segment %s is %d bytes, extending to %d", path, actual, size)
                os.truncate(path, size)
            elif actual > size:
                raise ValueError(f"segment {path} is {actual} bytes, larger than the configured {size}")
            return cls(path, start, size, -1, mapped=mapped, reserve_ahead=reserve_ahead, files=files)
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
        """Closed for good (:meth:`close`, :meth:`destroy`); a file the cache closed for room is not."""
        return self._closed

    @property
    def is_open(self) -> bool:
        """Whether the file has a descriptor to use now (a cached segment's may have been closed for room)."""
        return self._fd >= 0 and not self._closed

    def _descriptor(self) -> int:
        """The file's descriptor, opened through the cache if it was closed; marks the file recently used.
        Owner only (see :class:`OpenFileCache`)."""
        files = self._files
        if files is None:
            return self._fd
        if self._fd < 0 or self._closed:
            return files.open(self)  # refuses a segment closed for good
        files._recent.move_to_end(self)
        return self._fd

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
        # The send path's consume-queue write: a cached file costs one ``move_to_end`` here (inlined).
        fd = self._fd
        files = self._files
        if files is not None:
            if fd < 0:
                fd = files.open(self)
            else:
                files._recent.move_to_end(self)
        end = position + len(data)
        reserved = end <= self._reserved or (self._mappable and self._reserve(end))
        if reserved and len(data) < PWRITE_FROM:
            mapped = self._map
            if mapped is not None:
                mapped.write(position, data)
                return
            # Closed for room since it was mapped (its blocks are still reserved): map it again only once
            # it proves busy, as mapping and unmapping cost more than a few writes do.
            self._unmapped_writes += 1
            if self._unmapped_writes >= REMAP_AFTER_WRITES:
                self._map = _map_file()(fd, self.size)
                self._map.write(position, data)
                return
        written = os.pwrite(fd, data, position)
        if written == len(data):  # the usual case: one call wrote it all
            return
        view = memoryview(data)[written:]
        position += written
        while view:
            written = os.pwrite(fd, view, position)
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
        fd = self._descriptor()
        chunks: list[bytes] = []
        while length > 0:
            chunk = os.pread(fd, length, position)
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
        if self._files is not None:
            return self._flush_cached(self._files, target)
        try:
            _sync_data(self._fd)
        except OSError:
            if not self._closed:
                raise
            # Deleted by retention while a flusher thread held it: nothing left to make durable.
            return False
        self.flushed_position = max(self.flushed_position, target)
        return True

    def _flush_cached(self, files: OpenFileCache, target: int) -> bool:
        """fsync a consume-queue file through its pinned descriptor, or one of the flush's own when the
        cache closed it: the bytes written before it was closed are the inode's dirty pages either way."""
        pinned = files.pin(self)
        if pinned is None:
            return False  # deleted or closed meanwhile: nothing left to make durable
        fd, own = pinned
        try:
            _sync_data(fd)
        finally:
            if own:
                os.close(fd)
            else:
                files.unpin(self)
        self.flushed_position = max(self.flushed_position, target)
        return True

    def truncate_to(self, position: int) -> None:
        """Forget everything from ``position`` on: the bytes become zeros again and the file keeps its size.

        Recovery relies on the zeros: a later scan must never meet stale records past the end it settled on.
        """
        position = max(0, min(position, self.size))
        # Pages of the map past ``position`` are dropped with the blocks, and read as zeros afterwards.
        self._reserved = min(self._reserved, position)
        fd = self._descriptor()
        os.ftruncate(fd, position)
        os.ftruncate(fd, self.size)
        os.fsync(fd)
        self.write_position = position
        self.flushed_position = min(self.flushed_position, position)

    def last_modified(self) -> float:
        """Seconds since the epoch of the file's last write: what retention judges age by, as Apache does."""
        return os.stat(self.path).st_mtime

    def close(self) -> None:
        if self._closed:
            return
        if self._files is not None:
            self._files.forget(self)
            return
        self._closed = True
        self._reserved = 0
        if self._map is not None:
            self._map.close()
            self._map = None
        os.close(self._fd)

    def _release(self) -> None:
        """Close the map and the descriptor, keeping everything else (the cache made room, or a deferred
        close); called under the cache's lock."""
        if self._map is not None:
            self._map.close()
            self._map = None
        self._unmapped_writes = 0
        fd = self._fd
        self._fd = -1
        os.close(fd)

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
