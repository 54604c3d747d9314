"""Getting appended bytes onto the disk, holding the event loop up no longer than a fast fsync.

* :class:`GroupCommitService` (SYNC_FLUSH): an append's waiter resolves only once an fsync covers its
  bytes. One fsync runs at a time; every append that arrives while it runs joins the next one, so under
  load one fsync acknowledges a whole group of appends (Apache's GroupCommitService). The fsync runs on a
  worker thread, or on the event loop itself while the disk proves fast (see the class).
* :class:`PeriodicFlusher` (always): flushes the commit log every ``flush_interval_commit_log_ms`` in
  ASYNC_FLUSH mode (Apache's FlushRealTimeService) and, every ``flush_interval_consume_queue_ms``, makes
  the consume queues and the index durable and advances the checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
from collections.abc import Callable
from concurrent.futures import Executor

from broker.store.waiting import settle

log = logging.getLogger("broker.store.flush")

#: Once rounds of fsync on the event loop take longer than this on average, the next ones go to the worker
#: thread (see :class:`GroupCommitService`). Measured with every fsync made slower by a sleep, single sends
#: at 64 in flight: 1 ms slower still ran ~6% faster on the loop than on the thread, 3 ms slower 43% slower.
INLINE_FSYNC_MAX_S = 0.0015
#: Weight of the latest round in that average: one stall of a few ms moves it past the limit at once, a
#: round now and then just over the limit (fsyncs have such a tail) does not.
INLINE_WEIGHT = 0.125
#: Turns of the event loop a round on the loop lets pass before its fsync, so that the appends read from
#: the sockets meanwhile join it. Measured with 64 single sends of 1 KiB and with 8 batches of 32 x 100 B
#: in flight: 2 turns gave batches ~8% more per second than 1 (singles the same); 3 or more made both
#: slower (the loop idles while its peers wait for answers).
GATHER_TURNS = 2
#: While rounds run on the thread, the loop tries one itself this often (the disk may be fast again) ...
INLINE_RETRY_S = 0.5
#: ... unless the last round on the thread took longer than this: a disk that stalls stays off the loop.
#: (A round timed on the thread also counts the wait for the interpreter lock afterwards, up to the
#: switch interval of 5 ms, so this is no measure of the disk alone.)
INLINE_RETRY_UNDER_S = 0.01


class GroupCommitService:
    """Resolves "durable up to offset N" waits, sharing each fsync among all waiters it covers.

    Each wait has its own deadline, but one timer serves them all (armed for the earliest deadline while
    anyone waits): a timer per wait would cost every SYNC_FLUSH send a timer handle and a heap entry.

    Where each round's fsync runs: on the event loop, as Redis fsyncs for ``appendfsync always``, while
    the disk proves fast; on the executor's thread otherwise. On a fast disk the thread costs more than it
    saves: a handoff there and back per round, and while the fsync runs the loop takes in the producers'
    requests in dribs, each starting a round of its own; on the loop, the requests that arrived during the
    fsync are read together and share the next round (single sends at 64 in flight: ~30% more per second).
    Once the rounds on the loop average more than :data:`INLINE_FSYNC_MAX_S`, the next ones go to the
    thread, where they stay for :data:`INLINE_RETRY_S` and until one of them was quick, so a slow disk
    holds the loop up once in a while at most, and a stalling one once.
    """

    def __init__(
        self,
        flush: Callable[[], int],
        flushed: Callable[[], int],
        executor: Executor,
        *,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        """``clock`` times each round's fsync (its default, the process's monotonic clock; tests give a disk's
        own, since under load a descheduled process would make any fsync look slow)."""
        self._flush = flush
        self._flushed = flushed
        self._executor = executor
        self._clock = clock
        # (offset, deadline in loop time, verdict callback), in the order the waits began.
        self._waiters: list[tuple[int, float, Callable[[bool], object]]] = []
        self._timer: asyncio.TimerHandle | None = None
        # The next round: a loop callback about to start it, or the thread's future while it runs there.
        # Rounds are callbacks rather than a task: a burst of sends would otherwise cost a task each.
        self._round: asyncio.Handle | asyncio.Future[int] | None = None
        # What the last round made durable: a round that gets no further means the disk is stuck.
        self._previous = -1
        # Durable up to here for sure (the last round's offset; other flushes may have gone further).
        self._durable = 0
        self._closed = False
        #: Rounds of fsync the service ran (each may sync one or two files), and how many on the loop.
        self.rounds = 0
        self.inline_rounds = 0
        #: Loop time before which rounds run on the thread; how long the thread's last round took; the
        #: average round on the loop since the rounds came back to it (None: no round there yet).
        self._threaded_until = 0.0
        self._thread_round_s = 0.0
        self._inline_s: float | None = None

    async def wait_durable(self, offset: int, timeout: float) -> bool:
        """True once every byte before ``offset`` is fsynced; False after ``timeout`` seconds."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        verdict = self.when_durable(offset, timeout, functools.partial(settle, future))
        return verdict if verdict is not None else await future

    def when_durable(self, offset: int, timeout: float, verdict: Callable[[bool], object]) -> bool | None:
        """The verdict now if it is known (True: durable already, False: closed); else None, and
        ``verdict(durable)`` is called once, from the round that covers ``offset`` or once ``timeout``
        seconds passed. Each waiter costs an entry in a list, no future and no loop callback of its own:
        under SYNC_FLUSH every send waits here."""
        if offset <= self._durable:
            return True
        if self._closed:
            return self._flushed() >= offset
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        self._waiters.append((offset, deadline, verdict))
        if self._timer is None or deadline < self._timer.when():
            self._arm(loop, deadline)
        if self._round is None:
            self._previous = -1
            self._round = loop.call_soon(self._begin_round, loop)
        return None

    def _arm(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(deadline, self._expire)

    def _expire(self) -> None:
        """The earliest deadline passed: answer every wait past its own with False, re-arm for the rest."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        flushed = self._flushed()
        self._answer(True, covered_up_to=flushed)  # made durable by a round that has not reported yet
        expired = sum(1 for _, deadline, _ in self._waiters if deadline <= now)
        if expired:
            log.warning("fsync did not reach offset %d in time for %d waiting append(s)", flushed, expired)
        self._answer(False, expired_by=now)
        if self._waiters:
            self._arm(loop, min(deadline for _, deadline, _ in self._waiters))

    def _answer(self, durable: bool, *, covered_up_to: int = -1, expired_by: float = -math.inf) -> None:
        """Give ``durable`` to the waits for offsets up to ``covered_up_to`` or with deadlines up to
        ``expired_by``; keep the others waiting. A verdict callback that raises is logged; the rest still
        hear theirs."""
        waiting: list[tuple[int, float, Callable[[bool], object]]] = []
        answered: list[Callable[[bool], object]] = []
        for waiter in self._waiters:
            if waiter[0] <= covered_up_to or waiter[1] <= expired_by:
                answered.append(waiter[2])
            else:
                waiting.append(waiter)
        self._waiters = waiting  # before the callbacks, which may start new waits
        for verdict in answered:
            try:
                verdict(durable)
            except Exception:
                log.exception("a group-commit waiter failed on its verdict")

    def _begin_round(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._on_loop(loop.time()):
            self._round = loop.call_soon(self._gather, loop, GATHER_TURNS - 1)
            return
        future = self._round = loop.run_in_executor(self._executor, self._timed_flush)
        future.add_done_callback(functools.partial(self._round_on_thread_done, loop))

    def _gather(self, loop: asyncio.AbstractEventLoop, turns_left: int) -> None:
        """Let ``turns_left`` more loop turns pass, then run the round (see :data:`GATHER_TURNS`)."""
        if turns_left > 0:
            self._round = loop.call_soon(self._gather, loop, turns_left - 1)
        else:
            self._round_on_loop(loop)

    def _round_on_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self.inline_rounds += 1
        started = self._clock()
        try:
            flushed = self._flush()
        except Exception:
            self._round_failed()
            return
        self._timed_on_loop(self._clock() - started, loop.time())
        self._round_done(loop, flushed)

    def _round_on_thread_done(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[int]) -> None:
        if future.cancelled():
            return  # closing: close() answers the waiters
        try:
            flushed = future.result()
        except Exception:
            self._round_failed()
            return
        self._round_done(loop, flushed)

    def _round_failed(self) -> None:
        log.exception("commit-log fsync failed")
        self._round = None
        self._fail_all()

    def _round_done(self, loop: asyncio.AbstractEventLoop, flushed: int) -> None:
        self.rounds += 1
        self._round = None
        if flushed <= self._previous:
            # Nothing new became durable, so another round would only spin: the remaining waiters
            # asked for bytes not written yet and time out unless a later append starts a round.
            log.error("fsync stalled at offset %d with %d appends waiting", flushed, len(self._waiters))
            return
        self._previous = self._durable = flushed
        self._answer(True, covered_up_to=flushed)
        if self._waiters and self._round is None and not self._closed:
            self._round = loop.call_soon(self._begin_round, loop)

    def _on_loop(self, now: float) -> bool:
        """Whether the next round runs on the loop (see the class)."""
        if INLINE_FSYNC_MAX_S <= 0:
            return False
        return now >= self._threaded_until and self._thread_round_s <= INLINE_RETRY_UNDER_S

    def _timed_on_loop(self, took: float, now: float) -> None:
        average = took if self._inline_s is None else self._inline_s + (took - self._inline_s) * INLINE_WEIGHT
        if average > INLINE_FSYNC_MAX_S:
            self._threaded_until = now + INLINE_RETRY_S
            self._thread_round_s = math.inf  # back only after a quick round on the thread
            self._inline_s = None
        else:
            self._inline_s = average

    def _timed_flush(self) -> int:
        """A round on the thread, timed (the time is read on the loop once the round's future is done)."""
        started = self._clock()
        try:
            return self._flush()
        finally:
            self._thread_round_s = self._clock() - started

    def _fail_all(self) -> None:
        self._answer(False, expired_by=math.inf)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def close(self) -> None:
        """Let a round running on the thread finish, then answer anyone still waiting with False."""
        self._closed = True
        current, self._round = self._round, None
        if isinstance(current, asyncio.Future):
            with contextlib.suppress(Exception):
                await asyncio.shield(current)  # its own callback settles the waiters it covers
        elif current is not None:
            current.cancel()
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
