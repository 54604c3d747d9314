"""Retention: old segments go (by age at the delete hour, or by disk pressure), derived files follow, and
reads of removed offsets answer OFFSET_TOO_SMALL while everything newer stays readable."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.store import GetMessageStatus, MessageStore, StoreConfig
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt, decode_messages

SEGMENT = 16 * 1024
HOUR_MS = 3600 * 1000
#: 04:30 local time on some day: inside Apache's default deleteWhen ("04").
AT_FOUR = int(time.mktime((2024, 6, 11, 4, 30, 0, 0, 0, -1))) * 1000
AT_NOON = AT_FOUR + 8 * HOUR_MS


class Disk:
    """A disk-usage probe the test controls."""

    def __init__(self, ratio: float = 0.3) -> None:
        self.ratio = ratio
        self.calls = 0

    def __call__(self, path: Path) -> float:
        self.calls += 1
        return self.ratio


def config(**overrides: object) -> StoreConfig:
    values: dict[str, object] = {
        "commit_log_segment_size": SEGMENT,
        "consume_queue_entries_per_file": 20,
        "max_hash_slot_num": 16,
        "max_index_num": 30,
        "max_transfer_count_on_message": 10_000,
        "max_transfer_bytes_on_message": 1 << 30,
    }
    values.update(overrides)
    return StoreConfig(**values)  # type: ignore[arg-type]


def fill(store: MessageStore, count: int) -> None:
    for i in range(count):
        body = b"r%04d" % i + b"-" * 300
        props = encode_properties({"KEYS": f"key{i}"})
        message = MessageExt(
            topic="RetT", body=body, queue_id=i % 2, properties_string=props, born_host="127.0.0.1:5"
        )
        assert store.put_message(message).ok


def segments(root: Path) -> list[Path]:
    return sorted((root / "commitlog").iterdir())


def age_segments(root: Path, now_ms: int, old: int, old_hours: float = 100, young_hours: float = 1) -> None:
    """Make the first ``old`` segments look last written ``old_hours`` ago, the rest ``young_hours`` ago."""
    for i, path in enumerate(segments(root)):
        hours = old_hours if i < old else young_hours
        stamp = (now_ms - hours * HOUR_MS) / 1000
        os.utime(path, (stamp, stamp))


@pytest.fixture
def disk() -> Disk:
    return Disk()


@pytest.fixture
def store(tmp_path: Path, disk: Disk) -> Iterator[MessageStore]:
    opened = MessageStore(tmp_path, config(), disk_usage=disk)
    opened.open()
    fill(opened, 400)
    opened.flush_commit_log()
    yield opened
    opened.close()


def test_expired_segments_are_deleted_at_the_delete_hour(store: MessageStore) -> None:
    root = store.root
    files_before = segments(root)
    assert len(files_before) >= 8
    age_segments(root, AT_FOUR, old=4)
    cq_files_before = len(list((root / "consumequeue" / "RetT" / "0").iterdir()))
    index_before = len(list((root / "index").iterdir()))

    result = store.clean_expired(AT_FOUR)

    assert result.commit_log_segments == 4
    assert segments(root) == files_before[4:]
    assert store.min_physical_offset == 4 * SEGMENT == result.min_physical_offset
    assert result.consume_queue_files > 0
    assert len(list((root / "consumequeue" / "RetT" / "0").iterdir())) < cq_files_before
    assert result.index_files > 0 and len(list((root / "index").iterdir())) < index_before

    for queue_id in range(2):
        min_offset = store.get_min_offset("RetT", queue_id)
        assert min_offset > 0
        too_small = store.get_messages("RetT", queue_id, 0)
        assert too_small.status is GetMessageStatus.OFFSET_TOO_SMALL
        assert too_small.next_begin_offset == min_offset
        first = store.get_messages("RetT", queue_id, min_offset, 1)
        assert first.status is GetMessageStatus.FOUND
        message = decode_messages(first.body)[0]
        assert message.commit_log_offset >= store.min_physical_offset
        assert message.queue_offset == min_offset
        # The entry before the new min pointed into a deleted segment.
        assert store.get_store_time("RetT", queue_id, min_offset - 1) == -1
    assert store.query_messages("RetT", "key0", 5).messages == []
    assert len(store.query_messages("RetT", "key399", 5).messages) == 1


def test_expired_segments_wait_for_the_delete_hour(store: MessageStore) -> None:
    age_segments(store.root, AT_NOON, old=4)
    assert store.clean_expired(AT_NOON).commit_log_segments == 0
    assert store.min_physical_offset == 0


def test_a_full_disk_deletes_expired_segments_at_any_hour(store: MessageStore, disk: Disk) -> None:
    age_segments(store.root, AT_NOON, old=3)
    disk.ratio = 0.80
    result = store.clean_expired(AT_NOON)
    assert result.commit_log_segments == 3
    assert store.min_physical_offset == 3 * SEGMENT
    # Above 75 % but below the forcible ratio: unexpired segments stay.
    assert store.clean_expired(AT_NOON).commit_log_segments == 0


def test_a_nearly_full_disk_deletes_segments_regardless_of_age(tmp_path: Path) -> None:
    state = {"files": 0}

    def usage(path: Path) -> float:
        # Each segment is worth 10 % of this imaginary disk.
        return len(list(path.iterdir())) * 0.10

    with MessageStore(tmp_path, config(), disk_usage=usage) as store:
        fill(store, 400)
        store.flush_commit_log()
        state["files"] = len(segments(tmp_path))
        assert state["files"] >= 9
        age_segments(tmp_path, AT_NOON, old=0)  # nothing expired
        result = store.clean_expired(AT_NOON)
        assert len(segments(tmp_path)) == 7  # deleted until usage fell to 70 % (at most the 75 % limit)
        assert result.commit_log_segments == state["files"] - 7
        assert store.get_messages("RetT", 0, 0).status is GetMessageStatus.OFFSET_TOO_SMALL


def test_the_newest_segment_is_never_deleted(tmp_path: Path) -> None:
    with MessageStore(tmp_path, config(), disk_usage=Disk(0.99)) as store:
        fill(store, 400)
        store.flush_commit_log()
        age_segments(tmp_path, AT_FOUR, old=100)  # everything expired
        total = 0
        for _ in range(5):
            total += store.clean_expired(AT_FOUR).commit_log_segments
        remaining = segments(tmp_path)
        assert len(remaining) == 1
        assert int(remaining[0].name) + SEGMENT > store.max_physical_offset
        assert total > 0
        # The queues' newest entries still point into the surviving segment.
        for queue_id in range(2):
            got = store.get_messages("RetT", queue_id, store.get_min_offset("RetT", queue_id), 1000)
            assert got.status is GetMessageStatus.FOUND
            assert got.next_begin_offset == got.max_offset == 200


def test_batch_limit_caps_one_pass(tmp_path: Path) -> None:
    with MessageStore(tmp_path, config(delete_files_batch_max=2), disk_usage=Disk()) as store:
        fill(store, 400)
        store.flush_commit_log()
        age_segments(tmp_path, AT_FOUR, old=6)
        assert store.clean_expired(AT_FOUR).commit_log_segments == 2
        assert store.clean_expired(AT_FOUR).commit_log_segments == 2
        assert store.min_physical_offset == 4 * SEGMENT


def test_reads_keep_working_while_cleaning(store: MessageStore) -> None:
    age_segments(store.root, AT_FOUR, old=6)
    errors: list[BaseException] = []
    statuses: set[GetMessageStatus] = set()
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                for queue_id in range(2):
                    result = store.get_messages("RetT", queue_id, 0, 1000)
                    statuses.add(result.status)
                    if result.status is GetMessageStatus.FOUND:
                        decoded = decode_messages(result.body)
                        assert decoded[-1].queue_offset == 199
                    store.query_messages("RetT", "key5", 3)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for _ in range(3):
            store.clean_expired(AT_FOUR)
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert statuses <= {GetMessageStatus.FOUND, GetMessageStatus.OFFSET_TOO_SMALL}
    assert store.get_messages("RetT", 0, 0).status is GetMessageStatus.OFFSET_TOO_SMALL


def test_removed_offsets_stay_removed_after_restart(tmp_path: Path) -> None:
    with MessageStore(tmp_path, config(), disk_usage=Disk()) as store:
        fill(store, 400)
        store.flush_commit_log()
        age_segments(tmp_path, AT_FOUR, old=5)
        store.clean_expired(AT_FOUR)
        min_offsets = [store.get_min_offset("RetT", q) for q in range(2)]
    with MessageStore(tmp_path, config(), disk_usage=Disk()) as store:
        assert store.min_physical_offset == 5 * SEGMENT
        assert [store.get_min_offset("RetT", q) for q in range(2)] == min_offsets
        assert store.get_messages("RetT", 1, 0).status is GetMessageStatus.OFFSET_TOO_SMALL
        fill(store, 2)
        assert store.get_max_offset("RetT", 0) == 201
