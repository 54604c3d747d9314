"""pull(): the statuses a consume queue and commit log in unusual states produce."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.store.commit_log import CommitLog
from broker.store.consume_queue import ConsumeQueue, CqEntry
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


def _record(at: int, size: int) -> bytes:
    """Record bytes that differ by where they are written."""
    return bytes([at % 251]) * size


def _reference_pull(
    queue: ConsumeQueue,
    commit_log: CommitLog,
    offset: int,
    limits: PullLimits,
    tag_codes: frozenset[int] | None,
    message_filter: Callable[[bytes], bool] | None,
) -> tuple[GetMessageStatus, int, list[bytes], list[int]]:
    """The walk as Apache describes it, entry by entry: every scanned entry read at once, one commit-log
    read per message. pull() reads entries in chunks and records in runs; the answers must not differ."""
    entries = queue.read(offset, max(limits.max_filter_bytes // 20, limits.max_count)) or []
    status, next_offset = GetMessageStatus.NO_MATCHED_MESSAGE, offset
    messages: list[bytes] = []
    offsets: list[int] = []
    total = 0
    skip_below = -1
    for entry in entries:
        if messages and (len(messages) >= limits.max_count or total + entry.size > limits.max_bytes):
            break
        next_offset = entry.queue_offset + 1
        if entry.commit_log_offset < skip_below or entry.is_blank:
            continue
        if tag_codes is not None and entry.tags_code not in tag_codes:
            continue
        data = commit_log.read(entry.commit_log_offset, entry.size)
        if data is None:
            if not messages:
                status = GetMessageStatus.MESSAGE_WAS_REMOVING
            skip_below = commit_log.roll_next_file(entry.commit_log_offset)
            continue
        if message_filter is not None and not message_filter(data):
            continue
        messages.append(data)
        offsets.append(entry.queue_offset)
        status = GetMessageStatus.FOUND
        total += len(data)
        skip_below = -1
    return status, next_offset, messages, offsets


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    layout=st.lists(
        st.tuples(st.integers(0, 2), st.integers(1, 12), st.integers(20, 300), st.integers(0, 3)),
        min_size=1,
        max_size=40,
    ),
    max_count=st.integers(1, 40),
    max_bytes=st.integers(100, 8000),
    max_filter_bytes=st.sampled_from([20, 400, 16_000]),
    tags=st.one_of(st.none(), st.frozensets(st.integers(0, 3), min_size=1)),
    drop_first_file=st.booleans(),
    odd_only=st.booleans(),
    start=st.integers(0, 60),
)
def test_chunked_walk_and_run_reads_answer_as_the_entry_by_entry_walk(
    tmp_path_factory: pytest.TempPathFactory,
    layout: list[tuple[int, int, int, int]],
    max_count: int,
    max_bytes: int,
    max_filter_bytes: int,
    tags: frozenset[int] | None,
    drop_first_file: bool,
    odd_only: bool,
    start: int,
) -> None:
    """Batches (runs of one queue's records back to back) and single records of three queues, with tag
    codes, a message filter, byte and count limits, and the oldest commit-log file gone."""
    root = tmp_path_factory.mktemp("pull")
    commit_log = CommitLog(root / "commitlog", 4096)
    queues = [ConsumeQueue(root / "cq", "T", q, entries_per_file=16) for q in range(3)]
    for queue_id, run, size, tag in layout:
        queue = queues[queue_id]
        for _ in range(run):
            queue_offset = queue.max_offset
            offset, data = commit_log.append(functools.partial(_record, size=size))
            queue.put(queue_offset, offset, len(data), tag)
    if drop_first_file and len(commit_log.segments.segments) > 1:
        commit_log.segments.remove_first(1)
    limits = PullLimits(max_count=max_count, max_bytes=max_bytes, max_filter_bytes=max_filter_bytes)
    message_filter = (lambda data: data[0] % 2 == 1) if odd_only else None
    for queue in queues:
        if not queue.min_offset <= start < queue.max_offset:
            continue
        got = pull(queue, commit_log, start, limits, tags, message_filter)
        expected = _reference_pull(queue, commit_log, start, limits, tags, message_filter)
        assert (got.status, got.next_begin_offset, got.messages, got.queue_offsets) == expected


def test_an_unfiltered_pull_reads_only_the_entries_it_returns(tmp_path: Path) -> None:
    """A pull of 32 used to read 800 entries (maxFilterMessageSize worth) whatever it returned."""
    commit_log = CommitLog(tmp_path / "commitlog", 1 << 20)
    queue = ConsumeQueue(tmp_path / "cq", "T", 0, entries_per_file=2000)
    for i in range(1000):
        offset, data = commit_log.append(lambda at: b"m" * 100)
        queue.put(i, offset, len(data), 0)
    asked: list[int] = []
    original = queue.read

    def counting_read(queue_offset: int, max_entries: int) -> list[CqEntry] | None:
        asked.append(max_entries)
        return original(queue_offset, max_entries)

    queue.read = counting_read  # type: ignore[method-assign]
    result = pull(queue, commit_log, 0, LIMITS, None, None)
    assert len(result.messages) == 32
    assert sum(asked) <= 64


def test_a_filtered_pull_walks_on_past_the_first_chunk(tmp_path: Path) -> None:
    commit_log = CommitLog(tmp_path / "commitlog", 1 << 20)
    queue = ConsumeQueue(tmp_path / "cq", "T", 0, entries_per_file=2000)
    for i in range(105):
        offset, data = commit_log.append(lambda at: b"m" * 50)
        queue.put(i, offset, len(data), 1 if i < 100 else 2)
    result = pull(queue, commit_log, 0, LIMITS, frozenset({2}), None)
    assert result.queue_offsets == [100, 101, 102, 103, 104]
    assert result.next_begin_offset == 105
    narrow = PullLimits(max_count=32, max_bytes=1 << 20, max_filter_bytes=60 * 20)
    assert pull(queue, commit_log, 0, narrow, frozenset({2}), None).next_begin_offset == 60
