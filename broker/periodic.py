"""Chores that run every so often on the broker's clock: registration, offset saving, retention, expiry.

Each chore is one task that sleeps its period and runs; a failing run is logged and the next one happens
on schedule, so one bad cycle never stops a chore for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable

from broker.clock import Clock

log = logging.getLogger("broker.periodic")

Chore = Callable[[], Awaitable[object] | object]


class PeriodicTask:
    def __init__(
        self,
        name: str,
        clock: Clock,
        period_ms: Callable[[], int],
        chore: Chore,
        *,
        initial_delay_ms: int | None = None,
    ) -> None:
        self.name = name
        self._clock = clock
        self._period_ms = period_ms
        self._chore = chore
        self._initial_delay_ms = initial_delay_ms
        self._task: asyncio.Task[None] | None = None
        self.runs = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"periodic-{self.name}")

    async def _run(self) -> None:
        delay = self._period_ms() if self._initial_delay_ms is None else self._initial_delay_ms
        while True:
            await self._clock.sleep_ms(delay)
            try:
                outcome = self._chore()
                if inspect.isawaitable(outcome):
                    await outcome
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("periodic chore %s failed; it runs again next period", self.name)
            self.runs += 1
            delay = self._period_ms()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
