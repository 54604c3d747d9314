"""One topic/queue's consume queue: a dense array of 20-byte pointers into the commit log.

Entry ``n`` of the array lives at byte ``n * 20`` of the queue's global byte range, so a queue offset is a
position and a lookup is arithmetic. The array is split into files of ``entries_per_file`` entries named by
their first byte offset, exactly as Apache lays out ``consumequeue/<topic>/<queueId>/``. Each entry holds
the message's commit-log offset (8 bytes), its size (4) and its tag hash code (8, Java's ``String.hashCode``
of the TAGS property widened to long, 0 without tags) — all big-endian.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from broker.store.config import CONSUME_QUEUE_ENTRY_SIZE
from broker.store.segment import SMALL_RESERVE_AHEAD, OpenFileCache, maps_hold_no_descriptor
from broker.store.segment_queue import SegmentQueue
from rocketmq_wire.javahash import java_string_hash

log = logging.getLogger("broker.store.consume_queue")

_ENTRY = struct.Struct(">qiq")
assert _ENTRY.size == CONSUME_QUEUE_ENTRY_SIZE

#: Apache's filler for entries before the first real one of a queue that starts mid-file.
_BLANK_SIZE = 0x7FFFFFFF
_BLANK_ENTRY = _ENTRY.pack(0, _BLANK_SIZE, 0)


def tag_hash_code(tags: str | None) -> int:
    """The tag code a consume-queue entry carries: Java's signed ``tags.hashCode()``, 0 for no tags."""
    if not tags:
        return 0
    return to_java_int(java_string_hash(tags))


def to_java_int(value: int) -> int:
    """An integer reduced to Java's signed 32-bit range (hash codes arrive signed or unsigned)."""
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value >= 0x8000_0000 else value


@dataclass(frozen=True, slots=True)
class CqEntry:
    queue_offset: int
    commit_log_offset: int
    size: int
    tags_code: int

    @property
    def is_blank(self) -> bool:
        return self.size == _BLANK_SIZE


