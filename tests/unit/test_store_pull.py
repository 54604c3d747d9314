"""pull(): the statuses a consume queue and commit log in unusual states produce."""

from __future__ import annotations

from pathlib import Path

from broker.store.commit_log import CommitLog
from broker.store.consume_queue import ConsumeQueue
from broker.store.pull import PullLimits, pull
from broker.store.results import GetMessageStatus

LIMITS = PullLimits(max_count=32, max_bytes=1 << 20, max_filter_bytes=16_000)


def test_entries_whose_messages_are_gone_report_message_was_removing(tmp_path: Path) -> None:
    commit_log = CommitLog(tmp_path / "commitlog", 4096)
    queue = ConsumeQueue(tmp_path / "cq", "T", 0, entries_per_file=8)
    for i in range(3):
        queue.put(i, 10_000 + i * 100, 100, 0)
    result = pull(queue, commit_log, 0, LIMITS, None, None)
    assert result.status is GetMessageStatus.MESSAGE_WAS_REMOVING
    assert result.next_begin_offset == 3
    assert result.messages == []


def test_a_missing_consume_queue_file_reports_offset_found_null(tmp_path: Path) -> None:
    commit_log = CommitLog(tmp_path / "commitlog", 4096)
    queue = ConsumeQueue(tmp_path / "cq", "T", 0, entries_per_file=4)
    for i in range(10):
        queue.put(i, i * 100, 100, 0)
    # The first file vanishes before the min offset is corrected (as if deleted underneath us).
    queue._files.remove_first(1)
    result = pull(queue, commit_log, 1, LIMITS, None, None)
    assert (result.status, result.next_begin_offset) == (GetMessageStatus.OFFSET_FOUND_NULL, 4)


def test_no_queue_and_empty_queue(tmp_path: Path) -> None:
    commit_log = CommitLog(tmp_path / "commitlog", 4096)
    assert pull(None, commit_log, 5, LIMITS, None, None).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    empty = ConsumeQueue(tmp_path / "cq", "T", 0, entries_per_file=4)
    result = pull(empty, commit_log, 5, LIMITS, None, None)
    assert (result.status, result.next_begin_offset) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0)
