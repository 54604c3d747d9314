"""The store's page-cache pressure signals (Apache's ``isOSPageCacheBusy``), on a clock the test moves."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.store import MessageStore, PutMessageStatus, StoreConfig
from broker.store.commit_log import CommitLog
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt

START = 1_700_000_000_000
CONFIG = StoreConfig(
    commit_log_segment_size=64 * 1024,
    consume_queue_entries_per_file=50,
    max_hash_slot_num=64,
    max_index_num=200,
    os_page_cache_busy_timeout_ms=1000,
)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> int:
        return self.now


def message(body: bytes = b"hello") -> MessageExt:
    return MessageExt(
        topic="TopicA",
        body=body,
        queue_id=0,
        properties_string=encode_properties({"TAGS": "a"}),
        born_host="192.168.1.7:50000",
        born_timestamp=START,
    )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[MessageStore]:
    opened = MessageStore(tmp_path / "store", CONFIG, clock=clock)
    opened.open()
    yield opened
    opened.close()


def during_append(monkeypatch: pytest.MonkeyPatch, step: Callable[[], None]) -> None:
    """Run ``step`` inside every commit-log append, while the store holds its lock."""
    original = CommitLog.append

    def append(self: CommitLog, build: Callable[[int], bytes]) -> tuple[int, bytes]:
        step()
        return original(self, build)

    monkeypatch.setattr(CommitLog, "append", append)


def test_idle_store_is_not_busy(store: MessageStore, clock: Clock) -> None:
    assert store.begin_time_in_lock == 0
    assert not store.is_os_page_cache_busy()
    assert store.lock_time_ms() == 0
    assert store.put_message(message()).status is PutMessageStatus.PUT_OK
    assert store.begin_time_in_lock == 0 and store.slow_append_ended_at == 0
    assert not store.was_os_page_cache_busy_within(10_000_000)


def test_busy_only_while_an_append_holds_the_lock_past_the_timeout(
    store: MessageStore, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, int, bool]] = []

    def look() -> None:
        seen.append((store.begin_time_in_lock, store.lock_time_ms(), store.is_os_page_cache_busy()))

    def step() -> None:
        look()
        clock.now += 1000  # exactly the timeout: not yet busy (Apache compares with >)
        look()
        clock.now += 1
        look()
        clock.now += 10_000_000  # past Apache's bound: a stale timestamp, not a busy page cache
        look()
        clock.now -= 10_000_000

    during_append(monkeypatch, step)
    assert store.put_message(message()).status is PutMessageStatus.PUT_OK
    assert seen == [
        (START, 0, False),
        (START, 1000, False),
        (START, 1001, True),
        (START, 10_001_001, False),
    ]
    assert store.begin_time_in_lock == 0 and not store.is_os_page_cache_busy()
    assert store.slow_append_ended_at == START + 1001


def test_a_slow_append_is_remembered_for_requests_that_waited_through_it(
    store: MessageStore, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow() -> None:
        clock.now += 1500

    during_append(monkeypatch, slow)
    store.put_message(message())
    ended = START + 1500
    assert store.slow_append_ended_at == ended
    clock.now = ended + 100
    # A request waiting 102+ ms was already waiting when the slow append ended; one waiting 101 ms or
    # less may have arrived after it (the store clock has whole milliseconds, hence the one spare).
    assert store.was_os_page_cache_busy_within(102)
    assert not store.was_os_page_cache_busy_within(101)
    assert not store.was_os_page_cache_busy_within(50)
    monkeypatch.undo()
    store.put_message(message())  # a quick append does not forget the slow one
    assert store.slow_append_ended_at == ended


def test_the_timeout_is_a_live_setting(
    store: MessageStore, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow() -> None:
        clock.now += 60

    during_append(monkeypatch, slow)
    store.put_message(message())
    assert store.slow_append_ended_at == 0  # 60 ms is quick under the default 1000
    store.reconfigure(os_page_cache_busy_timeout_ms=50)
    assert store.config.os_page_cache_busy_timeout_ms == 50
    store.put_message(message())
    assert store.slow_append_ended_at == clock.now
    with pytest.raises(ValueError, match="commit_log_segment_size"):
        store.reconfigure(commit_log_segment_size=1 << 20)
    assert store.config.commit_log_segment_size == CONFIG.commit_log_segment_size


def test_a_failed_append_releases_the_lock_time(store: MessageStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(self: CommitLog, build: Callable[[int], bytes]) -> tuple[int, bytes]:
        raise OSError("disk gone")

    monkeypatch.setattr(CommitLog, "append", fail)
    assert store.put_message(message()).status is PutMessageStatus.CREATE_MAPPED_FILE_FAILED
    assert store.begin_time_in_lock == 0
