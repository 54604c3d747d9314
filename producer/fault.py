"""Latency-based broker avoidance (Apache 4.x ``MQFaultStrategy``), off by default as in Java.

After each send the broker's latency is looked up in a step table: slow or failed brokers are benched for a
while and queue selection skips them. When every broker is benched, the least bad one is still used, because
refusing to send at all would be worse than trying a slow broker.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

#: ``latencyMax``: latency thresholds in ms ...
LATENCY_MAX_MS: tuple[int, ...] = (50, 100, 550, 1000, 2000, 3000, 15000)
#: ... and ``notAvailableDuration``: how long a broker at or above each threshold is avoided.
NOT_AVAILABLE_DURATION_MS: tuple[int, ...] = (0, 0, 30000, 60000, 120000, 180000, 600000)
#: The latency charged for a failed send ("isolation"), whatever it really took.
ISOLATION_LATENCY_MS = 30000


def not_available_duration(
    latency_ms: float,
    latency_max: Sequence[int] = LATENCY_MAX_MS,
    durations: Sequence[int] = NOT_AVAILABLE_DURATION_MS,
) -> int:
    """How long to avoid a broker that answered in ``latency_ms`` (0: not at all)."""
    for threshold, duration in zip(reversed(latency_max), reversed(durations), strict=True):
        if latency_ms >= threshold:
            return duration
    return 0


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


@dataclasses.dataclass(slots=True)
class _FaultItem:
    latency_ms: float
    available_at: float


class LatencyFaultTolerance:
    """Per-broker bench times. ``clock`` returns milliseconds; tests pass a fake one instead of sleeping."""

    def __init__(self, clock: Callable[[], float] = _monotonic_ms) -> None:
        self._clock = clock
        self._items: dict[str, _FaultItem] = {}
        self._worst_index = 0

    def update(self, broker_name: str, latency_ms: float, isolation: bool) -> None:
        """Record one send's outcome; a failure (``isolation``) counts as 30 s of latency."""
        duration = not_available_duration(ISOLATION_LATENCY_MS if isolation else latency_ms)
        self._items[broker_name] = _FaultItem(latency_ms, self._clock() + duration)

    def is_available(self, broker_name: str) -> bool:
        item = self._items.get(broker_name)
        return item is None or self._clock() >= item.available_at

    def remove(self, broker_name: str) -> None:
        self._items.pop(broker_name, None)

    def pick_one_at_least(self) -> str | None:
        """A broker to fall back on when all are benched: rotates over the better half (available first,
        then lowest latency, then soonest back)."""
        if not self._items:
            return None
        now = self._clock()
        ranked = sorted(
            self._items.items(),
            key=lambda kv: (now < kv[1].available_at, kv[1].latency_ms, kv[1].available_at),
        )
        half = len(ranked) // 2
        if half == 0:
            return ranked[0][0]
        self._worst_index += 1
        return ranked[(self._worst_index - 1) % half][0]

    def __len__(self) -> int:
        return len(self._items)
