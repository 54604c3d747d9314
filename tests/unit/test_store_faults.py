"""Faults injected at each place the store writes or syncs: whatever fails, every message the store
acknowledged is read back at the queue offset it was acknowledged with, and a store that could not keep
an acknowledgement refuses appends (SERVICE_NOT_AVAILABLE, with the reason) while reads go on."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.store import MessageStore, PutMessageStatus, StoreConfig
from broker.store.config import FlushDiskType
from broker.store.consume_queue import ConsumeQueue
from broker.store.health import Fault
from broker.store.index_file import IndexFile
from broker.store.segment import Segment
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt, decode_messages

CONFIG = StoreConfig(
    commit_log_segment_size=64 * 1024,
    consume_queue_entries_per_file=50,
    max_hash_slot_num=64,
    max_index_num=200,
)


def message(body: bytes, queue_id: int = 0, *, keys: str = "") -> MessageExt:
    return MessageExt(
        topic="Faults",
        body=body,
        queue_id=queue_id,
        properties_string=encode_properties({"KEYS": keys or None, "UNIQ_KEY": body.hex().upper()}),
        born_host="192.168.1.7:50000",
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    opened = MessageStore(tmp_path / "store", CONFIG, store_host="10.1.2.3:10911")
    opened.open()
    yield opened
    opened.close()


def read_queue(store: MessageStore, queue_id: int = 0) -> dict[int, bytes]:
    """Every message of a queue by its queue offset, read as a consumer would (pull by pull)."""
    found: dict[int, bytes] = {}
    offset = store.get_min_offset("Faults", queue_id)
    while True:
        result = store.get_messages("Faults", queue_id, offset, 32)
        if not result.messages:
            return found
        for queue_offset, record in zip(result.queue_offsets, decode_messages(result.body), strict=True):
            found[queue_offset] = record.body
        offset = result.next_begin_offset


class FailingWrites:
    """Makes consume-queue writes fail with ``error`` while ``failing`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, error: int) -> None:
        self.failing = True
        self.calls = 0
        real_put, real_run = ConsumeQueue.put, ConsumeQueue.put_run
        outer = self

        def put(queue: ConsumeQueue, *args: int) -> bool:
            outer._maybe_fail()
            return real_put(queue, *args)

        def put_run(queue: ConsumeQueue, *args: object) -> None:
            outer._maybe_fail()
            real_run(queue, *args)  # type: ignore[arg-type]

        self._error = error
        monkeypatch.setattr(ConsumeQueue, "put", put)
        monkeypatch.setattr(ConsumeQueue, "put_run", put_run)

    def _maybe_fail(self) -> None:
        self.calls += 1
        if self.failing:
            raise OSError(self._error, os.strerror(self._error))


async def test_a_failed_consume_queue_write_never_hands_an_offset_out_twice(
    store: MessageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fault found in the field: after one failed dispatch, the next send was answered with the
    offset the failed one already had, and the redone dispatch then skipped it for good."""
    acknowledged: dict[int, bytes] = {}
    first = store.put_message(message(b"m0"))
    acknowledged[first.queue_offset] = b"m0"
    await asyncio.sleep(0)
    faults = FailingWrites(monkeypatch, errno.EMFILE)
    second = store.put_message(message(b"m1"))  # acknowledged: its entry is written a turn later
    assert second.status is PutMessageStatus.PUT_OK
    acknowledged[second.queue_offset] = b"m1"
    await asyncio.sleep(0)  # the deferred dispatch fails here
    assert store.health.has(Fault.DISPATCH_FAILED)

    refused = store.put_message(message(b"refused"))
    assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert "consume queue" in refused.reason and "Too many open files" in refused.reason
    # Reads go on over what the queue holds.
    assert read_queue(store) == {0: b"m0"}

    faults.failing = False
    await asyncio.sleep(0.15)  # past the retry pause
    third = store.put_message(message(b"m2"))
    assert third.status is PutMessageStatus.PUT_OK
    acknowledged[third.queue_offset] = b"m2"
    assert sorted(acknowledged) == [0, 1, 2]
    assert read_queue(store) == acknowledged
    assert store.health.writable


def test_every_acknowledged_message_survives_a_restart_after_dispatch_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    store = MessageStore(root, CONFIG)
    store.open()
    acknowledged: dict[tuple[int, int], bytes] = {}
    faults = FailingWrites(monkeypatch, errno.ENOSPC)
    faults.failing = False
    for i in range(40):
        faults.failing = i % 7 == 3  # every seventh dispatch fails
        body = b"r%d" % i
        result = store.put_message(message(body, i % 2))
        if result.status is PutMessageStatus.PUT_OK:
            acknowledged[(i % 2, result.queue_offset)] = body
        else:
            assert result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    faults.failing = False
    assert len(acknowledged) > 20
    store.close()
    reopened = MessageStore(root, CONFIG)
    reopened.open()
    try:
        read = {(q, offset): body for q in (0, 1) for offset, body in read_queue(reopened, q).items()}
        assert read == acknowledged
    finally:
        reopened.close()


async def test_a_full_disk_while_indexing_refuses_sends_until_space_returns(
    store: MessageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new index file's blocks are reserved before the map writes them: a full disk fails the
    reservation (ENOSPC, no SIGBUS), the store refuses appends, and resumes once it can index again."""
    full = [True]
    real_fallocate = os.posix_fallocate

    def fallocate(fd: int, offset: int, length: int) -> None:
        if full[0]:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fallocate(fd, offset, length)

    monkeypatch.setattr("broker.store.index_file._reserve_blocks", fallocate)
    first = store.put_message(message(b"k0", keys="key-0"))
    assert first.status is PutMessageStatus.PUT_OK
    await asyncio.sleep(0)
    assert store.health.has(Fault.DISPATCH_FAILED)
    assert store.put_message(message(b"no")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    full[0] = False
    await asyncio.sleep(0.15)
    second = store.put_message(message(b"k1", keys="key-1"))
    assert second.status is PutMessageStatus.PUT_OK
    assert read_queue(store) == {0: b"k0", 1: b"k1"}
    assert [m.body for m in decode_messages(store.query_messages("Faults", "key-0", 4).body)] == [b"k0"]


def test_index_files_reserve_their_blocks_before_writing(tmp_path: Path) -> None:
    index = IndexFile.create(tmp_path / "idx", 64, 10_000)
    try:
        assert (tmp_path / "idx").stat().st_blocks <= 8  # sparse until something is indexed (a header page)
        index.put(["a", "b"], 100, 1_700_000_000_000)
        blocks = (tmp_path / "idx").stat().st_blocks * 512
        entries_end = 40 + 64 * 4 + 3 * 20
        assert blocks >= entries_end  # header, slots and the entries written are allocated
    finally:
        index.close()


async def test_a_failed_fsync_answers_timeout_and_no_later_send_is_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linux reports a lost writeback once: the fsync after it succeeds over the lost pages. So one failed
    fsync fails every waiting send and refuses every later one until the store is reopened."""
    root = tmp_path / "store"
    config = dataclasses.replace(CONFIG, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    store = MessageStore(root, config)
    await store.start()
    ok = await store.put_message_async(message(b"durable"))
    assert ok.status is PutMessageStatus.PUT_OK
    checkpoint_before = store.checkpoint().dispatched_offset

    failures = [OSError(errno.EIO, "Input/output error")]
    real_flush = Segment.flush

    def flush_once_failing(segment: Segment) -> bool:
        if failures:
            raise failures.pop()
        return real_flush(segment)  # the next fsync "succeeds", as Linux's would

    monkeypatch.setattr(Segment, "flush", flush_once_failing)
    lost = await store.put_message_async(message(b"maybe lost"))
    assert lost.status is PutMessageStatus.FLUSH_DISK_TIMEOUT
    assert store.health.has(Fault.FSYNC_FAILED)
    later = await store.put_message_async(message(b"later"))
    assert later.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert "fsync" in later.reason
    with pytest.raises(OSError, match="earlier fsync failed"):
        store.checkpoint()  # the checkpoint never moves past pages that may be lost
    assert read_queue(store)[0] == b"durable"  # reads go on
    await store.stop()

    assert (root / "abort").exists()  # the next open recovers as after a crash
    reopened = MessageStore(root, config)
    reopened.open()
    try:
        assert reopened.recovery is not None
        assert reopened.recovery.checkpoint_offset == checkpoint_before
        assert reopened.health.writable
        assert read_queue(reopened)[0] == b"durable"
    finally:
        reopened.close()


def test_the_disk_guard_refuses_sends_above_the_warning_level_and_lifts_below(tmp_path: Path) -> None:
    used = [0.5]
    store = MessageStore(tmp_path / "store", CONFIG, disk_usage=lambda path: used[0])
    store.open()
    try:
        assert store.put_message(message(b"before")).status is PutMessageStatus.PUT_OK
        used[0] = 0.93
        store.clean_expired()  # the periodic chore that checks the disk
        refused = store.put_message(message(b"refused"))
        assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert "93.0% of the disk is used" in refused.reason
        assert read_queue(store) == {0: b"before"}
        used[0] = 0.88  # under the warning level (90%), though retention still deletes forcibly here
        store.clean_expired()
        assert store.put_message(message(b"after")).status is PutMessageStatus.PUT_OK
        assert read_queue(store) == {0: b"before", 1: b"after"}
    finally:
        store.close()


def test_a_failed_commit_log_write_acknowledges_nothing_and_marks_the_disk_full(
    store: MessageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_room(segment: Segment, position: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    store.put_message(message(b"kept"))
    monkeypatch.setattr(Segment, "_write_fully", no_room)
    failed = store.put_message(message(b"not stored"))
    assert failed.status is PutMessageStatus.CREATE_MAPPED_FILE_FAILED
    assert store.health.has(Fault.DISK_FULL)
    monkeypatch.undo()
    store.check_disk()  # the real disk has room: the guard lifts the fault
    assert store.put_message(message(b"stored")).status is PutMessageStatus.PUT_OK
    assert read_queue(store) == {0: b"kept", 1: b"stored"}


def test_a_checkpoint_that_cannot_be_written_leaves_recovery_the_previous_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    store = MessageStore(root, CONFIG)
    store.open()
    kept = store.put_message(message(b"before"))
    good = store.checkpoint().dispatched_offset

    def disk_error(*args: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr("broker.store.message_store.save_checkpoint", disk_error)
    later = store.put_message(message(b"after"))
    with pytest.raises(OSError):
        store.checkpoint()
    assert store.health.writable  # the data files were synced; only the record of it failed
    store.close()  # logs the failure, releases the files
    monkeypatch.undo()
    reopened = MessageStore(root, CONFIG)
    reopened.open()
    try:
        assert reopened.recovery is not None and reopened.recovery.checkpoint_offset == good
        assert read_queue(reopened) == {kept.queue_offset: b"before", later.queue_offset: b"after"}
    finally:
        reopened.close()
