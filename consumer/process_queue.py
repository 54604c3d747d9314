"""The window of pulled-but-not-yet-consumed messages of one queue (Java's ``ProcessQueue``).

Why it exists: the offset a consumer may commit is not "the last message handled" but "the smallest offset
still being handled". Handlers finish out of order; committing past a message still in a handler would lose
it if the process died. So every pulled message sits here, keyed by queue offset, until its handler is done,
and the committable offset is the first key left (or one past the highest offset seen, when none is left).

The window also measures what flow control needs (count, body bytes, offset span), and for orderly
consumption keeps the batch taken by the handler apart so that a suspended batch goes back to the front.
For concurrent consumption it remembers when each message went to its handler, so that one stuck past the
consume timeout can be found, sent back and taken out of the window (Java's ``cleanExpiredMsg``) -- else a
single hung handler would hold the committed offset back forever.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence

from rocketmq_wire.bodies.running_info import ProcessQueueInfo
from rocketmq_wire.message import MessageExt
from rocketmq_wire.message import const as props

_MIB = 1024 * 1024


def _now_ms() -> float:
    return time.monotonic() * 1000


def _epoch_ms(monotonic_ms: float) -> int:
    """A time kept on the monotonic clock as epoch milliseconds, for reports."""
    return int(time.time() * 1000 - (_now_ms() - monotonic_ms))


class ProcessQueue:
    """Held messages of one queue, in offset order; single event loop, no locking needed beyond
    :attr:`consume_lock`, which orderly consumption holds while a handler runs so that a rebalance does not
    give the queue away mid-batch."""

    def __init__(self) -> None:
        self._messages: dict[int, MessageExt] = {}
        self._consuming: dict[int, MessageExt] = {}
        self._size = 0
        self._max_offset = -1
        #: Concurrent consumption: when each message held went to its handler (monotonic ms).
        self._started: dict[int, float] = {}
        #: Offsets taken out by the consume timeout whose handlers have not finished yet.
        self._expired: set[int] = set()
        self.dropped = False
        self.locked = False
        self.last_lock_ms = 0.0
        self._created_ms = _now_ms()
        #: Times a release had to wait because an orderly handler still held the queue.
        self.try_unlock_times = 0
        self.last_pull_ms = _now_ms()
        self.last_consume_ms = _now_ms()
        #: Orderly consumption: a handler task is taking batches from this queue.
        self.consuming = False
        #: How far the broker's queue is ahead of the last message pulled (for monitoring).
        self.backlog = 0
        self.consume_lock = asyncio.Lock()
        self._room = asyncio.Event()

    # -- measuring -----------------------------------------------------------------------------------------

    @property
    def count(self) -> int:
        """Messages held, those an orderly handler is working on included."""
        return len(self._messages) + len(self._consuming)

    @property
    def size_bytes(self) -> int:
        return self._size

    @property
    def max_span(self) -> int:
        """Offset distance between the first and last message still waiting (0 when fewer than two)."""
        if not self._messages:
            return 0
        return next(reversed(self._messages)) - next(iter(self._messages))

    @property
    def max_offset(self) -> int:
        """The highest offset ever put here (-1 before the first)."""
        return self._max_offset

    def offsets(self) -> list[int]:
        return list(self._messages)

    def has_messages(self) -> bool:
        return bool(self._messages) or bool(self._consuming)

    # -- filling -------------------------------------------------------------------------------------------

    def put(self, messages: Sequence[MessageExt]) -> bool:
        """Add pulled messages; returns whether an orderly handler should be started for this queue (there
        are messages and none is running)."""
        table = self._messages
        in_order = True
        last = next(reversed(table)) if table else -1
        for message in messages:
            offset = message.queue_offset
            if offset in table or offset in self._consuming:
                continue
            if offset < last:
                in_order = False
            table[offset] = message
            last = max(last, offset)
            self._size += len(message.body)
            self._max_offset = max(self._max_offset, offset)
        if not in_order:
            self._messages = dict(sorted(table.items()))
        if messages:
            newest = messages[-1]
            broker_max = newest.properties.get(props.MAX_OFFSET)
            if broker_max is not None and broker_max.isdigit():
                self.backlog = max(0, int(broker_max) - newest.queue_offset)
        dispatch = bool(self._messages) and not self.consuming
        if dispatch:
            self.consuming = True
        return dispatch

    # -- concurrent consumption ----------------------------------------------------------------------------

    def remove(self, messages: Iterable[MessageExt]) -> int:
        """Forget handled messages; returns the offset that may now be committed: the first offset still
        held, else one past the highest seen. -1 when nothing was held (the window was cleared meanwhile, so
        these messages no longer say anything about the queue's progress)."""
        self.last_consume_ms = _now_ms()
        table = self._messages
        if not table:
            return -1
        removed = False
        for message in messages:
            held = table.pop(message.queue_offset, None)
            if held is not None:
                self._size -= len(held.body)
                self._started.pop(message.queue_offset, None)
                removed = True
        if removed:
            self._room.set()
        if table:
            return next(iter(table))
        return self._max_offset + 1

    def mark_started(self, messages: Iterable[MessageExt]) -> None:
        """``messages`` go to a handler now (Java stamps them ``CONSUME_START_TIME``)."""
        now = _now_ms()
        for message in messages:
            if message.queue_offset in self._messages:
                self._started[message.queue_offset] = now

    def expired_head(self, timeout_ms: float) -> MessageExt | None:
        """The first message held, if its handler started more than ``timeout_ms`` ago (as in Java only the
        head is looked at: it is what holds the committed offset back)."""
        if not self._messages:
            return None
        offset = next(iter(self._messages))
        started = self._started.get(offset)
        if started is None or _now_ms() - started <= timeout_ms:
            return None
        return self._messages[offset]

    def expire(self, message: MessageExt) -> int:
        """Take ``message`` out of the window because its handler ran past the timeout (it was sent back);
        its handler's verdict is to be ignored (:meth:`forget_expired`). Returns the committable offset as
        :meth:`remove` does, -1 when the message was no longer held."""
        offset = message.queue_offset
        if offset not in self._messages:
            return -1
        self._expired.add(offset)
        return self.remove([message])

    def forget_expired(self, messages: Iterable[MessageExt]) -> set[int]:
        """Of ``messages`` (a batch whose handler just finished), the offsets taken out by the timeout."""
        found = {m.queue_offset for m in messages if m.queue_offset in self._expired}
        self._expired -= found
        return found

    # -- orderly consumption -------------------------------------------------------------------------------

    def take(self, batch: int) -> list[MessageExt]:
        """The next ``batch`` messages for an orderly handler; an empty list ends the handler's run."""
        self.last_consume_ms = _now_ms()
        taken: list[MessageExt] = []
        table = self._messages
        while table and len(taken) < batch:
            offset = next(iter(table))
            message = table.pop(offset)
            self._consuming[offset] = message
            taken.append(message)
        if not taken:
            self.consuming = False
        return taken

    def commit(self) -> int:
        """The batch an orderly handler took is done: forget it; returns one past its last offset (-1 if
        nothing was taken)."""
        if not self._consuming:
            return -1
        last = max(self._consuming)
        for message in self._consuming.values():
            self._size -= len(message.body)
        self._consuming.clear()
        self._room.set()
        return last + 1

    def consume_again(self, messages: Iterable[MessageExt]) -> None:
        """Put a suspended batch back in front, to be taken again."""
        for message in messages:
            self._consuming.pop(message.queue_offset, None)
            self._messages[message.queue_offset] = message
        self._messages = dict(sorted(self._messages.items()))

    # -- everything ----------------------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget every held message (a seek moved the queue elsewhere)."""
        self._messages.clear()
        self._consuming.clear()
        self._started.clear()
        self._expired.clear()
        self._size = 0
        self._max_offset = -1
        self._room.set()

    def drop(self) -> None:
        """The queue is no longer this consumer's: pulls stop and pending results are discarded."""
        self.dropped = True
        self._room.set()

    async def wait_for_room(self, timeout_s: float) -> None:
        """Return when a message leaves the window (or after ``timeout_s``): flow control waits here rather
        than polling, so it resumes as soon as the handlers catch up."""
        self._room.clear()
        try:
            async with asyncio.timeout(timeout_s):
                await self._room.wait()
        except TimeoutError:
            pass

    # -- locks (orderly, clustering) -----------------------------------------------------------------------

    def mark_locked(self, locked: bool) -> None:
        self.locked = locked
        if locked:
            self.last_lock_ms = _now_ms()

    def lock_expired(self, max_live_ms: float) -> bool:
        return _now_ms() - self.last_lock_ms > max_live_ms

    # -- reporting -----------------------------------------------------------------------------------------

    def info(self, commit_offset: int) -> ProcessQueueInfo:
        """This window as GET_CONSUMER_RUNNING_INFO reports it (Java's ``fillProcessQueueInfo``)."""
        waiting, taken = self._messages, self._consuming
        return ProcessQueueInfo(
            commit_offset=commit_offset,
            cached_msg_min_offset=next(iter(waiting)) if waiting else 0,
            cached_msg_max_offset=next(reversed(waiting)) if waiting else 0,
            cached_msg_count=len(waiting),
            cached_msg_size_in_mib=self._size // _MIB,
            transaction_msg_min_offset=min(taken) if taken else 0,
            transaction_msg_max_offset=max(taken) if taken else 0,
            transaction_msg_count=len(taken),
            locked=self.locked,
            try_unlock_times=self.try_unlock_times,
            # never locked: Java reports when the window was made
            last_lock_timestamp=_epoch_ms(self.last_lock_ms or self._created_ms),
            dropped=self.dropped,
            last_pull_timestamp=_epoch_ms(self.last_pull_ms),
            last_consume_timestamp=_epoch_ms(self.last_consume_ms),
        )
