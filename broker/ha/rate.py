"""Bytes per second over the last whole second, the figure Apache's HA status reports per link."""

from __future__ import annotations

import time
from collections.abc import Callable


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class RateMeter:
    """Counts bytes into one-second buckets; :meth:`per_second` is the last complete bucket's count."""

    __slots__ = ("_bucket_start", "_clock", "_current", "_previous")

    def __init__(self, clock: Callable[[], int] = _monotonic_ms) -> None:
        self._clock = clock
        self._bucket_start = clock()
        self._current = 0
        self._previous = 0

    def _roll(self) -> None:
        now = self._clock()
        elapsed = now - self._bucket_start
        if elapsed < 1000:
            return
        # A gap of more than one second means the bucket before now was empty.
        self._previous = self._current if elapsed < 2000 else 0
        self._current = 0
        self._bucket_start = now - elapsed % 1000

    def add(self, count: int) -> None:
        self._roll()
        self._current += count

    def per_second(self) -> int:
        self._roll()
        return self._previous
