"""The Broker's durable message store: commit log, consume queues, key index, flushing and retention.

The core is synchronous and guarded by one lock, so the Broker may call it from the event loop or from
worker threads. Appends only copy bytes into the page cache, which is quick enough for the event loop;
anything that waits for a disk (fsync) runs on the store's own worker threads, and the asynchronous
``put_*_async`` methods are the ones to use under SYNC_FLUSH: they resolve once a shared fsync (group
commit) covers the message.

On-disk layout under ``root`` (Apache's, so either broker can open the other's directory)::

    commitlog/<20-digit start offset>                      fixed-size segments of stored messages
    consumequeue/<topic>/<queueId>/<20-digit byte offset>   20-byte entries, N per file
    index/<yyyyMMddHHmmssSSS>                               hash index over topic#key
    checkpoint                                              recovery starting point
    abort                                                   present while the store is open
    lock                                                    flock()ed while the store is open
    config/                                                 consumerOffset.json, topics.json (other classes)
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import fcntl
import functools
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from broker.store.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from broker.store.commit_log import CommitLog
from broker.store.config import BrokerRole, FlushDiskType, StoreConfig
from broker.store.consume_queue import CqEntry, to_java_int
from broker.store.dispatch import Dispatcher, is_consumable
from broker.store.flush import GroupCommitService, PeriodicFlusher
from broker.store.health import Fault, StoreHealth
from broker.store.index_service import IndexService
from broker.store.key_query import query_by_key
from broker.store.pull import PullLimits, pull
from broker.store.queue_table import QueueTable
from broker.store.recovery import RecoveryReport, recover
from broker.store.results import (
    BoundaryType,
    CleanResult,
    GetMessageResult,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
)
from broker.store.retention import DiskUsage, clean_expired, disk_used_ratio
from broker.store.waiting import outcome
from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import const
from rocketmq_wire.message.ids import encode_offset_msg_id
from rocketmq_wire.message.stored import MessageExt, decode_message, encode_stored_message

log = logging.getLogger("broker.store")

#: Apache's TopicValidator pattern; it also keeps topic names safe as directory names.
_VALID_TOPIC = re.compile(r"[%|a-zA-Z0-9_-]+")
#: The properties length field is a Java short.
_MAX_PROPERTIES = 0x7FFF
#: Apache ignores a lock held longer than this (ms) when judging the page cache: a stale timestamp, not load.
_STALE_LOCK_MS = 10_000_000
#: Apache warns about an append that held the commit-log lock longer than this (ms).
_SLOW_LOCK_WARN_MS = 500
#: Settings :meth:`MessageStore.reconfigure` may change while the store runs: read afresh on every use.
_LIVE_SETTINGS = frozenset({"os_page_cache_busy_timeout_ms"})
#: Errors of a flush that never reached an fsync: no descriptor could be had to sync a closed file with.
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})
#: After a failed dispatch, appends and reads try it again at most this often (seconds): each try re-reads
#: the commit log from the first record not dispatched, and a full disk fails them all alike.
_DISPATCH_RETRY_S = 0.1


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def total_physical_memory() -> int:
    """Bytes of RAM (Apache's ``TOTAL_PHYSICAL_MEMORY_SIZE``); a large guess where the OS will not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 1 << 40


class ReplicaWaiter(Protocol):
    """What a SYNC_MASTER store asks its HA service before acknowledging an append."""

    def is_slave_ok(self, master_put_where: int) -> bool:
        """Whether a slave is connected and close enough behind ``master_put_where`` to be waited for."""
        ...

    async def wait_replicated(self, offset: int, timeout_s: float) -> bool:
        """True once a slave acknowledged every byte before ``offset``; False after ``timeout_s``."""
        ...


#: How a producer's "do not wait for the store" reads inside a properties string.
_WAIT_FALSE = f"{const.WAIT}{const.NAME_VALUE_SEPARATOR}false"


def _flush_verdict(result: PutMessageResult, durable: bool) -> PutMessageResult:
    if durable:
        return result
    return dataclasses.replace(result, status=PutMessageStatus.FLUSH_DISK_TIMEOUT)


class StoreLockedError(RuntimeError):
    """Another process (or another store object) has this directory open."""


class _MessageTooLarge(Exception):
    pass


def _encoded_at(record: MessageExt, offset: int, max_size: int) -> bytes:
    """``record``'s bytes placed at commit-log ``offset`` (which they carry); sets its offset and size."""
    record.commit_log_offset = offset
    data = encode_stored_message(record)
    if len(data) > max_size:
        raise _MessageTooLarge(f"a stored message of {len(data)} bytes exceeds {max_size}")
    record.store_size = len(data)
    return data


class _Dispatched:
    """``with store._dispatched:`` holds the store lock with every append's consume-queue and index entries
    written: how every reader of the queues or the index enters (a class, not a generator-based context
    manager: pulls enter it once each)."""

    __slots__ = ("_store",)

    def __init__(self, store: MessageStore) -> None:
        self._store = store

    def __enter__(self) -> None:
        store = self._store
        store._lock.acquire()
        try:
            store._catch_up()
        except BaseException:
            store._lock.release()
            raise

    def __exit__(self, *exc_info: object) -> None:
        self._store._lock.release()


class MessageStore:
    """One broker's message store rooted at a directory.

    ``store_host`` (``"ip:port"``), when given, is stamped on every appended message as the broker's
    address, as an Apache broker stamps its own; otherwise each message keeps the store host it carries.
    ``clock`` returns epoch milliseconds (store timestamps, retention); ``disk_usage`` reports the used
    fraction of the disk holding a path (retention).
    """

    def __init__(
        self,
        root: Path | str,
        config: StoreConfig | None = None,
        *,
        store_host: str | None = None,
        clock: Callable[[], int] = _now_ms,
        disk_usage: DiskUsage = disk_used_ratio,
    ) -> None:
        self.root = Path(root)
        self.config = config or StoreConfig()
        self._store_host = store_host
        self._clock = clock
        self._disk_usage = disk_usage
        self._lock = threading.RLock()
        self._dispatched = _Dispatched(self)
        self._checkpoint_lock = threading.Lock()
        self._commit_log = CommitLog(self.root / "commitlog", self.config.commit_log_segment_size)
        self._queues = QueueTable(
            self.root / "consumequeue",
            self.config.consume_queue_entries_per_file,
            max_open_files=self.config.max_open_consume_queue_files or None,
        )
        self._index: IndexService | None = None
        if self.config.message_index_enable:
            self._index = IndexService(
                self.root / "index", self.config.max_hash_slot_num, self.config.max_index_num, clock
            )
        self._dispatcher = Dispatcher(self._queues, self._index)
        self._lock_fd: int | None = None
        self._open = False
        self._last_store_timestamp = 0
        # Apache's CommitLog.beginTimeInLock: store-clock ms an append took the lock, 0 when none holds it.
        self._begin_time_in_lock = 0
        # When the last append that held the lock past os_page_cache_busy_timeout_ms let go of it (0: never).
        self._slow_append_ended_at = 0
        self._saved_checkpoint = -1
        self._sync_executor: ThreadPoolExecutor | None = None
        self._background_executor: ThreadPoolExecutor | None = None
        self._group_commit: GroupCommitService | None = None
        self._flusher: PeriodicFlusher | None = None
        self.recovery: RecoveryReport | None = None
        # Commit-log offset up to which every record has its consume-queue and index entries (Apache's
        # reputFromOffset). Appends are dispatched a loop turn later (_catch_up); a slave's replicated
        # bytes may end mid-record.
        self._reput_offset = 0
        # Dispatching from _reput_offset must re-read the commit log (a deferred dispatch failed), not
        # before this monotonic time.
        self._redispatch = False
        self._redispatch_at = 0.0
        #: What stops the store from taking appends (a full disk, a failed write or fsync), and why.
        self.health = StoreHealth()
        # The first fsync that failed: every later flush fails with it (see broker.store.health).
        self._sync_error: OSError | None = None
        self._replica_waiter: ReplicaWaiter | None = None
        # Waits for a SYNC_MASTER append's verdict, kept until they report (the loop holds tasks weakly).
        self._verdict_tasks: set[asyncio.Task[PutMessageResult]] = set()
        self._append_listeners: list[Callable[[int], None]] = []
        self._memory_bytes = total_physical_memory()

    # ------------------------------------------------------------------------------------------------------
    # lifecycle

    def open(self) -> None:
        """Take the directory lock, load every file and recover to a consistent state."""
        if self._open:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        self._take_directory_lock()
        try:
            abort = self.root / "abort"
            if abort.exists():
                log.warning("store %s was not shut down cleanly; recovering from the checkpoint", self.root)
            abort.touch()
            with self._lock:
                self._commit_log.load()
                self._queues.load()
                if self._index is not None:
                    self._index.load()
                self.recovery = recover(
                    load_checkpoint(self.root),
                    self._commit_log,
                    self._queues,
                    self._index,
                    self._dispatcher,
                    check_crc=self.config.check_crc_on_recover,
                )
                self._reput_offset = self._commit_log.max_offset
                self._open = True
            self.checkpoint()
        except BaseException:
            self._release_files()
            raise

    def _take_directory_lock(self) -> None:
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreLockedError(f"message store {self.root} is already open") from None
        self._lock_fd = fd

    async def start(self) -> None:
        """Open (recovering off the event loop) if needed, then start the background flushing and, under
        SYNC_FLUSH, group commit on the running loop."""
        if not self._open:
            await asyncio.get_running_loop().run_in_executor(None, self.open)
        if self._flusher is not None:
            return
        self._sync_executor = ThreadPoolExecutor(1, thread_name_prefix="store-fsync")
        self._background_executor = ThreadPoolExecutor(1, thread_name_prefix="store-flush")
        sync = self.config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        if sync:
            self._group_commit = GroupCommitService(
                self.flush_commit_log, lambda: self._commit_log.flushed_offset, self._sync_executor
            )
        self.check_disk()
        self._flusher = PeriodicFlusher(
            flush_commit_log=None if sync else self.flush_commit_log,
            commit_log_interval_s=self.config.flush_interval_commit_log_ms / 1000,
            checkpoint=self.checkpoint,
            checkpoint_interval_s=self.config.flush_interval_consume_queue_ms / 1000,
            executor=self._background_executor,
        )
        self._flusher.start()

    async def stop(self) -> None:
        """Stop background work and close the store, making everything durable first."""
        if self._flusher is not None:
            await self._flusher.stop()
            self._flusher = None
        if self._group_commit is not None:
            await self._group_commit.close()
            self._group_commit = None
        if self._open:
            await asyncio.get_running_loop().run_in_executor(self._background_executor, self.close)
        for executor in (self._sync_executor, self._background_executor):
            if executor is not None:
                executor.shutdown(wait=True)
        self._sync_executor = self._background_executor = None

    def close(self) -> None:
        """Flush and checkpoint everything, then release the files. Synchronous; see :meth:`stop`."""
        if not self._open:
            return
        try:
            self.checkpoint()
        except OSError:
            # The files are released all the same; the abort marker stays, so the next open recovers
            # from the last checkpoint that was true.
            log.exception("store %s could not be made durable at close", self.root)
        with self._lock:
            self._open = False
            self._release_files()
            if self._sync_error is None:
                (self.root / "abort").unlink(missing_ok=True)
        log.info("store %s closed", self.root)

    def _release_files(self) -> None:
        self._commit_log.close()
        self._queues.close()
        if self._index is not None:
            self._index.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> MessageStore:
        self.open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def is_open(self) -> bool:
        return self._open

    def reconfigure(self, **changes: Any) -> None:
        """Change settings that take effect while the store runs (``os_page_cache_busy_timeout_ms``); the
        others shape files and services built at open, so changing them here would be a lie."""
        fixed = sorted(set(changes) - _LIVE_SETTINGS)
        if fixed:
            raise ValueError(f"store settings {', '.join(fixed)} cannot change while the store runs")
        self.config = dataclasses.replace(self.config, **changes)

    # ------------------------------------------------------------------------------------------------------
    # page-cache pressure (Apache's fast failure reads these to refuse sends before they are stored)

    @property
    def begin_time_in_lock(self) -> int:
        """Store-clock ms at which the append in progress took the commit-log lock; 0 when none is."""
        return self._begin_time_in_lock

    @property
    def slow_append_ended_at(self) -> int:
        """Store-clock ms at which the last append slower than ``os_page_cache_busy_timeout_ms`` ended
        (0: none yet)."""
        return self._slow_append_ended_at

    def lock_time_ms(self) -> int:
        """How long the append in progress has held the lock, 0 if none (``pageCacheLockTimeMills``)."""
        begin = self._begin_time_in_lock
        return max(0, self._clock() - begin) if begin > 0 else 0

    def is_os_page_cache_busy(self) -> bool:
        """Apache's ``isOSPageCacheBusy``: an append has held the commit-log lock for longer than
        ``os_page_cache_busy_timeout_ms`` and is still holding it.

        Writing into the page cache only stalls when the kernel is short of clean pages or the disk lags,
        so a long-held lock is how the store notices I/O pressure. With no append in progress the begin
        time is 0, the difference is the whole epoch, and the upper bound (as in Apache) says "not busy".
        """
        diff = self._clock() - self._begin_time_in_lock
        return 0 < diff < _STALE_LOCK_MS and diff > self.config.os_page_cache_busy_timeout_ms

    def was_os_page_cache_busy_within(self, window_ms: float) -> bool:
        """True if the page cache is busy now or was busy at some point of the last ``window_ms``.

        Appends run on the caller's thread; on an event loop a slow one blocks everything, so no check can
        happen *during* it. A request that had been waiting since before such an append ended was waiting
        through a busy period, which is when Apache's cleaner answers queued sends: this tells the broker
        so. The store clock counts whole milliseconds, so a request must have waited more than a
        millisecond longer than the time since the slow append ended to count (a request that arrived
        just after it never sees a spurious refusal).
        """
        if self.is_os_page_cache_busy():
            return True
        ended = self._slow_append_ended_at
        return ended > 0 and window_ms > self._clock() - ended + 1

    def _lock_released(self, began: int) -> None:
        ended = self._clock()
        self._begin_time_in_lock = 0
        held = ended - began
        if held > self.config.os_page_cache_busy_timeout_ms:
            self._slow_append_ended_at = ended
        if held > _SLOW_LOCK_WARN_MS:
            log.warning("a commit-log append held the lock for %d ms", held)

    # ------------------------------------------------------------------------------------------------------
    # durability

    def flush_commit_log(self) -> int:
        """fsync the commit log; returns the offset it is durable up to. Blocking.

        Once an fsync has failed, every later call fails with the same error: the pages it lost are gone
        from the page cache's dirty list, so a later fsync would succeed over them (see
        :mod:`broker.store.health`)."""
        return self._synced(self._commit_log.flush, "commit log")

    def _synced(self, flush: Callable[[], int], what: str) -> int:
        failed = self._sync_error
        if failed is not None:
            raise OSError(failed.errno, f"an earlier fsync failed ({failed.strerror}); reopen the store")
        try:
            return flush()
        except OSError as exc:
            if exc.errno in _OUT_OF_DESCRIPTORS:
                raise  # no file could be opened to sync: nothing was lost, the next period tries again
            if self._sync_error is None:
                self._sync_error = exc
            self.health.raise_fault(Fault.FSYNC_FAILED, f"{what}: {exc}")
            raise

    def _flush_derived(self, queues: Sequence[Any]) -> int:
        for queue in queues:
            queue.flush()
        if self._index is not None:
            self._index.flush()
        return 0

    def checkpoint(self) -> Checkpoint:
        """Make the commit log, consume queues and index durable, then record that in the checkpoint.

        Blocking (several fsyncs); the periodic flusher runs it on a worker thread. After any failed
        fsync it raises instead: the checkpoint must never vouch for pages that may have been lost, so
        the next open recovers from the last one that was true.
        """
        with self._dispatched:
            # A slave may hold the first part of a record it cannot dispatch yet; recovery must redo it.
            dispatched = min(self._commit_log.max_offset, self._reput_offset)
            stamp = self._last_store_timestamp
            queues = list(self._queues)
        self.flush_commit_log()
        self._synced(functools.partial(self._flush_derived, queues), "consume queues and index")
        checkpoint = Checkpoint(dispatched, stamp, stamp, stamp)
        with self._checkpoint_lock:
            if dispatched != self._saved_checkpoint:
                save_checkpoint(self.root, checkpoint)
                self._saved_checkpoint = dispatched
        return checkpoint

    @property
    def sync_count(self) -> int:
        """fsyncs issued on commit-log files so far."""
        return self._commit_log.sync_count

    # ------------------------------------------------------------------------------------------------------
    # appending

    def put_message(self, message: MessageExt) -> PutMessageResult:
        """Append one message. Under SYNC_FLUSH this blocks on an fsync; async code uses
        :meth:`put_message_async`."""
        return self.put_messages([message])

    def put_messages(self, messages: Sequence[MessageExt]) -> PutMessageResult:
        """Append a batch contiguously (one file, consecutive queue offsets per queue).

        A blocking caller may wait for the disk but never for a slave: only :meth:`put_messages_async`
        waits as a SYNC_MASTER must.
        """
        result, _ = self._append(messages)
        if result.ok and self._must_wait(messages):
            try:
                self.flush_commit_log()
            except OSError:
                return dataclasses.replace(result, status=PutMessageStatus.FLUSH_DISK_TIMEOUT)
        return result

    async def put_message_async(self, message: MessageExt) -> PutMessageResult:
        return await self.put_messages_async([message])

    async def put_messages_async(self, messages: Sequence[MessageExt]) -> PutMessageResult:
        """Append, then wait for what the configuration promises before answering (see
        :meth:`put_messages_then`)."""
        return await outcome(functools.partial(self.put_messages_then, messages))

    def put_messages_then(
        self, messages: Sequence[MessageExt], done: Callable[[PutMessageResult], object]
    ) -> PutMessageResult | None:
        """Append, then the verdict of what the configuration promises: returned at once when there is
        nothing to wait for; otherwise ``None``, and ``done(result)`` is called once, when the wait is over
        (never from inside this call).

        Under SYNC_FLUSH the wait is for the group commit covering the batch: one that misses
        ``sync_flush_timeout_ms`` answers FLUSH_DISK_TIMEOUT. As a SYNC_MASTER it is a slave holding the
        batch (Apache's ``submitReplicaRequest``): SLAVE_NOT_AVAILABLE at once when no slave is connected
        or the slave is too far behind to wait for, FLUSH_SLAVE_TIMEOUT when none acknowledged within
        ``slave_timeout_ms``. Both waits run together and the replica's verdict wins, as Apache combines
        them. Whatever the verdict, the messages are stored, as in Apache.

        The SYNC_FLUSH wait alone (the common case) costs an entry in the group commit's list and no
        coroutine: ``done`` is called from the round that makes the batch durable. Must be called on the
        event loop.
        """
        result, end = self._append(messages)
        config = self.config
        sync_flush = config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        sync_master = config.broker_role is BrokerRole.SYNC_MASTER
        if not result.ok or not (sync_flush or sync_master) or not self._waits_for_store(messages):
            return result
        group_commit = self._group_commit
        if sync_master or group_commit is None:
            self._wait_in_task(self._verdict(result, end, sync_flush, sync_master), result, done)
            return None
        durable = group_commit.when_durable(
            end, config.sync_flush_timeout_ms / 1000, lambda durable: done(_flush_verdict(result, durable))
        )
        return None if durable is None else _flush_verdict(result, durable)

    def _wait_in_task(
        self,
        verdict: Coroutine[Any, Any, PutMessageResult],
        result: PutMessageResult,
        done: Callable[[PutMessageResult], object],
    ) -> None:
        task = asyncio.get_running_loop().create_task(verdict)
        self._verdict_tasks.add(task)

        def report(finished: asyncio.Task[PutMessageResult]) -> None:
            self._verdict_tasks.discard(finished)
            if finished.cancelled() or finished.exception() is not None:
                if not finished.cancelled():
                    log.error("waiting for an append's verdict failed", exc_info=finished.exception())
                done(dataclasses.replace(result, status=PutMessageStatus.UNKNOWN_ERROR))
            else:
                done(finished.result())

        task.add_done_callback(report)

    async def _verdict(
        self, result: PutMessageResult, end: int, sync_flush: bool, sync_master: bool
    ) -> PutMessageResult:
        flush = self._await_flush(end) if sync_flush else None
        replica = self._await_replica(end) if sync_master else None
        if flush is not None and replica is not None:
            flushed, replicated = await asyncio.gather(flush, replica)
        else:
            flushed = await flush if flush is not None else PutMessageStatus.PUT_OK
            replicated = await replica if replica is not None else PutMessageStatus.PUT_OK
        status = replicated if replicated is not PutMessageStatus.PUT_OK else flushed
        if status is PutMessageStatus.PUT_OK:
            return result
        return dataclasses.replace(result, status=status)

    async def _await_flush(self, end: int) -> PutMessageStatus:
        group_commit = self._group_commit
        if group_commit is None:
            loop = asyncio.get_running_loop()
            try:
                await loop.run_in_executor(self._sync_executor, self.flush_commit_log)
            except OSError:
                return PutMessageStatus.FLUSH_DISK_TIMEOUT
            return PutMessageStatus.PUT_OK
        timeout = self.config.sync_flush_timeout_ms / 1000
        if await group_commit.wait_durable(end, timeout):
            return PutMessageStatus.PUT_OK
        return PutMessageStatus.FLUSH_DISK_TIMEOUT

    async def _await_replica(self, end: int) -> PutMessageStatus:
        waiter = self._replica_waiter
        if waiter is None or not waiter.is_slave_ok(end):
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        if await waiter.wait_replicated(end, self.config.slave_timeout_ms / 1000):
            return PutMessageStatus.PUT_OK
        return PutMessageStatus.FLUSH_SLAVE_TIMEOUT

    def _must_wait(self, messages: Sequence[MessageExt]) -> bool:
        return self.config.flush_disk_type is FlushDiskType.SYNC_FLUSH and self._waits_for_store(messages)

    @staticmethod
    def _waits_for_store(messages: Sequence[MessageExt]) -> bool:
        """Whether any message asks for the store's promise (the WAIT property, true by default).

        A message whose properties do not even contain ``WAIT<sep>false`` waits: that settles nearly every
        message without decoding its properties (SYNC_FLUSH asks for every message of every batch)."""
        for message in messages:
            if _WAIT_FALSE not in message.properties_string:
                return True
            if message.properties.get(const.WAIT, "true") != "false":
                return True
        return False

    def _append(self, messages: Sequence[MessageExt]) -> tuple[PutMessageResult, int]:
        if not messages:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
        for message in messages:
            if not _VALID_TOPIC.fullmatch(message.topic) or message.queue_id < 0:
                log.warning("refusing a message for topic %r queue %d", message.topic, message.queue_id)
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
        max_size = self.config.effective_max_message_size
        if self.config.broker_role is BrokerRole.SLAVE:
            log.debug("refusing a put: this store is a slave, its master writes it")
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 0
        with self._lock:
            if not self._open:
                return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 0
            if self._redispatch:
                self._catch_up()
            health = self.health
            if not health.writable:
                return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, reason=health.reason), 0
            now = self._clock()
            self._begin_time_in_lock = now
            stored = self._records_at(messages, now)

            def build(offset: int) -> bytes:
                if len(stored) == 1:  # a single send: its record is the whole append
                    return _encoded_at(stored[0], offset, max_size)
                parts: list[bytes] = []
                for record in stored:
                    data = _encoded_at(record, offset, max_size)
                    parts.append(data)
                    offset += len(data)
                return b"".join(parts)

            try:
                offset, data = self._commit_log.append(build)
            except CodecError as exc:
                log.warning("refusing a message that cannot be stored: %s", exc)
                too_long = any(len(m.properties_string.encode()) > _MAX_PROPERTIES for m in messages)
                status = (
                    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
                    if too_long
                    else PutMessageStatus.MESSAGE_ILLEGAL
                )
                return PutMessageResult(status), 0
            except (_MessageTooLarge, ValueError) as exc:
                log.warning("refusing a message: %s", exc)
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
            except OSError as exc:
                log.exception("commit-log write failed")
                if exc.errno == errno.ENOSPC:
                    self.health.raise_fault(Fault.DISK_FULL, f"commit log: {exc}")
                return PutMessageResult(PutMessageStatus.CREATE_MAPPED_FILE_FAILED), 0
            finally:
                self._lock_released(now)
            if self._dispatcher.defer(stored):
                self._arrange_dispatch()
            self._last_store_timestamp = now
        if len(stored) == 1:
            first = stored[0]
            msg_ids = encode_offset_msg_id(first.store_host, offset)
            queue_offsets: tuple[int, ...] = (first.queue_offset,)
        else:
            msg_ids = ",".join([encode_offset_msg_id(r.store_host, r.commit_log_offset) for r in stored])
            queue_offsets = tuple([r.queue_offset for r in stored])
        result = PutMessageResult(
            PutMessageStatus.PUT_OK,
            wrote_offset=offset,
            wrote_bytes=len(data),
            msg_id=msg_ids,
            store_timestamp=now,
            queue_offset=queue_offsets[0],
            message_count=len(stored),
            queue_offsets=queue_offsets,
        )
        self._appended(offset + len(data))
        return result, offset + len(data)

    def _records_at(self, messages: Sequence[MessageExt], now: int) -> list[MessageExt]:
        """The records an append writes: each message with its queue offset, store time and host (the
        commit-log offset and size come once the bytes are placed)."""
        store_host = self._store_host
        dispatcher = self._dispatcher
        if len(messages) == 1:
            message = messages[0]
            queue_offset = 0
            if is_consumable(message.sys_flag):
                queue_offset = dispatcher.next_queue_offset(message.topic, message.queue_id)
            return [message.stored_at(queue_offset, 0, now, store_host or message.store_host)]
        records: list[MessageExt] = []
        next_offsets: dict[tuple[str, int], int] = {}
        for message in messages:
            queue_offset = 0
            if is_consumable(message.sys_flag):
                key = (message.topic, message.queue_id)
                queue_offset = next_offsets.get(key, -1)
                if queue_offset < 0:
                    queue_offset = dispatcher.next_queue_offset(*key)
                next_offsets[key] = queue_offset + 1
            records.append(message.stored_at(queue_offset, 0, now, store_host or message.store_host))
        return records

    def _arrange_dispatch(self) -> None:
        """Have the records waiting for dispatch dispatched: on the next turn of the appending thread's
        event loop (with every append of this turn), or at once on a thread that runs none."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._catch_up()
            return
        loop.call_soon(self._dispatch_soon)

    def _dispatch_soon(self) -> None:
        with self._lock:
            if self._open:
                self._catch_up()

    def _catch_up(self) -> None:
        """Give every appended record its consume-queue and index entries; the lock is held. Readers of
        the queues and the index enter through :class:`_Dispatched`, so they never see an append without
        its entries.

        Should writing them fail (a disk error), the records are dispatched again from the commit log on
        the next call, from the last offset known dispatched: entries already written are skipped there.

        The store takes no appends while a dispatch is owed (:class:`~broker.store.health.Fault`
        ``DISPATCH_FAILED``): queue offsets stay handed out meanwhile, reads go on over what the queues
        hold, and the retries (at most every :data:`_DISPATCH_RETRY_S`, from appends, reads and the
        periodic checkpoint) lift the refusal once one writes everything.
        """
        dispatcher = self._dispatcher
        if self._redispatch:
            now = time.monotonic()
            if now < self._redispatch_at:
                return
            dispatcher.discard_pending()
            try:
                self._reput()
            except Exception as exc:
                self._dispatch_failed(exc, now, "dispatching appended messages from the commit log failed")
                return
            self._redispatch = False
            dispatcher.settled()
            self.health.clear(Fault.DISPATCH_FAILED)
            return
        if not dispatcher.pending:
            return
        try:
            dispatcher.dispatch_pending()
        except Exception as exc:
            self._dispatch_failed(
                exc, 0.0, "dispatching appended messages failed; retrying from the commit log"
            )
            return
        self._reput_offset = self._commit_log.max_offset

    def _dispatch_failed(self, exc: Exception, now: float, what: str) -> None:
        if not self.health.has(Fault.DISPATCH_FAILED):
            log.error("%s", what, exc_info=exc)
        self._redispatch = True
        self._redispatch_at = now + _DISPATCH_RETRY_S
        self.health.raise_fault(Fault.DISPATCH_FAILED, f"{type(exc).__name__}: {exc}")

    def _appended(self, end: int) -> None:
        for listener in list(self._append_listeners):
            try:
                listener(end)
            except Exception:
                log.exception("append listener failed")

    # ------------------------------------------------------------------------------------------------------
    # replication (Apache's HA): what a master reads for its slaves, what a slave writes

    def set_replica_waiter(self, waiter: ReplicaWaiter | None) -> None:
        """The HA service a SYNC_MASTER store waits on before acknowledging appends."""
        self._replica_waiter = waiter

    def add_append_listener(self, listener: Callable[[int], None]) -> None:
        """Call ``listener(end_offset)`` after every append, on the appending thread (HA wake-ups)."""
        self._append_listeners.append(listener)

    def read_commit_log(self, offset: int, max_bytes: int) -> bytes | None:
        """Commit-log bytes from ``offset`` to the end of what its file holds, at most ``max_bytes``;
        None when there are none (yet). What a master streams to a slave."""
        with self._lock:
            if not self._open:
                return None
            return self._commit_log.read_chunk(offset, max_bytes)

    def append_replicated(self, offset: int, data: bytes) -> list[MessageExt]:
        """Store bytes a master sent, unchanged, at ``offset`` (Apache's ``appendToCommitLog``), then give
        every record they complete its consume-queue and index entries, as recovery would.

        The bytes may start or end mid-record; what a record lacks arrives with the next call. Returns the
        records dispatched. Raises ValueError when the bytes do not continue this commit log (the caller
        resynchronises) and RuntimeError when the store is closed.
        """
        with self._dispatched:
            if not self._open:
                raise RuntimeError("the message store is closed")
            was_empty = self._commit_log.segments.empty
            try:
                self._commit_log.append_raw(offset, data)
            except OSError:
                log.exception("writing replicated bytes at %d failed", offset)
                raise
            if was_empty:
                self._reput_offset = offset
            return self._reput()

    def _reput(self) -> list[MessageExt]:
        records, resume = self._commit_log.complete_records(self._reput_offset)
        dispatched: list[MessageExt] = []
        for offset, data in records:
            try:
                message, _ = decode_message(data, 0, decompress_body=False)
            except CodecError as exc:
                log.error("cannot dispatch the replicated record at %d: %s", offset, exc)
                resume = offset
                break
            self._dispatcher.dispatch(message, offset, len(data))
            self._last_store_timestamp = max(self._last_store_timestamp, message.store_timestamp)
            dispatched.append(message)
        self._reput_offset = resume
        return dispatched

    @property
    def dispatch_behind_bytes(self) -> int:
        """Commit-log bytes not yet dispatched to consume queues (a slave's partly received record)."""
        return max(0, self._commit_log.max_offset - self._reput_offset)

    # ------------------------------------------------------------------------------------------------------
    # reading

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = 32,
        tag_filter: Collection[int] | None = None,
        *,
        max_bytes: int | None = None,
        message_filter: Callable[[bytes], bool] | None = None,
    ) -> GetMessageResult:
        """Messages of one queue from ``offset`` on, as Apache's ``getMessage`` answers a pull.

        ``tag_filter`` holds the tag hash codes to accept (Java ``String.hashCode`` values, signed or
        unsigned; None accepts everything); ``message_filter`` is asked about each stored record that
        passed the tag filter (SQL92 or class filters). ``max_count`` is capped by
        ``max_transfer_count_on_message`` and the bytes by ``max_transfer_bytes_on_message``.
        """
        codes = frozenset(to_java_int(code) for code in tag_filter) if tag_filter is not None else None
        limits = PullLimits(
            max_count=min(max_count, self.config.max_transfer_count_on_message),
            max_bytes=self.config.max_transfer_bytes_on_message if max_bytes is None else max_bytes,
            max_filter_bytes=self.config.max_filter_message_size,
        )
        correct = self.config.broker_role is not BrokerRole.SLAVE or self.config.offset_check_in_slave
        with self._dispatched:
            queue = self._queues.get(topic, queue_id)
            result = pull(
                queue, self._commit_log, offset, limits, codes, message_filter, correct_offsets=correct
            )
            behind = self._commit_log.max_offset - result.max_physical_offset_pulled
        if result.max_physical_offset_pulled >= 0:
            in_memory = self._memory_bytes * self.config.access_message_in_memory_max_ratio // 100
            result.suggest_pulling_from_slave = behind > in_memory
        return result

    def get_min_offset(self, topic: str, queue_id: int) -> int:
        with self._dispatched:
            queue = self._queues.get(topic, queue_id)
            return queue.min_offset if queue is not None else 0

    def get_max_offset(self, topic: str, queue_id: int) -> int:
        with self._dispatched:
            queue = self._queues.get(topic, queue_id)
            return queue.max_offset if queue is not None else 0

    def get_commit_log_offset(self, topic: str, queue_id: int, queue_offset: int) -> int | None:
        """Where the message at a queue offset lives in the commit log."""
        with self._dispatched:
            queue = self._queues.get(topic, queue_id)
            entry = queue.get(queue_offset) if queue is not None else None
            return entry.commit_log_offset if entry is not None else None

    def get_offset_by_timestamp(
        self, topic: str, queue_id: int, timestamp: int, boundary: BoundaryType = BoundaryType.LOWER
    ) -> int:
        """The queue offset of the first message stored at or after ``timestamp`` (LOWER; the queue's max
        offset if none was) or of the last one stored at or before it (UPPER; the min offset if none)."""
        with self._dispatched:
            queue = self._queues.get(topic, queue_id)
            if queue is None or queue.max_offset == queue.min_offset:
                return queue.max_offset if queue is not None else 0
            if boundary is BoundaryType.LOWER:
                return queue.search(lambda entry: self._store_time_of(entry) >= timestamp)
            later = queue.search(lambda entry: self._store_time_of(entry) > timestamp)
            return max(later - 1, queue.min_offset)

    def get_store_time(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """Store timestamp of the message at a queue offset, -1 if there is none."""
        with self._dispatched:
            queue = self._queues.get(topic, queue_id)
            entry = queue.get(queue_offset) if queue is not None else None
            return self._store_time_of(entry) if entry is not None else -1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        """Store timestamp of the oldest message still readable in a queue, -1 if there is none."""
        with self._dispatched:
            queue = self._queues.get(topic, queue_id)
            if queue is None:
                return -1
            return self.get_store_time(topic, queue_id, queue.min_offset)

    def earliest_store_time(self) -> int:
        """Store timestamp of the oldest message in the commit log, -1 if it is empty."""
        with self._lock:
            record = self._first_record()
            return record.store_timestamp if record is not None else -1

    def _first_record(self) -> MessageExt | None:
        offset = self._commit_log.min_offset
        while offset < self._commit_log.max_offset:
            data = self._commit_log.read_record(offset)
            if data is not None:
                return decode_message(data, 0, decompress_body=False)[0]
            offset = self._commit_log.roll_next_file(offset)
        return None

    def _store_time_of(self, entry: CqEntry) -> int:
        data = self._commit_log.read(entry.commit_log_offset, entry.size)
        if data is None:
            return -1
        try:
            return decode_message(data, 0, decompress_body=False)[0].store_timestamp
        except CodecError:
            return -1

    def lookup_message_by_physical_offset(self, offset: int) -> bytes | None:
        """The stored bytes of the message starting at a commit-log offset (VIEW_MESSAGE_BY_ID), if any."""
        with self._lock:
            data = self._commit_log.read_record(offset)
        if data is None:
            return None
        try:
            message, _ = decode_message(data, 0, decompress_body=False)
        except CodecError:
            return None
        return data if message.commit_log_offset == offset else None

    def look_message_by_offset(self, offset: int) -> MessageExt | None:
        """The decoded message at a commit-log offset."""
        data = self.lookup_message_by_physical_offset(offset)
        return decode_message(data, 0)[0] if data is not None else None

    def query_messages(
        self,
        topic: str,
        key: str,
        max_count: int,
        begin_timestamp: int = 0,
        end_timestamp: int = 2**63 - 1,
        *,
        unique_key: bool = False,
    ) -> QueryMessageResult:
        """Messages of ``topic`` whose KEYS (or, with ``unique_key``, whose UNIQ_KEY) include ``key``,
        stored within [begin, end]: the newest ``max_count`` (at most 64, as Apache caps it), oldest
        first."""
        index = self._index
        if index is None:
            return QueryMessageResult([], 0, 0)
        with self._dispatched:
            return query_by_key(
                index,
                self._commit_log,
                topic,
                key,
                max_count,
                begin_timestamp,
                end_timestamp,
                unique_key=unique_key,
            )

    # ------------------------------------------------------------------------------------------------------
    # whole-store views and maintenance

    @property
    def min_physical_offset(self) -> int:
        return self._commit_log.min_offset

    @property
    def max_physical_offset(self) -> int:
        return self._commit_log.max_offset

    @property
    def flushed_physical_offset(self) -> int:
        """Commit-log offset below which every byte has been fsynced."""
        return self._commit_log.flushed_offset

    def topics(self) -> dict[str, list[int]]:
        """Every topic with a consume queue, with its queue ids."""
        with self._dispatched:
            return self._queues.topics()

    def delete_topic(self, topic: str) -> int:
        """Drop a topic's consume queues (its commit-log records age out with retention)."""
        with self._dispatched:
            self._dispatcher.forget_topic(topic)
            return self._queues.remove_topic(topic)

    def clean_expired(self, now_ms: int | None = None) -> CleanResult:
        """One retention pass; the Broker calls this periodically (Apache: every 10 s).

        Deleting big files can take a while, so an asyncio caller should run it in an executor; reads and
        appends on other threads simply wait for the store lock.
        """
        now = self._clock() if now_ms is None else now_ms
        self.check_disk()
        with self._dispatched:
            if not self._open:
                return CleanResult()
            return clean_expired(
                now, self.config, self._commit_log, self._queues, self._index, self._disk_usage
            )

    def check_disk(self) -> float:
        """Refuse appends while the store's disk is fuller than ``disk_space_warning_level_ratio``, and
        take them again once it is not (Apache's check in its cleaning service, every
        ``cleanResourceInterval``); returns the used fraction (negative when it cannot be read, which
        changes nothing). Reads go on either way, and retention frees space meanwhile."""
        used = self._disk_usage(self.root)
        limit = self.config.disk_space_warning_level_ratio
        if used > limit:
            self.health.raise_fault(
                Fault.DISK_FULL,
                f"{used:.1%} of the disk is used, above diskSpaceWarningLevelRatio {limit:.0%}",
            )
        elif used >= 0:
            self.health.clear(Fault.DISK_FULL)
        return used
