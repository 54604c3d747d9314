"""Getting appended bytes onto the disk without stalling the event loop.

* :class:`GroupCommitService` (SYNC_FLUSH): an append's waiter resolves only once an fsync covers its
  bytes. One fsync runs at a time, on a worker thread; every append that arrives while it runs joins the
  next one, so under load one fsync acknowledges a whole group of appends (Apache's GroupCommitService).
* :class:`PeriodicFlusher` (always): flushes the commit log every ``flush_interval_commit_log_ms`` in
  ASYNC_FLUSH mode (Apache's FlushRealTimeService) and, every ``flush_interval_consume_queue_ms``, makes
  the consume queues and the index durable and advances the checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import Executor

from broker.store.waiting import wait_settled

log = logging.getLogger("broker.store.flush")


class GroupCommitService:
    """Resolves "durable up to offset N" waits, sharing each fsync among all waiters it covers."""

    def __init__(self, flush: Callable[[], int], flushed: Callable[[], int], executor: Executor) -> None:
        self._flush = flush
        self._flushed = flushed
        self._executor = executor
        self._waiters: list[tuple[int, asyncio.Future[bool]]] = []
        self._worker: asyncio.Task[None] | None = None
        self._closed = False
        #: Rounds of fsync the service ran (each may sync one or two files).
        self.rounds = 0

    async def wait_durable(self, offset: int, timeout: float) -> bool:
        """True once every byte before ``offset`` is fsynced; False after ``timeout`` seconds."""
        if self._flushed() >= offset:
            return True
        if self._closed:
            return False
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.append((offset, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._run(), name="store-group-commit")
        if await wait_settled(future, timeout):
            return True
        if self._flushed() < offset:
            log.warning("fsync did not reach offset %d within %.1f s", offset, timeout)
        self._waiters = [(o, f) for o, f in self._waiters if f is not future]
        return self._flushed() >= offset

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        previous = -1
        while self._waiters:
            try:
                flushed = await loop.run_in_executor(self._executor, self._flush)
            except Exception:
                log.exception("commit-log fsync failed")
                self._fail_all()
                return
            self.rounds += 1
            if flushed <= previous:
                # Nothing new became durable, so another round would only spin: the remaining waiters
                # asked for bytes not written yet and time out unless a later append restarts the worker.
                log.error("fsync stalled at offset %d with %d appends waiting", flushed, len(self._waiters))
                return
            previous = flushed
            still_waiting: list[tuple[int, asyncio.Future[bool]]] = []
            for offset, future in self._waiters:
                if offset <= flushed:
                    if not future.done():
                        future.set_result(True)
                else:
                    still_waiting.append((offset, future))
            self._waiters = still_waiting

    def _fail_all(self) -> None:
        waiters, self._waiters = self._waiters, []
        for _, future in waiters:
            if not future.done():
                future.set_result(False)

    async def close(self) -> None:
        """Let the current round finish, then answer anyone still waiting with False."""
        self._closed = True
        worker = self._worker
        if worker is not None and not worker.done():
            with contextlib.suppress(Exception):
                await worker
        self._fail_all()


class PeriodicFlusher:
    """Runs the store's timed flushes on a worker thread until stopped."""

    def __init__(
        self,
        *,
        flush_commit_log: Callable[[], object] | None,
        commit_log_interval_s: float,
        checkpoint: Callable[[], object],
        checkpoint_interval_s: float,
        executor: Executor,
    ) -> None:
        self._flush_commit_log = flush_commit_log
        self._commit_log_interval = commit_log_interval_s
        self._checkpoint = checkpoint
        self._checkpoint_interval = checkpoint_interval_s
        self._executor = executor
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="store-periodic-flush")

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_commit_log = loop.time() + self._commit_log_interval
        next_checkpoint = loop.time() + self._checkpoint_interval
        while not self._stop.is_set():
            due = next_checkpoint
            if self._flush_commit_log is not None:
                due = min(due, next_commit_log)
            # Waiting on the stop event (not a bare sleep) lets stop() end the loop at once.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), max(0.0, due - loop.time()))
            if self._stop.is_set():
                break
            now = loop.time()
            try:
                if self._flush_commit_log is not None and now >= next_commit_log:
                    await loop.run_in_executor(self._executor, self._flush_commit_log)
                    next_commit_log = now + self._commit_log_interval
                if now >= next_checkpoint:
                    await loop.run_in_executor(self._executor, self._checkpoint)
                    next_checkpoint = now + self._checkpoint_interval
            except Exception:
                log.exception("periodic store flush failed; retrying next period")
                next_commit_log = now + self._commit_log_interval
                next_checkpoint = now + self._checkpoint_interval

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
            self._task = None
