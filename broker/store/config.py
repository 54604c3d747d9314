"""Tunables of the message store, named after Apache's ``MessageStoreConfig`` where one exists.

Defaults match a stock Apache broker so that a store directory sized and aged by one behaves the same under
the other; tests shrink the sizes (segment files of a few KiB) to exercise file rolling cheaply.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

CONSUME_QUEUE_ENTRY_SIZE = 20
"""Bytes per consume-queue entry: commit-log offset (8), message size (4), tag hash code (8)."""


class FlushDiskType(enum.Enum):
    """When an append counts as written: after the page cache copy (ASYNC) or after fsync (SYNC)."""

    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole(enum.StrEnum):
    """Apache's ``brokerRole``: the store takes writes as a master and only copies its master's as a slave.

    A SYNC_MASTER acknowledges a send once a slave holds it; an ASYNC_MASTER does not wait.
    """

    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Store sizes, flush policy and retention policy.

    ``commit_log_segment_size`` is Apache's ``mappedFileSizeCommitLog``; ``consume_queue_entries_per_file``
    is the 300,000 entries behind ``mappedFileSizeConsumeQueue``. Times are milliseconds unless the name
    says hours. ``max_filter_message_size`` bounds, in consume-queue bytes, how far one pull scans past
    non-matching entries (Apache's ``maxFilterMessageSize``). Retention deletes time-expired segments at
    the ``delete_when`` hours or whenever disk usage is above ``disk_max_used_space_ratio`` percent, and
    deletes segments regardless of age while usage is above ``disk_space_clean_forcibly_ratio`` (unless
    ``clean_file_forcibly_enable`` is off: then unread messages are never deleted early). Above
    ``disk_space_warning_level_ratio`` the store takes no appends until usage falls below it again (Apache's
    disk-full flag; ratios here are fractions, where ``broker.conf`` gives percentages).
    ``os_page_cache_busy_timeout_ms`` (Apache's ``osPageCacheBusyTimeOutMills``) is how long one append
    may hold the commit-log lock before the store reports its page cache busy and the broker starts
    refusing sends.

    ``broker_role`` decides who writes: a SLAVE store refuses appends (SERVICE_NOT_AVAILABLE, as Apache's
    does) and takes its master's bytes through :meth:`MessageStore.append_replicated`; a SYNC_MASTER store
    waits up to ``slave_timeout_ms`` (Apache's ``slaveTimeout``) for a slave to hold each append.
    ``offset_check_in_slave`` lets a slave correct out-of-range pull offsets as a master does (Apache's
    ``offsetCheckInSlave``); ``access_message_in_memory_max_ratio`` is the share of physical memory behind
    which a pull is told to go to a slave (``accessMessageInMemoryMaxRatio``).
    """

    commit_log_segment_size: int = 1024 * 1024 * 1024
    consume_queue_entries_per_file: int = 300_000
    max_message_size: int = 4 * 1024 * 1024
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    flush_interval_commit_log_ms: int = 500
    flush_interval_consume_queue_ms: int = 1000
    sync_flush_timeout_ms: int = 5000
    check_crc_on_recover: bool = True
    message_index_enable: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 20_000_000
    max_transfer_bytes_on_message: int = 256 * 1024
    max_transfer_count_on_message: int = 32
    max_filter_message_size: int = 16_000
    file_reserved_time_hours: float = 72
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    disk_space_clean_forcibly_ratio: float = 0.85
    disk_space_warning_level_ratio: float = 0.90
    clean_file_forcibly_enable: bool = True
    #: Consume-queue files kept open at once, the least recently used closed first (0: a quarter of the
    #: process's descriptor limit, at most 1,024), so 10^5 queues run within a 4,096-descriptor limit.
    max_open_consume_queue_files: int = 0
    delete_files_batch_max: int = 10
    os_page_cache_busy_timeout_ms: int = 1000
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    slave_timeout_ms: int = 3000
    offset_check_in_slave: bool = False
    access_message_in_memory_max_ratio: int = 40

    def __post_init__(self) -> None:
        if self.commit_log_segment_size < 1024:
            raise ValueError("commit_log_segment_size must be at least 1 KiB")
        if self.consume_queue_entries_per_file < 1:
            raise ValueError("consume_queue_entries_per_file must be positive")
        if self.max_message_size < 1:
            raise ValueError("max_message_size must be positive")
        if self.max_hash_slot_num < 1 or self.max_index_num < 2:
            raise ValueError("index sizes must be positive")

    @property
    def effective_max_message_size(self) -> int:
        """The largest record an append accepts: a message never straddles segments, so it must fit in an
        empty one with room left for the end-of-file marker."""
        return min(self.max_message_size, self.commit_log_segment_size - 8)

    @property
    def used_space_ratio_limit(self) -> float:
        """``disk_max_used_space_ratio`` as a fraction, clamped to [10 %, 95 %] as Apache clamps it."""
        return min(max(self.disk_max_used_space_ratio, 10), 95) / 100.0

    @property
    def consume_queue_file_size(self) -> int:
        return self.consume_queue_entries_per_file * CONSUME_QUEUE_ENTRY_SIZE

    def delete_hours(self) -> frozenset[int]:
        """Hours of the day (local time) at which time-expired files may be removed; ``deleteWhen`` syntax."""
        hours: set[int] = set()
        for part in self.delete_when.split(";"):
            part = part.strip()
            if part.isdigit():
                hours.add(int(part))
        return frozenset(hours)
