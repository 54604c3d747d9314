"""How many requests a task keeps unanswered: a window that follows the broker's load.

A broker under load answers SYSTEM_BUSY instead of queueing (Apache's ``waitTimeMillsInSendQueue``): the
fixed ``max.in.flight`` that suits an idle broker then only keeps the broker's queue over its limit. The
window therefore behaves like TCP's congestion window: it halves on a busy answer (at most once per
``cooldown_s``, since one overload makes a burst of busy answers that are all the same signal) and grows by
one request after each window's worth of acknowledgements, back up to ``max.in.flight``.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

#: Shortest time between two halvings.
DEFAULT_COOLDOWN_S = 0.1


class AdaptiveWindow:
    """An asyncio limiter whose limit moves between 1 and ``maximum``; ``smallest`` is the lowest reached."""

    def __init__(
        self,
        maximum: int,
        *,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if maximum < 1:
            raise ValueError("the window needs a maximum of at least 1")
        self.maximum = maximum
        self.limit = maximum
        self.smallest = maximum
        self.in_use = 0
        self.shrinks = 0
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._last_shrink = float("-inf")
        self._acks = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        while self.in_use >= self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self.in_use += 1

    def release(self) -> None:
        self.in_use -= 1
        self._wake()

    def succeeded(self) -> None:
        """One acknowledgement: after ``limit`` of them the window grows by one."""
        if self.limit >= self.maximum:
            return
        self._acks += 1
        if self._acks >= self.limit:
            self._acks = 0
            self.limit += 1
            self._wake()

    def busy(self) -> bool:
        """A busy answer: halve the window unless it was halved less than ``cooldown_s`` ago."""
        now = self._clock()
        if now - self._last_shrink < self._cooldown_s:
            return False
        self._last_shrink = now
        self._acks = 0
        self.limit = max(1, self.limit // 2)
        self.smallest = min(self.smallest, self.limit)
        self.shrinks += 1
        return True

    def _wake(self) -> None:
        free = self.limit - self.in_use
        for waiter in list(self._waiters):
            if free <= 0:
                break
            if not waiter.done():
                waiter.set_result(None)
                free -= 1
