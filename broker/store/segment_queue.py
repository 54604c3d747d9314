"""An ordered run of equally sized segment files in one directory (Apache's ``MappedFileQueue``).

The queue covers one contiguous range of global offsets: retention removes files from the front, appends
add files at the back, recovery cuts the back off. Offsets are global, so a file's name alone says which
range it holds and lookups are arithmetic, not searches.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from broker.store.segment import RESERVE_AHEAD, OpenFileCache, Segment, parse_segment_name

log = logging.getLogger("broker.store.segment_queue")


class SegmentQueue:
    def __init__(
        self,
        directory: Path,
        segment_size: int,
        *,
        mapped: bool = False,
        reserve_ahead: int = RESERVE_AHEAD,
        open_files: OpenFileCache | None = None,
    ) -> None:
        """``mapped``: the files are written through maps, their disk blocks reserved ``reserve_ahead``
        bytes at a time (see :mod:`broker.store.segment`). ``open_files``: the files are opened on demand
        in that cache, shared with other queues (consume queues); without it each file stays open while
        it lives (the commit log)."""
        self.directory = directory
        self.segment_size = segment_size
        self._mapped = mapped
        self._reserve_ahead = reserve_ahead
        self._open_files = open_files
        self._segments: list[Segment] = []
        #: fsync calls issued so far (group commit is judged by how few it needs).
        self.sync_count = 0
        #: Start offset of the first file not seen wholly fsynced: :meth:`flush` and :attr:`flushed_offset`
        #: begin there rather than at the first file, whose predecessors a store of 1 GiB files has by the
        #: hundred (SYNC_FLUSH asks for the durable offset on every send). Only a cut lowers it.
        self._flush_floor = 0

    def load(self) -> None:
        """Open every segment file in the directory; write positions are left at "full" for recovery to fix.

        With a cache of open files, "open" is a check of each file's size: the cache opens a file when it
        is first read or written, so loading thousands of queues takes no descriptors.

        A gap in the sequence (a file missing in the middle) would make global offsets ambiguous, so only
        the run of consecutive files ending at the newest is kept; anything older than a gap is ignored
        with a warning, which is what retention would have done to it anyway.
        """
        if not self.directory.is_dir():
            return
        found: list[tuple[int, Path]] = []
        with os.scandir(self.directory) as entries:  # file types come with the listing: no stat each
            for entry in entries:
                start = parse_segment_name(entry.name)
                if start is None or not entry.is_file():
                    continue
                path = self.directory / entry.name
                if start % self.segment_size != 0:
                    raise ValueError(f"segment {path} does not start on a {self.segment_size}-byte boundary")
                found.append((start, path))
        found.sort()
        first = 0
        for i in range(len(found) - 1, 0, -1):
            if found[i][0] - found[i - 1][0] != self.segment_size:
                log.warning("gap before segment %s, ignoring %d older files", found[i][1], i)
                first = i
                break
        for start, path in found[first:]:
            segment = Segment.open_existing(
                path,
                start,
                self.segment_size,
                mapped=self._mapped,
                reserve_ahead=self._reserve_ahead,
                files=self._open_files,
            )
            segment.write_position = segment.size
            segment.flushed_position = segment.size
            self._segments.append(segment)

    @property
    def segments(self) -> list[Segment]:
        """A snapshot of the current files, oldest first."""
        return list(self._segments)

    @property
    def empty(self) -> bool:
        return not self._segments

    @property
    def first(self) -> Segment | None:
        return self._segments[0] if self._segments else None

    @property
    def last(self) -> Segment | None:
        return self._segments[-1] if self._segments else None

    @property
    def min_offset(self) -> int:
        """Global offset of the first byte still on disk (0 when there are no files)."""
        return self._segments[0].start if self._segments else 0

    @property
    def max_offset(self) -> int:
        """Global offset one past the last written byte."""
        return self._segments[-1].write_offset if self._segments else 0

    def find(self, offset: int) -> Segment | None:
        """The file holding global ``offset``, if it is still on disk."""
        if not self._segments:
            return None
        index = (offset - self._segments[0].start) // self.segment_size
        if 0 <= index < len(self._segments):
            return self._segments[index]
        return None

    def create_next(self, start_if_empty: int = 0) -> Segment:
        """Add the file that follows the last one (or the first file, at a segment-aligned offset)."""
        last = self.last
        if last is not None:
            start = last.end
        else:
            start = start_if_empty - start_if_empty % self.segment_size
        self.directory.mkdir(parents=True, exist_ok=True)
        segment = Segment.create(
            self.directory,
            start,
            self.segment_size,
            mapped=self._mapped,
            reserve_ahead=self._reserve_ahead,
            files=self._open_files,
        )
        self._segments.append(segment)
        return segment

    def set_end(self, offset: int, *, tail_is_zero: bool = False) -> None:
        """Make ``offset`` the end of written data: later files are deleted, the one holding it cut there.

        ``tail_is_zero`` says the caller knows nothing but zeros follows ``offset`` in its file, which
        spares zeroing it again (and the fsync that makes the zeroing durable).
        """
        keep: list[Segment] = []
        for segment in self._segments:
            if segment.end <= offset:
                segment.write_position = segment.size
                keep.append(segment)
            elif segment.start <= offset:
                if tail_is_zero:
                    segment.write_position = offset - segment.start
                    segment.flushed_position = segment.write_position
                else:
                    segment.truncate_to(offset - segment.start)
                keep.append(segment)
            else:
                segment.destroy()
        self._segments = keep
        self._flush_floor = 0  # a cut may have left files that were wholly fsynced short of that
        if keep and keep[-1].write_offset < offset:
            log.warning("end %d lies past the last file in %s", offset, self.directory)

    def flush(self) -> int:
        """fsync every file with unflushed bytes; returns the global offset durable up to."""
        return self._durable_end(sync=True)

    @property
    def flushed_offset(self) -> int:
        """Global offset up to which every byte has been fsynced (possibly stale by a concurrent flush)."""
        return self._durable_end(sync=False)

    def _durable_end(self, *, sync: bool) -> int:
        """Walk the files from the flush floor (fsyncing them first when ``sync``) to the first one not
        wholly fsynced: where it stops is the durable end, and the new floor.

        Runs on the loop and on flushing threads alike; the list of files is replaced, never edited in
        place, when files are cut or removed, so a walk over a list that is no longer current leaves the
        floor alone (it could be past a file the cut left unsynced)."""
        segments = self._segments
        if not segments:
            return 0
        first = segments[0].start
        index = min(max(0, (self._flush_floor - first) // self.segment_size), len(segments) - 1)
        flushed = first
        for segment in segments[index:]:
            if sync and segment.flush():
                self.sync_count += 1
            flushed = segment.start + segment.flushed_position
            if segment.flushed_position < segment.size:
                break
        floor = flushed - flushed % self.segment_size
        if floor > self._flush_floor and self._segments is segments:
            self._flush_floor = floor
        return flushed

    def remove_first(self, count: int) -> list[Segment]:
        """Delete the ``count`` oldest files; the newest is never removed."""
        count = min(count, len(self._segments) - 1)
        if count <= 0:
            return []
        removed = self._segments[:count]
        self._segments = self._segments[count:]
        for segment in removed:
            segment.destroy()
        return removed

    def remove_leading(self, should_remove: Callable[[Segment], bool], limit: int | None = None) -> int:
        """Delete files from the front while ``should_remove`` says so, up to ``limit``; never the newest."""
        count = 0
        for segment in self._segments[:-1]:
            if limit is not None and count >= limit:
                break
            if not should_remove(segment):
                break
            count += 1
        return len(self.remove_first(count))

    def total_size(self) -> int:
        return len(self._segments) * self.segment_size

    def close(self) -> None:
        for segment in self._segments:
            segment.close()

    def destroy(self) -> None:
        """Delete every file and the directory itself, if it is then empty."""
        for segment in self._segments:
            segment.destroy()
        self._segments = []
        try:
            os.rmdir(self.directory)
        except OSError:
            pass
