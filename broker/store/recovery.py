"""Bringing a store back to a consistent state after any shutdown, clean or not.

The checkpoint names a commit-log offset below which every message is durable and has durable
consume-queue and index entries. Everything after it is suspect:

1. the commit log is walked from the checkpoint, each record verified (magic, size, its own offset, body
   CRC); the first thing that is not a good record is the end of the log and everything after it is
   zeroed or deleted — a torn tail from a crash mid-write;
2. consume-queue entries pointing at or past the checkpoint are dropped, and so are index files that
   indexed anything past it;
3. the records from the checkpoint (or from the start of the oldest dropped index file) to the end of
   the log are dispatched again. Dispatch skips queue offsets a queue already has, so no message can
   appear twice in a queue, and every record the log still holds gets its entries back.

Acknowledged SYNC_FLUSH appends were fsynced before their acknowledgement, so step 1 never cuts them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from broker.store.checkpoint import Checkpoint
from broker.store.commit_log import CommitLog
from broker.store.dispatch import Dispatcher
from broker.store.index_service import IndexService
from broker.store.queue_table import QueueTable

log = logging.getLogger("broker.store.recovery")


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    checkpoint_offset: int
    log_end: int
    torn_tail: bool
    dispatched_from: int
    redispatched_records: int


def recover(
    checkpoint: Checkpoint | None,
    commit_log: CommitLog,
    queues: QueueTable,
    index: IndexService | None,
    dispatcher: Dispatcher,
    *,
    check_crc: bool,
) -> RecoveryReport:
    segments = commit_log.segments.segments
    log_start = commit_log.min_offset
    file_end = segments[-1].end if segments else 0
    trusted = checkpoint.dispatched_offset if checkpoint is not None else log_start
    if not log_start <= trusted <= file_end:
        log.warning("checkpoint offset %d outside the commit log [%d, %d]", trusted, log_start, file_end)
        trusted = min(max(trusted, log_start), file_end)

    for _ in commit_log.scan(trusted, check_crc=check_crc):
        pass
    log_end = commit_log.scan_end
    torn = _has_tail(commit_log, log_end)
    if torn:
        log.warning("cutting a torn or corrupt commit-log tail at offset %d", log_end)
    commit_log.set_end(log_end)

    for queue in queues:
        queue.recover()
        queue.truncate_from_physical(trusted)

    dispatch_from = trusted
    if index is not None:
        resume = log_start if index.needs_rebuild else index.drop_from(trusted)
        index.needs_rebuild = False
        if resume is not None:
            dispatch_from = max(min(dispatch_from, resume), log_start)

    count = 0
    for record in commit_log.scan(dispatch_from, check_crc=False):
        dispatcher.dispatch(record.message, record.offset, len(record.data))
        count += 1
    if commit_log.scan_end != log_end:
        log.error("re-dispatch stopped at %d, before the verified end %d", commit_log.scan_end, log_end)

    for queue in queues:
        queue.correct_min_offset(commit_log.min_offset)

    report = RecoveryReport(trusted, log_end, torn, dispatch_from, count)
    log.info(
        "recovered store: checkpoint %d, log end %d, %d records re-dispatched from %d",
        trusted,
        log_end,
        count,
        dispatch_from,
    )
    return report


def _has_tail(commit_log: CommitLog, log_end: int) -> bool:
    """Whether anything but zeros follows the verified end (bytes in its file, or later files)."""
    segment = commit_log.segments.find(log_end)
    if segment is None:
        return False
    if commit_log.segments.last is not segment:
        return True
    return segment.read(log_end - segment.start, 8).strip(b"\0") != b""
