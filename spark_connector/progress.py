"""The streaming source's figures per micro-batch: messages planned, lag behind the brokers, offsets skipped.

Spark's Kafka source reports such figures in the query progress (``sources[].metrics``) through the Java
interface ``ReportsSourceMetrics``. PySpark's Python data sources cannot: Spark wraps a Python stream reader
in ``PythonMicroBatchStream``, which does not implement that interface (PySpark 4.0 to 4.3), and the Python
``DataSourceStreamReader`` has no method for metrics. So the planner (a Python worker on the driver, not the
user's program) logs the figures and, with the ``metrics.path`` option, appends them as one JSON line per
planned micro-batch, which :func:`read_batch_metrics` reads back. The latest offsets themselves do reach the
progress: ``reportLatestOffset`` fills ``sources[].latestOffset``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class BatchMetrics:
    """One planned micro-batch.

    ``messages``: offsets the batch spans (with a filter, fewer rows may come out). ``lag``: messages the
    brokers held past the batch's end when it was planned. ``skipped``: offsets deleted by retention before
    they were read, skipped because ``failOnDataLoss`` is false;
    ``skipped_total`` since the query (re)started.
    """

    messages: int
    lag: int
    skipped: int
    skipped_total: int
    queues: int
    topics: tuple[str, ...]

    def describe(self) -> str:
        return (
            f"RocketMQ source micro-batch: {self.messages} message(s) from {self.queues} queue(s) of "
            f"{len(self.topics)} topic(s), lag {self.lag}, skipped {self.skipped} "
            f"(total {self.skipped_total})"
        )

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)


def append_batch_metrics(path: str | os.PathLike[str], metrics: BatchMetrics) -> None:
    """One line per batch, written in one ``write`` on an append-mode file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="utf-8") as handle:
        handle.write(metrics.to_json() + "\n")


def read_batch_metrics(path: str | os.PathLike[str]) -> list[BatchMetrics]:
    """Every line :func:`append_batch_metrics` wrote to ``path``, oldest first; none if absent."""
    target = Path(path)
    if not target.exists():
        return []
    result = []
    for line in target.read_text(encoding="utf-8").splitlines():
        if line.strip():
            data = json.loads(line)
            data["topics"] = tuple(data["topics"])
            result.append(BatchMetrics(**data))
    return result
