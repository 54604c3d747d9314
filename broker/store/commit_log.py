"""The commit log: every message of every topic, appended in arrival order to fixed-size segment files.

A record never straddles two files. When the next record would not fit (with eight bytes to spare), the
file is closed with Apache's end-of-file marker — the number of bytes left in the file and the magic
``0xcbd43194`` — and the record goes to the start of the next file. Offsets are global byte positions over
the whole log, which is what consume-queue entries and offset message ids carry.

The record layout itself belongs to :mod:`rocketmq_wire.message.stored`; this module only knows the two
fields every record starts with (total size, magic), which is all it needs to walk the log.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from broker.store.segment import Segment
from broker.store.segment_queue import SegmentQueue
from rocketmq_wire.errors import CodecError
from rocketmq_wire.message.layout import BLANK_MAGIC, MAGIC_V1, MAGIC_V2
from rocketmq_wire.message.stored import MessageExt, decode_message

log = logging.getLogger("broker.store.commit_log")

#: Size and magic: what every record, and the end-of-file marker, starts with.
RECORD_PREFIX = struct.Struct(">iI")
END_OF_FILE_MIN_BLANK = RECORD_PREFIX.size
_SCAN_WINDOW = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ScannedRecord:
    """A verified record found by a scan: where it is, its bytes and its decoded form."""

    offset: int
    data: bytes
    message: MessageExt


class CommitLog:
    def __init__(self, directory: Path, segment_size: int) -> None:
        self.segment_size = segment_size
        self.segments = SegmentQueue(directory, segment_size, mapped=True)
        #: Where the last :meth:`scan` stopped: just past the last good record.
        self.scan_end = 0

    def load(self) -> None:
        self.segments.load()

    # --- offsets -------------------------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        """Offset of the oldest byte still on disk (Apache's ``getMinOffset`` for a fresh log)."""
        return self.segments.min_offset

    @property
    def max_offset(self) -> int:
        """Offset the next record would be written at, before any file roll."""
        return self.segments.max_offset

    @property
    def flushed_offset(self) -> int:
        return self.segments.flushed_offset

    @property
    def sync_count(self) -> int:
        return self.segments.sync_count

    def roll_next_file(self, offset: int) -> int:
        """Start offset of the file after the one holding ``offset``."""
        return offset + self.segment_size - offset % self.segment_size

    # --- writing -------------------------------------------------------------------------------------------

    def append(self, build: Callable[[int], bytes]) -> tuple[int, bytes]:
        """Append the record ``build(offset)`` returns for the offset it will be written at.

        The builder is asked again with the next file's start offset if the record does not fit in the
        current file, since the offset is part of the record. Returns the offset and the bytes written.
        """
        segment = self._writable_segment()
        offset = segment.write_offset
        data = build(offset)
        if len(data) + END_OF_FILE_MIN_BLANK > self.segment_size:
            raise ValueError(
                f"a record of {len(data)} bytes can never fit a {self.segment_size}-byte segment"
            )
        if len(data) + END_OF_FILE_MIN_BLANK > segment.remaining:
            self._close_with_marker(segment)
            segment = self._writable_segment()
            offset = segment.write_offset
            data = build(offset)
        segment.append(data)
        return offset, data

    def append_raw(self, offset: int, data: bytes) -> None:
        """Write bytes another broker's commit log holds at ``offset``, unchanged (a slave's copy).

        The bytes must continue this log exactly (an empty log starts at the segment boundary the master's
        data starts on) and stay inside one file, as every HA transfer does. Raises ValueError otherwise:
        the caller then resynchronises instead of storing bytes at the wrong place.
        """
        last = self.segments.last
        if last is None:
            if offset % self.segment_size:
                raise ValueError(f"an empty commit log cannot start at {offset}, inside a file")
            segment = self.segments.create_next(offset)
        else:
            segment = last if not last.is_full else self.segments.create_next()
        if segment.write_offset != offset:
            raise ValueError(f"bytes for offset {offset} do not continue the commit log at {self.max_offset}")
        if len(data) > segment.remaining:
            raise ValueError(
                f"{len(data)} bytes at {offset} overrun the {self.segment_size}-byte file "
                f"{segment.path.name}: do master and slave use the same mappedFileSizeCommitLog?"
            )
        segment.append(data)

    def read_chunk(self, offset: int, max_bytes: int) -> bytes | None:
        """Written bytes from ``offset`` to the end of what its file holds, at most ``max_bytes``
        (Apache's ``getData``: what a master sends a slave next). None if there are none yet."""
        segment = self.segments.find(offset)
        if segment is None or max_bytes <= 0:
            return None
        relative = offset - segment.start
        available = segment.write_position - relative
        if available <= 0:
            return None
        data = segment.read(relative, min(available, max_bytes))
        return data or None

    def _writable_segment(self) -> Segment:
        last = self.segments.last
        if last is not None and not last.is_full:
            return last
        return self.segments.create_next()

    @staticmethod
    def _close_with_marker(segment: Segment) -> None:
        remaining = segment.remaining
        segment.append(RECORD_PREFIX.pack(remaining, BLANK_MAGIC))
        segment.write_position = segment.size

    # --- reading -------------------------------------------------------------------------------------------

    def read(self, offset: int, size: int) -> bytes | None:
        """``size`` bytes at ``offset`` if they are all written and still on disk."""
        segment = self.segments.find(offset)
        if segment is None or size <= 0:
            return None
        relative = offset - segment.start
        if relative + size > segment.write_position:
            return None
        data = segment.read(relative, size)
        return data if len(data) == size else None

    def read_record(self, offset: int) -> bytes | None:
        """The whole record starting at ``offset`` (whatever its size), or None if there is none."""
        prefix = self.read(offset, RECORD_PREFIX.size)
        if prefix is None:
            return None
        size, magic = RECORD_PREFIX.unpack(prefix)
        if magic not in (MAGIC_V1, MAGIC_V2) or size < RECORD_PREFIX.size:
            return None
        return self.read(offset, size)

    # --- recovery ------------------------------------------------------------------------------------------

    def scan(self, start: int, *, check_crc: bool = True) -> Iterator[ScannedRecord]:
        """Verified records from ``start`` (a record boundary) until the first thing that is not one.

        A record must carry a known magic, a size that stays inside its file, its own offset, and (with
        ``check_crc``) a body matching its CRC. End-of-file markers move the scan to the next file. When the
        iterator is exhausted, :attr:`scan_end` is the offset just past the last good record: everything
        from there on is a torn or never-written tail.
        """
        self.scan_end = start
        position = start
        while True:
            segment = self.segments.find(position)
            if segment is None:
                return
            window = b""
            window_start = position
            while position < segment.end:
                relative_in_window = position - window_start
                if relative_in_window + RECORD_PREFIX.size > len(window):
                    window_start = position
                    window = self._read_window(segment, position, RECORD_PREFIX.size)
                    relative_in_window = 0
                    if len(window) < RECORD_PREFIX.size:
                        return
                size, magic = RECORD_PREFIX.unpack_from(window, relative_in_window)
                if magic == BLANK_MAGIC:
                    if size != segment.end - position:
                        log.warning(
                            "end-of-file marker at %d claims %d bytes, not %d",
                            position,
                            size,
                            segment.end - position,
                        )
                        return
                    position = segment.end
                    self.scan_end = position
                    break
                if magic not in (MAGIC_V1, MAGIC_V2) or size < RECORD_PREFIX.size:
                    if size != 0 or magic != 0:
                        log.warning(
                            "no record at commit-log offset %d (size %d, magic %#x)", position, size, magic
                        )
                    return
                if position + size + END_OF_FILE_MIN_BLANK > segment.end:
                    log.warning("record at %d of %d bytes overruns its file", position, size)
                    return
                if relative_in_window + size > len(window):
                    window_start = position
                    window = self._read_window(segment, position, size)
                    relative_in_window = 0
                    if len(window) < size:
                        return
                data = window[relative_in_window : relative_in_window + size]
                try:
                    message, _ = decode_message(data, 0, decompress_body=False, check_crc=check_crc)
                except CodecError as exc:
                    log.warning("corrupt record at commit-log offset %d: %s", position, exc)
                    return
                if message.commit_log_offset != position:
                    log.warning("record at %d says it belongs at %d", position, message.commit_log_offset)
                    return
                yield ScannedRecord(position, data, message)
                position += size
                self.scan_end = position
            else:
                return

    def complete_records(self, start: int) -> tuple[list[tuple[int, bytes]], int]:
        """Records wholly written from ``start`` (a record boundary) on, and where to resume afterwards.

        This is Apache's reput walk over what a slave received: bytes arrive in arbitrary pieces, so the
        walk stops at the first record whose bytes are not all there yet (resuming there later), and an
        end-of-file marker moves it to the next file once the rest of its file has arrived too. Where it
        stops is always a record or a marker, so a checkpoint taken there is a place recovery can scan from.
        Something that is no record at all stops it with an error logged; bodies are not checked here
        (the master did that when it stored them).
        """
        records: list[tuple[int, bytes]] = []
        position = start
        while True:
            segment = self.segments.find(position)
            if segment is None:
                break
            prefix = self.read(position, RECORD_PREFIX.size)
            if prefix is None:
                break
            size, magic = RECORD_PREFIX.unpack(prefix)
            if magic == BLANK_MAGIC and size == segment.end - position:
                if not segment.is_full:
                    break  # the rest of the file is still on its way; resume at the marker
                position = segment.end
                continue
            if (
                magic not in (MAGIC_V1, MAGIC_V2)
                or size < RECORD_PREFIX.size
                or position + size > segment.end
            ):
                log.error(
                    "no record at replicated commit-log offset %d (size %d, magic %#x)", position, size, magic
                )
                break
            data = self.read(position, size)
            if data is None:
                break
            records.append((position, data))
            position += size
        return records, position

    def _read_window(self, segment: Segment, position: int, at_least: int) -> bytes:
        relative = position - segment.start
        return segment.read(relative, max(at_least, min(_SCAN_WINDOW, segment.size - relative)))

    def set_end(self, offset: int) -> None:
        """Cut the log at ``offset``: later bytes become zeros, later files are deleted."""
        log.info("commit log ends at offset %d", offset)
        self.segments.set_end(offset)

    def flush(self) -> int:
        return self.segments.flush()

    def close(self) -> None:
        self.segments.close()
