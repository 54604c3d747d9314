"""Growing, jittered pauses between attempts, for anything that must wait before trying a busy peer again.

The producer pauses this way when every broker it tried answered busy, and the Spark sink before sending
again a request the producer gave up on as busy; both want the same shape, so it lives here once.
"""

from __future__ import annotations

import random


class Backoff:
    """Delays of ``initial_ms``, doubling up to ``max_ms``, each drawn from its upper half (jitter), so
    clients that were refused together do not come back together."""

    def __init__(self, initial_ms: float, max_ms: float, rng: random.Random) -> None:
        if initial_ms <= 0 or max_ms < initial_ms:
            raise ValueError("the backoff needs 0 < initial_ms <= max_ms")
        self._initial = initial_ms
        self._max = max_ms
        self._rng = rng
        self._next = initial_ms

    def next_delay_ms(self) -> float:
        ceiling = self._next
        self._next = min(self._max, self._next * 2)
        return self._rng.uniform(ceiling / 2, ceiling)
