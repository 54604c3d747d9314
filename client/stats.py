"""Plain client statistics: counters a producer or consumer keeps about its own traffic, handed to a user
callback every few seconds (as confluent-kafka's ``stats_cb``) or read on demand.

The figures live in one :class:`ClientStats` per client object, never in module state, so two producers in
one process keep separate figures. Each role reports what it knows (a producer its sends, a consumer what it
received and processed); the same snapshot shape serves both, with the other role's figures left at zero.
Updating a figure is a few additions, cheap enough to do on every message.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("client.stats")

#: ``stats_cb(snapshot)`` receives :meth:`ClientStats.snapshot`'s mapping.
StatsCallback = Callable[[dict[str, Any]], object]

#: How often the callback runs when the user names no interval (confluent-kafka has no default; 5 s keeps
#: the callback cheap while still useful for a dashboard).
DEFAULT_STATS_INTERVAL_S = 5.0


@dataclasses.dataclass(slots=True)
class LatencyFigures:
    """Count, total, smallest and largest of a series of durations in milliseconds."""

    count: int = 0
    total_ms: float = 0.0
    min_ms: float = 0.0
    max_ms: float = 0.0

    def add(self, ms: float) -> None:
        if self.count == 0 or ms < self.min_ms:
            self.min_ms = ms
        if ms > self.max_ms:
            self.max_ms = ms
        self.count += 1
        self.total_ms += ms

    def as_dict(self) -> dict[str, float]:
        avg = self.total_ms / self.count if self.count else 0.0
        return {"count": self.count, "avg_ms": avg, "min_ms": self.min_ms, "max_ms": self.max_ms}


class ClientStats:
    """One client's running totals since it was built."""

    def __init__(self, role: str, lag: Callable[[], int | None] | None = None) -> None:
        self.role = role
        self.client_id = ""
        self.sent_ok = 0
        self.sent_failed = 0
        self.sent_bytes = 0
        self.send_latency = LatencyFigures()
        self.received = 0
        self.received_bytes = 0
        self.processed_ok = 0
        self.processed_failed = 0
        self.process_latency = LatencyFigures()
        self._lag = lag
        self._started = time.monotonic()

    def record_send(self, ok: bool, count: int, size: int, latency_ms: float) -> None:
        """``count`` messages of ``size`` body bytes sent in one call that took ``latency_ms``."""
        if ok:
            self.sent_ok += count
            self.sent_bytes += size
        else:
            self.sent_failed += count
        self.send_latency.add(latency_ms)

    def record_received(self, count: int, size: int) -> None:
        self.received += count
        self.received_bytes += size

    def record_processed(self, ok: int, failed: int, latency_ms: float) -> None:
        self.processed_ok += ok
        self.processed_failed += failed
        self.process_latency.add(latency_ms)

    def snapshot(self) -> dict[str, Any]:
        """The figures as a plain mapping (JSON-ready); ``lag`` is None where the role cannot know it."""
        lag: int | None = None
        if self._lag is not None:
            try:
                lag = self._lag()
            except Exception:
                logger.exception("%s %s: computing the lag failed", self.role, self.client_id)
        return {
            "role": self.role,
            "client_id": self.client_id,
            "ts": time.time(),
            "age_s": time.monotonic() - self._started,
            "sent_ok": self.sent_ok,
            "sent_failed": self.sent_failed,
            "sent_bytes": self.sent_bytes,
            "send_latency": self.send_latency.as_dict(),
            "received": self.received,
            "received_bytes": self.received_bytes,
            "processed_ok": self.processed_ok,
            "processed_failed": self.processed_failed,
            "process_latency": self.process_latency.as_dict(),
            "lag": lag,
        }


class StatsReporter:
    """Calls ``callback`` with a snapshot every ``interval_s`` while its client runs, and once at stop so
    the last figures are not lost; a failing callback is logged and never stops the client."""

    def __init__(self, stats: ClientStats, callback: StatsCallback, interval_s: float) -> None:
        if interval_s <= 0:
            raise ValueError("stats_interval_s must be positive")
        self._stats = stats
        self._callback = callback
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="client-stats")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        self._emit()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            self._emit()

    def _emit(self) -> None:
        try:
            self._callback(self._stats.snapshot())
        except Exception:
            logger.exception("%s %s: the stats callback failed", self._stats.role, self._stats.client_id)
