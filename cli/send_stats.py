"""Throughput and latency of a run of sends, for ``rmq send --count``.

Kept apart from the command so the arithmetic (percentiles, rates) is tested on its own numbers rather
than on a clock.
"""

from __future__ import annotations

import dataclasses
import math


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values (0.0 for none)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


@dataclasses.dataclass(frozen=True, slots=True)
class SendSummary:
    sent: int
    failed: int
    seconds: float
    msgs_per_s: float
    mb_per_s: float
    latency_p50_ms: float
    latency_p99_ms: float
    latency_max_ms: float
    first_error: str | None


class SendStats:
    """Collects each send's latency and size; ``summary(elapsed)`` works out the rates."""

    def __init__(self) -> None:
        self._latencies_ms: list[float] = []
        self._bytes = 0
        self._sent = 0
        self.failed = 0
        self.first_error: str | None = None

    @property
    def sent(self) -> int:
        return self._sent

    def record(self, latency_s: float, messages: int, body_bytes: int) -> None:
        """One successful request carrying ``messages`` messages (a batch carries several)."""
        self._latencies_ms.append(latency_s * 1000)
        self._sent += messages
        self._bytes += body_bytes

    def record_failure(self, messages: int, error: str) -> None:
        self.failed += messages
        if self.first_error is None:
            self.first_error = error

    def summary(self, elapsed_s: float) -> SendSummary:
        latencies = sorted(self._latencies_ms)
        rate = self._sent / elapsed_s if elapsed_s > 0 else 0.0
        mb_rate = self._bytes / elapsed_s / (1024 * 1024) if elapsed_s > 0 else 0.0
        return SendSummary(
            sent=self._sent,
            failed=self.failed,
            seconds=elapsed_s,
            msgs_per_s=rate,
            mb_per_s=mb_rate,
            latency_p50_ms=percentile(latencies, 0.50),
            latency_p99_ms=percentile(latencies, 0.99),
            latency_max_ms=latencies[-1] if latencies else 0.0,
            first_error=self.first_error,
        )
