"""Deleting old commit-log segments, and the consume-queue files and index files that only point into them.

Apache's rules (CleanCommitLogService / CleanConsumeQueueService):

* a segment is *expired* when its last write is older than ``file_reserved_time_hours``; expired segments
  are deleted at the ``delete_when`` hours, or at any hour while disk usage exceeds
  ``disk_max_used_space_ratio``;
* while usage exceeds ``disk_space_clean_forcibly_ratio`` the oldest segments go regardless of age, until
  usage drops below the first ratio;
* at most ``delete_files_batch_max`` segments per pass, never the newest one (it is being written) and
  never one with bytes not yet fsynced.

Afterwards each consume queue drops files whose entries all point before the new first commit-log byte and
moves its min offset to the first entry still backed by the log; the index drops files likewise.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from broker.store.commit_log import CommitLog
from broker.store.config import StoreConfig
from broker.store.index_service import IndexService
from broker.store.queue_table import QueueTable
from broker.store.results import CleanResult
from broker.store.segment import Segment

log = logging.getLogger("broker.store.retention")

DiskUsage = Callable[[Path], float]


def disk_used_ratio(path: Path) -> float:
    """Fraction of the filesystem holding ``path`` that is in use (Apache: total minus free over total)."""
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return -1.0
    return (usage.total - usage.free) / usage.total if usage.total else -1.0


def _is_delete_hour(now_ms: int, hours: frozenset[int]) -> bool:
    return time.localtime(now_ms / 1000).tm_hour in hours


def clean_expired(
    now_ms: int,
    config: StoreConfig,
    commit_log: CommitLog,
    queues: QueueTable,
    index: IndexService | None,
    disk_usage: DiskUsage,
) -> CleanResult:
    directory = commit_log.segments.directory
    usage = disk_usage(directory)
    space_full = usage < 0 or usage > config.used_space_ratio_limit
    forcibly = config.clean_file_forcibly_enable and usage > config.disk_space_clean_forcibly_ratio
    flushed = commit_log.flushed_offset
    batch_max = config.delete_files_batch_max
    removed = 0

    if space_full or _is_delete_hour(now_ms, config.delete_hours()):
        reserved_ms = config.file_reserved_time_hours * 3600 * 1000

        def expired(segment: Segment) -> bool:
            return segment.end <= flushed and segment.last_modified() * 1000 + reserved_ms <= now_ms

        removed += commit_log.segments.remove_leading(expired, limit=batch_max)

    while forcibly and usage > config.used_space_ratio_limit and removed < batch_max:
        step = commit_log.segments.remove_leading(lambda segment: segment.end <= flushed, limit=1)
        if not step:
            break
        removed += step
        usage = disk_usage(directory)
        log.warning("disk %.0f%% full: deleted a commit-log segment before its time", usage * 100)

    if not removed:
        return CleanResult(min_physical_offset=commit_log.min_offset)

    min_offset = commit_log.min_offset
    queue_files = sum(queue.delete_expired(min_offset) for queue in queues)
    index_files = index.delete_expired(min_offset) if index is not None else 0
    log.info(
        "retention removed %d commit-log segments, %d consume-queue files, %d index files; log starts at %d",
        removed,
        queue_files,
        index_files,
        min_offset,
    )
    return CleanResult(removed, queue_files, index_files, min_offset)
