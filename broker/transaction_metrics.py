"""What the broker's metrics report about transactional messages (Apache's ``TransactionMetrics`` and the
counters its ``EndTransactionProcessor`` adds to).

Kept per real topic, in plain dicts the exporter reads at scrape time. The half-message count is the
number of half messages stored and not yet settled by a verdict or given up by the check service; unlike
Apache's, which it persists to ``transactionMetrics``, it starts from zero when the broker starts.
"""

from __future__ import annotations

from broker.histogram import HistogramTable

#: Apache's buckets for ``rocketmq_finish_message_latency``: 5 s, 1 min, 10 min, 1 h, 12 h, 24 h. Apache
#: records that latency in whole seconds (under a unit that says milliseconds), and so does this.
FINISH_LATENCY_BOUNDS = (5, 60, 600, 3600, 12 * 3600, 24 * 3600)


class TransactionMetrics:
    def __init__(self) -> None:
        #: Per real topic: half messages waiting for their verdict.
        self.half: dict[str, int] = {}
        self.commits: dict[str, int] = {}
        self.rollbacks: dict[str, int] = {}
        #: Per real topic (a 1-tuple key): seconds from the half message's birth to its commit.
        self.finish_latency: HistogramTable[tuple[str]] = HistogramTable(FINISH_LATENCY_BOUNDS)

    def _add(self, table: dict[str, int], topic: str, change: int) -> None:
        table[topic] = table.get(topic, 0) + change

    def prepared(self, topic: str) -> None:
        self._add(self.half, topic, 1)

    def committed(self, topic: str, latency_s: int) -> None:
        self._add(self.half, topic, -1)
        self._add(self.commits, topic, 1)
        self.finish_latency.observe((topic,), latency_s)

    def rolled_back(self, topic: str) -> None:
        self._add(self.half, topic, -1)
        self._add(self.rollbacks, topic, 1)

    def given_up(self, topic: str) -> None:
        """The check service discarded a half message after its last check."""
        self._add(self.half, topic, -1)
