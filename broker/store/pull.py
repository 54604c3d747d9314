"""Answering a pull from one consume queue, with Apache's statuses and next-offset rules.

Out-of-range offsets get the status and corrected next offset an Apache master gives (OFFSET_TOO_SMALL
sends the consumer to the min offset, OFFSET_OVERFLOW_BADLY to the max). In range, entries are walked from
the requested offset: ones whose tag code is not wanted are skipped (but consumed, so the next offset moves
past them), ones whose commit-log bytes are gone mark MESSAGE_WAS_REMOVING and skip the rest of that
segment, and the walk stops when the batch is full by count or by bytes.

A slave does not correct out-of-range offsets (Apache's ``nextOffsetCorrection`` without
``offsetCheckInSlave``): its queues may lag its master's, so it answers with the requested offset and leaves
the correction to the master. The walk also notes the last commit-log offset it looked at, from which the
store judges whether the consumer has fallen so far behind that it should read from a slave.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from broker.store.commit_log import CommitLog
from broker.store.config import CONSUME_QUEUE_ENTRY_SIZE
from broker.store.consume_queue import ConsumeQueue, CqEntry, to_java_int
from broker.store.results import GetMessageResult, GetMessageStatus


@dataclass(frozen=True, slots=True)
class PullLimits:
    """How much one pull may return and how far it may look."""

    max_count: int
    max_bytes: int
    #: Consume-queue bytes one pull may walk over (Apache's ``maxFilterMessageSize``).
    max_filter_bytes: int


def pull(
    queue: ConsumeQueue | None,
    commit_log: CommitLog,
    offset: int,
    limits: PullLimits,
    tag_codes: frozenset[int] | None,
    message_filter: Callable[[bytes], bool] | None,
    *,
    correct_offsets: bool = True,
) -> GetMessageResult:
    def corrected(new_offset: int) -> int:
        return new_offset if correct_offsets else offset

    if queue is None:
        return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, corrected(0), 0, 0)
    min_offset, max_offset = queue.min_offset, queue.max_offset
    if max_offset == 0:
        return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, corrected(0), min_offset, max_offset)
    if offset < min_offset:
        return GetMessageResult(
            GetMessageStatus.OFFSET_TOO_SMALL, corrected(min_offset), min_offset, max_offset
        )
    if offset == max_offset:
        return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, min_offset, max_offset)
    if offset > max_offset:
        return GetMessageResult(
            GetMessageStatus.OFFSET_OVERFLOW_BADLY, corrected(max_offset), min_offset, max_offset
        )

    scan = max(limits.max_filter_bytes // CONSUME_QUEUE_ENTRY_SIZE, limits.max_count)
    # Entries are read a batch's worth at a time: the walk may look as far as ``scan`` entries (filters
    # skip entries), but a pull that is not filtered stops after max_count of them.
    chunk = min(scan, max(limits.max_count, _MIN_CHUNK))
    entries = queue.read(offset, chunk)
    if entries is None:
        # The entry's file is gone although the offset is in range: move on to the next file.
        per_file = queue.entries_per_file
        next_file = offset + per_file - offset % per_file
        return GetMessageResult(
            GetMessageStatus.OFFSET_FOUND_NULL, corrected(next_file), min_offset, max_offset
        )

    result = GetMessageResult(GetMessageStatus.NO_MATCHED_MESSAGE, offset, min_offset, max_offset)
    total_bytes = 0
    skip_below = -1
    walked = 0
    while entries:
        reader = _RunReader(commit_log, entries)
        for index, entry in enumerate(entries):
            count = len(result.messages)
            if count and (count >= limits.max_count or total_bytes + entry.size > limits.max_bytes):
                return result
            result.next_begin_offset = entry.queue_offset + 1
            if not entry.is_blank:
                result.max_physical_offset_pulled = entry.commit_log_offset
            if entry.commit_log_offset < skip_below or entry.is_blank:
                continue
            if tag_codes is not None and to_java_int(entry.tags_code) not in tag_codes:
                continue
            data = reader.read(index, limits.max_bytes - total_bytes)
            if data is None:
                if not count:
                    result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                skip_below = commit_log.roll_next_file(entry.commit_log_offset)
                continue
            if message_filter is not None and not message_filter(data):
                continue
            result.messages.append(data)
            result.queue_offsets.append(entry.queue_offset)
            result.status = GetMessageStatus.FOUND
            total_bytes += len(data)
            skip_below = -1
        walked += len(entries)
        if len(result.messages) >= limits.max_count:
            break  # full: the next entry would only end the walk
        following = entries[-1].queue_offset + 1
        entries = queue.read(following, min(chunk, scan - walked)) if walked < scan else None
    return result


#: Entries read at once when a pull asks for fewer (a filtered pull usually walks past some).
_MIN_CHUNK = 32


class _RunReader:
    """Reads the records of a pull's entries, with one read for each run of them that lies back to back
    in the commit log (the messages of a batch do): a read per message was most of a pull's time."""

    def __init__(self, commit_log: CommitLog, entries: list[CqEntry]) -> None:
        self._commit_log = commit_log
        self._entries = entries
        self._data = b""
        self._start = self._end = -1

    def read(self, index: int, budget: int) -> bytes | None:
        """The record of ``entries[index]``; the run read with it stops within ``budget`` bytes."""
        entry = self._entries[index]
        offset, size = entry.commit_log_offset, entry.size
        if self._start <= offset and offset + size <= self._end:
            relative = offset - self._start
            return self._data[relative : relative + size]
        end = offset + size
        entries = self._entries
        following = index + 1
        while (
            following < len(entries)
            and entries[following].commit_log_offset == end
            and not entries[following].is_blank
            and end + entries[following].size - offset <= budget
        ):
            end += entries[following].size
            following += 1
        if following == index + 1:
            return self._commit_log.read(offset, size)
        data = self._commit_log.read(offset, end - offset)
        if data is None:  # part of the run is not readable: each record on its own says which
            return self._commit_log.read(offset, size)
        self._data, self._start, self._end = data, offset, end
        return data[:size]
