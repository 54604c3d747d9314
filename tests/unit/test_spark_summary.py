"""Commit summaries: figures added up from the tasks' reports, and the JSON lines ``summary.path`` keeps."""

from __future__ import annotations

from pathlib import Path

from spark_connector import CommitSummary, PartitionReport, read_summaries
from spark_connector.sender import SendTally
from spark_connector.summary import append_summary


def test_summary_adds_up_the_reports_and_counts_failed_tasks() -> None:
    reports = [
        PartitionReport.of(1, 0, SendTally(rows=3, bytes=30, requests=1, batches=1, seconds=0.5)),
        None,
        PartitionReport.of(0, 1, SendTally(rows=2, bytes=5, requests=2, not_ok=1, seconds=0.25)),
    ]
    summary = CommitSummary.of(reports, mode="stream", committed=True, batch_id=7, topic="T")
    assert (summary.tasks, summary.failed_tasks) == (2, 1)
    assert (summary.rows, summary.bytes, summary.requests, summary.batches, summary.not_ok) == (
        5,
        35,
        3,
        1,
        1,
    )
    assert summary.task_seconds == 0.75
    assert [p.partition_id for p in summary.partitions] == [0, 1]
    line = summary.describe()
    assert "micro-batch 7 committed" in line
    assert "5 message(s)" in line
    assert "1 stored with a status other than SEND_OK" in line


def test_summaries_append_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "summaries.jsonl"
    assert read_summaries(path) == []
    first = CommitSummary.of(
        [PartitionReport.of(0, 0, SendTally(rows=1, bytes=1, requests=1))], mode="batch", committed=True
    )
    second = CommitSummary.of([None], mode="batch", committed=False, topic="T")
    append_summary(path, first)
    append_summary(path, second)
    assert read_summaries(path) == [first, second]
    assert "aborted" in second.describe()
    assert len(path.read_text().splitlines()) == 2
