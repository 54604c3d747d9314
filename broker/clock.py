"""Time as the broker sees it, so tests can move it by hand.

Everything in the broker that depends on the passing of time -- store timestamps, delay-level delivery,
long-polling timeouts, transaction check-backs, lock expiry, periodic chores -- asks a :class:`Clock`.
A real broker runs on :class:`SystemClock`; a test hands in a :class:`ManualClock` and calls
:meth:`ManualClock.advance`, which wakes exactly the sleepers whose deadline has come, without the test
ever sleeping itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from typing import Protocol


class Clock(Protocol):
    """Epoch milliseconds and a way to wait for them to pass."""

    def now_ms(self) -> int: ...

    async def sleep_ms(self, ms: float) -> None: ...


class SystemClock:
    """Wall-clock time and asyncio's timers."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    async def sleep_ms(self, ms: float) -> None:
        await asyncio.sleep(max(0.0, ms) / 1000)


class ManualClock:
    """A clock that only moves when told to; sleepers wake when :meth:`advance` passes their deadline."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._sleepers: list[tuple[int, int, asyncio.Future[None]]] = []
        self._sequence = itertools.count()

    def now_ms(self) -> int:
        return self._now

    async def sleep_ms(self, ms: float) -> None:
        if ms <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + int(ms), next(self._sequence), future))
        await future

    @property
    def sleepers(self) -> int:
        """How many sleeps are still waiting (cancelled ones excluded)."""
        return sum(1 for _, _, future in self._sleepers if not future.done())

    def advance(self, ms: int) -> None:
        """Move time forward and wake every sleeper whose deadline is now reached."""
        if ms < 0:
            raise ValueError("a clock only moves forward")
        self._now += ms
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)


async def wait_event(event: asyncio.Event, clock: Clock, timeout_ms: float | None) -> bool:
    """Wait until ``event`` is set or ``timeout_ms`` of ``clock`` time passes; True if the event was set.

    ``None`` waits for the event alone. Works with any clock because the timeout is the clock's own sleep.
    """
    if event.is_set():
        return True
    if timeout_ms is None:
        await event.wait()
        return True
    waiter = asyncio.ensure_future(event.wait())
    sleeper = asyncio.ensure_future(clock.sleep_ms(timeout_ms))
    try:
        await asyncio.wait((waiter, sleeper), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (waiter, sleeper):
            if not task.done():
                task.cancel()
        for task in (waiter, sleeper):
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return event.is_set()
