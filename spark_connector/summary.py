"""What a write achieved: per-task reports, and the summary the driver makes of them at commit.

Spark runs a data source's ``commit`` in a Python worker on the driver, a different process from the user's
program, so returning the figures is not possible; the summary is logged, and when the ``summary.path``
option names a file, appended to it as one JSON line per committed (or aborted) job or micro-batch.
:func:`read_summaries` reads them back, for tests, monitoring or a notebook cell after ``save()``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from spark_connector.sender import SendTally


@dataclasses.dataclass(frozen=True)
class PartitionReport:
    """One task's acknowledged figures (see :class:`~spark_connector.sender.SendTally`)."""

    partition_id: int
    attempt: int
    rows: int
    bytes: int
    requests: int
    batches: int
    not_ok: int
    seconds: float
    busy_answers: int = 0
    resends: int = 0
    smallest_window: int = 0

    @classmethod
    def of(cls, partition_id: int, attempt: int, tally: SendTally) -> PartitionReport:
        return cls(
            partition_id,
            attempt,
            tally.rows,
            tally.bytes,
            tally.requests,
            tally.batches,
            tally.not_ok,
            round(tally.seconds, 6),
            tally.busy_answers,
            tally.resends,
            tally.smallest_window,
        )


@dataclasses.dataclass(frozen=True)
class CommitSummary:
    """The figures of one job (``mode="batch"``) or one micro-batch (``mode="stream"``).

    ``committed`` is False for an aborted job: the rows counted were acknowledged by the broker all the
    same (a message cannot be taken back), which is what at-least-once delivery means here.
    ``failed_tasks`` counts tasks that sent no report (they failed).
    """

    mode: Literal["batch", "stream"]
    committed: bool
    batch_id: int | None
    topic: str | None
    tasks: int
    failed_tasks: int
    rows: int
    bytes: int
    requests: int
    batches: int
    not_ok: int
    task_seconds: float
    partitions: tuple[PartitionReport, ...] = ()
    #: Busy answers from the brokers and requests the tasks sent again (flow control); none was stored.
    busy_answers: int = 0
    resends: int = 0
    #: The smallest in-flight window any task went down to (0 when no task reported).
    smallest_window: int = 0

    @classmethod
    def of(
        cls,
        reports: Sequence[PartitionReport | None],
        *,
        mode: Literal["batch", "stream"],
        committed: bool,
        batch_id: int | None = None,
        topic: str | None = None,
    ) -> CommitSummary:
        done = [report for report in reports if report is not None]
        return cls(
            mode=mode,
            committed=committed,
            batch_id=batch_id,
            topic=topic,
            tasks=len(done),
            failed_tasks=len(reports) - len(done),
            rows=sum(r.rows for r in done),
            bytes=sum(r.bytes for r in done),
            requests=sum(r.requests for r in done),
            batches=sum(r.batches for r in done),
            not_ok=sum(r.not_ok for r in done),
            task_seconds=round(sum(r.seconds for r in done), 6),
            partitions=tuple(sorted(done, key=lambda r: r.partition_id)),
            busy_answers=sum(r.busy_answers for r in done),
            resends=sum(r.resends for r in done),
            smallest_window=min((r.smallest_window for r in done), default=0),
        )

    def describe(self) -> str:
        """One line for the log."""
        what = "job" if self.batch_id is None else f"micro-batch {self.batch_id}"
        outcome = "committed" if self.committed else "aborted"
        return (
            f"RocketMQ sink {what} {outcome}: {self.rows} message(s), {self.bytes} body bytes, "
            f"{self.requests} request(s) ({self.batches} batch), {self.tasks} task(s) reported, "
            f"{self.failed_tasks} failed"
            + (f", {self.not_ok} stored with a status other than SEND_OK" if self.not_ok else "")
            + (
                f", broker busy {self.busy_answers} time(s): {self.resends} resend(s), "
                f"window down to {self.smallest_window}"
                if self.busy_answers or self.resends
                else ""
            )
        )

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CommitSummary:
        data: dict[str, Any] = json.loads(text)
        data["partitions"] = tuple(PartitionReport(**p) for p in data.get("partitions", ()))
        return cls(**data)


def append_summary(path: str | os.PathLike[str], summary: CommitSummary) -> None:
    """Add ``summary`` as one line; a single ``write`` on an append-mode file, so lines never interleave."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="utf-8") as handle:
        handle.write(summary.to_json() + "\n")


def read_summaries(path: str | os.PathLike[str]) -> list[CommitSummary]:
    """Every summary appended to ``path`` (the ``summary.path`` option), oldest first; none if absent."""
    target = Path(path)
    if not target.exists():
        return []
    lines = target.read_text(encoding="utf-8").splitlines()
    return [CommitSummary.from_json(line) for line in lines if line.strip()]
