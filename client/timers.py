"""A client instance's background rounds (route refresh, heartbeats) as plain tasks that stop on an event."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

logger = logging.getLogger("client.timers")


async def run_periodically(
    interval_ms: float, action: Callable[[], Awaitable[object]], name: str, stop: asyncio.Event
) -> None:
    """Await ``action()`` every ``interval_ms`` until ``stop`` is set; a failing round is logged, and the
    next round runs as planned (a NameServer or broker being down must not end the timer)."""
    while not stop.is_set():
        try:
            async with asyncio.timeout(interval_ms / 1000):
                await stop.wait()
            return
        except TimeoutError:
            pass
        try:
            await action()
        except Exception:
            logger.exception("periodic %s failed", name)