class ConsumeQueue:
    """Entries of one queue; offsets in the public methods count entries, never bytes.

    Its files are opened on demand in ``open_files``, the cache of open consume-queue files the queues of
    a store share (:class:`~broker.store.queue_table.QueueTable` passes its own); a queue made without one
    gets a cache of its own. Every method but :meth:`flush` is the owner's, called one at a time (the
    store's lock); :meth:`flush` may run on another thread meanwhile.
    """

    def __init__(
        self,
        root: Path,
        topic: str,
        queue_id: int,
        entries_per_file: int,
        *,
        open_files: OpenFileCache | None = None,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.entries_per_file = entries_per_file
        self._files = SegmentQueue(
            root / topic / str(queue_id),
            entries_per_file * CONSUME_QUEUE_ENTRY_SIZE,
            mapped=maps_hold_no_descriptor(),
            reserve_ahead=SMALL_RESERVE_AHEAD,
            open_files=open_files if open_files is not None else OpenFileCache(),
        )
        self._min_byte = 0

    # --- lifecycle ---------------------------------------------------------------------------------------

    def load(self) -> None:
        self._files.load()

    def recover(self) -> None:
        """Find the end of the valid entries: the first all-zero (or torn) entry in the last three files.

        Only the newest files can hold a partly written tail; older ones were full before the next began.
        Within a file entries are written front to back, so "valid" holds for a prefix and the end is
        found by bisection instead of reading files that are mostly zeros. The files read are opened
        through the cache like any other use, so recovering many queues keeps within its bound.
        """
        segments = self._files.segments
        if not segments:
            return
        end = segments[max(0, len(segments) - 3)].start
        for segment in segments[max(0, len(segments) - 3) :]:
            lo, hi = 0, segment.size // CONSUME_QUEUE_ENTRY_SIZE
            while lo < hi:
                mid = (lo + hi) // 2
                data = segment.read(mid * CONSUME_QUEUE_ENTRY_SIZE, CONSUME_QUEUE_ENTRY_SIZE)
                physical, size, _ = _ENTRY.unpack(data)
                if physical >= 0 and size > 0:
                    lo = mid + 1
                else:
                    hi = mid
            end = segment.start + lo * CONSUME_QUEUE_ENTRY_SIZE
            if end < segment.end:
                break
        last = segments[-1]
        if end == last.end:
            clean = True
        elif last.start <= end:
            clean = not last.read(end - last.start, CONSUME_QUEUE_ENTRY_SIZE).strip(b"\0")
        else:
            clean = False
        self._files.set_end(end, tail_is_zero=clean)
        self._min_byte = max(self._min_byte, self._files.min_offset)

    def flush(self) -> None:
        self._files.flush()

    def close(self) -> None:
        self._files.close()

    def destroy(self) -> None:
        self._files.destroy()

    # --- offsets -------------------------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        """First queue offset still readable (Apache's ``getMinOffsetInQueue``)."""
        return self._min_byte // CONSUME_QUEUE_ENTRY_SIZE

    @property
    def max_offset(self) -> int:
        """Queue offset the next message will get (one past the last entry)."""
        return self._files.max_offset // CONSUME_QUEUE_ENTRY_SIZE

    @property
    def file_count(self) -> int:
        return len(self._files.segments)

    # --- writing -------------------------------------------------------------------------------------------

    def put(self, queue_offset: int, commit_log_offset: int, size: int, tags_code: int) -> bool:
        """Record a message at its queue offset; an offset already present is left alone (re-dispatch).

        Returns False when the entry was not written because it was already there.
        """
        position = queue_offset * CONSUME_QUEUE_ENTRY_SIZE
        current = self._files.max_offset
        if position < current and not self._files.empty:
            return False
        if self._files.empty:
            segment = self._files.create_next(position)
            if position > segment.start:
                # A queue whose earlier entries are gone (or never existed here) starts mid-file: pad as
                # Apache does so the file stays addressable by offset, and start reading from this entry.
                self._fill_blanks(segment.start, position)
            self._min_byte = position
        elif position > current:
            log.warning(
                "consume queue %s/%d expected offset %d but got %d; padding the gap",
                self.topic,
                self.queue_id,
                current // CONSUME_QUEUE_ENTRY_SIZE,
                queue_offset,
            )
            self._fill_blanks(current, position)
        last = self._files.last
        target = last if last is not None and not last.is_full else self._files.create_next()
        target.append(_ENTRY.pack(commit_log_offset, size, tags_code))
        return True

    def put_run(self, queue_offset: int, entries: Sequence[tuple[int, int, int]]) -> None:
        """Record consecutive messages from ``queue_offset`` on: (commit-log offset, size, tag code) each.

        A batch's messages take consecutive offsets of one queue, so they are written with one write when
        they continue the queue inside its last file; anything else goes entry by entry through :meth:`put`.
        """
        last = self._files.last
        position = queue_offset * CONSUME_QUEUE_ENTRY_SIZE
        if (
            last is not None
            and position == self._files.max_offset
            and len(entries) * CONSUME_QUEUE_ENTRY_SIZE <= last.remaining
        ):
            pack = _ENTRY.pack
            last.append(b"".join([pack(*entry) for entry in entries]))
            return
        for index, (commit_log_offset, size, tags_code) in enumerate(entries):
            self.put(queue_offset + index, commit_log_offset, size, tags_code)

    def _fill_blanks(self, start: int, end: int) -> None:
        position = start
        while position < end:
            segment = self._files.last
            if segment is None or segment.is_full:
                segment = self._files.create_next(position)
            count = min(end - position, segment.remaining) // CONSUME_QUEUE_ENTRY_SIZE
            segment.append(_BLANK_ENTRY * count)
            position += count * CONSUME_QUEUE_ENTRY_SIZE

    def truncate_from_physical(self, commit_log_offset: int) -> None:
        """Drop every trailing entry pointing at or past ``commit_log_offset`` (the commit log was cut)."""
        lo, hi = self.min_offset, self.max_offset
        # Entries point at increasing commit-log offsets, so the cut point is found by bisection.
        while lo < hi:
            mid = (lo + hi) // 2
            entry = self._read_raw(mid)
            if entry is not None and not entry.is_blank and entry.commit_log_offset >= commit_log_offset:
                hi = mid
            else:
                lo = mid + 1
        if lo < self.max_offset:
            log.info(
                "consume queue %s/%d: dropping entries from offset %d (commit log cut at %d)",
                self.topic,
                self.queue_id,
                lo,
                commit_log_offset,
            )
            self._files.set_end(lo * CONSUME_QUEUE_ENTRY_SIZE)
            self._min_byte = min(self._min_byte, self._files.max_offset)

    # --- retention -----------------------------------------------------------------------------------------

    def delete_expired(self, min_commit_log_offset: int) -> int:
        """Delete files whose every entry points before the commit log's first byte; keeps the newest file."""
        entry_size = CONSUME_QUEUE_ENTRY_SIZE

        def expired(segment_start: int, segment_size: int) -> bool:
            last = self._read_raw((segment_start + segment_size) // entry_size - 1)
            return last is not None and last.commit_log_offset + max(last.size, 0) <= min_commit_log_offset

        removed = self._files.remove_leading(lambda s: expired(s.start, s.size))
        self.correct_min_offset(min_commit_log_offset)
        return removed

    def correct_min_offset(self, min_commit_log_offset: int) -> None:
        """Move the min offset to the first entry whose message is still in the commit log."""
        lo = max(self._min_byte, self._files.min_offset) // CONSUME_QUEUE_ENTRY_SIZE
        hi = self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            entry = self._read_raw(mid)
            if entry is not None and not entry.is_blank and entry.commit_log_offset >= min_commit_log_offset:
                hi = mid
            else:
                lo = mid + 1
        self._min_byte = lo * CONSUME_QUEUE_ENTRY_SIZE

    # --- reading -------------------------------------------------------------------------------------------

    def _read_raw(self, queue_offset: int) -> CqEntry | None:
        position = queue_offset * CONSUME_QUEUE_ENTRY_SIZE
        segment = self._files.find(position)
        if segment is None:
            return None
        data = segment.read(position - segment.start, CONSUME_QUEUE_ENTRY_SIZE)
        if len(data) < CONSUME_QUEUE_ENTRY_SIZE:
            return None
        physical, size, tags_code = _ENTRY.unpack(data)
        return CqEntry(queue_offset, physical, size, tags_code)

    def get(self, queue_offset: int) -> CqEntry | None:
        """The entry at ``queue_offset`` if it is within [min, max)."""
        if queue_offset < self.min_offset or queue_offset >= self.max_offset:
            return None
        return self._read_raw(queue_offset)

    def last(self) -> CqEntry | None:
        return self.get(self.max_offset - 1)

    def read(self, queue_offset: int, max_entries: int) -> list[CqEntry] | None:
        """Up to ``max_entries`` entries from ``queue_offset``, or None if that offset's file is gone."""
        if queue_offset < self.min_offset:
            return None
        end_offset = min(self.max_offset, queue_offset + max(0, max_entries))
        entries: list[CqEntry] = []
        offset = queue_offset
        while offset < end_offset:
            position = offset * CONSUME_QUEUE_ENTRY_SIZE
            segment = self._files.find(position)
            if segment is None:
                return entries or None
            relative = position - segment.start
            count = min(end_offset - offset, (segment.size - relative) // CONSUME_QUEUE_ENTRY_SIZE)
            data = segment.read(relative, count * CONSUME_QUEUE_ENTRY_SIZE)
            for index, (physical, size, tags_code) in enumerate(_ENTRY.iter_unpack(data)):
                entries.append(CqEntry(offset + index, physical, size, tags_code))
            offset += count
        return entries

    def search(self, predicate: Callable[[CqEntry], bool]) -> int:
        """The first queue offset in [min, max) whose entry satisfies a predicate that is monotonic in the
        offset (False…False True…True); ``max_offset`` if none does."""
        lo, hi = self.min_offset, self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            entry = self._read_raw(mid)
            if entry is not None and predicate(entry):
                hi = mid
            else:
                lo = mid + 1
        return lo
