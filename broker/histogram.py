"""Explicit-bucket histograms kept as plain counts, for the metrics exporter to read at scrape time.

Apache's broker records its histograms with OpenTelemetry's explicit-bucket aggregation: a value falls in
the first bucket whose upper bound it does not exceed. Keeping one small list of counts per label set
costs a bisect and two additions per observation, so the paths that record them stay cheap; the label
sets themselves are only turned into strings when the exporter renders them.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterator, Sequence
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class Buckets:
    """One series: a count per bucket (the last past every bound) and the sum of what was observed."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value


class HistogramTable(Generic[K]):
    """Series of one histogram family, keyed by whatever tuple of label values the recorder chooses."""

    __slots__ = ("_series", "bounds")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(float(bound) for bound in bounds)
        self._series: dict[K, Buckets] = {}

    def observe(self, key: K, value: float) -> None:
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = Buckets(self.bounds)
        series.observe(value)

    def items(self) -> Iterator[tuple[K, Buckets]]:
        """A snapshot of the series (safe while recorders on the event loop add new ones)."""
        return iter(list(self._series.items()))

    def get(self, key: K) -> Buckets | None:
        return self._series.get(key)
