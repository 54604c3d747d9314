"""Consume-queue files are opened on demand in a bounded cache of open files (see
:mod:`broker.store.segment`): a store with far more queues than the process has descriptors creates,
writes, reads, flushes and reopens them all, and a file closed for room loses nothing."""

from __future__ import annotations

import dataclasses
import errno
import os
import resource
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from broker.store import MessageStore, PutMessageStatus, StoreConfig
from broker.store import segment as segment_module
from broker.store.consume_queue import ConsumeQueue
from broker.store.queue_table import QueueTable
from broker.store.segment import OpenFileCache, Segment, default_open_files
from rocketmq_wire.message.stored import MessageExt, decode_messages

PROC_FD = Path("/proc/self/fd")
needs_proc = pytest.mark.skipif(not PROC_FD.is_dir(), reason="counts descriptors in /proc/self/fd (Linux)")

BOUND = 8
#: Descriptors a test may see beyond the bound: a flush's own descriptor, a checkpoint being written,
#: the listing of a directory, what the interpreter opens meanwhile.
SLACK = 6

CONFIG = StoreConfig(
    commit_log_segment_size=256 * 1024,
    consume_queue_entries_per_file=4,
    max_hash_slot_num=64,
    max_index_num=4000,
)


def open_descriptors() -> int:
    return len(os.listdir(PROC_FD))


def entry_of(queue_number: int, index: int) -> tuple[int, int, int]:
    """The (commit-log offset, size, tag code) written at ``index`` of queue ``queue_number``."""
    return (queue_number * 1_000_000 + index * 100, 50 + index, queue_number - index)


def test_the_default_bound_is_a_share_of_the_descriptor_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    for soft, expected in [(256, 64), (4096, 1024), (1_000_000, 1024), (20, 16)]:
        monkeypatch.setattr(resource, "getrlimit", lambda which, soft=soft: (soft, soft))
        assert default_open_files() == expected
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert default_open_files() == segment_module.MAX_OPEN_FILES
    assert OpenFileCache().limit == segment_module.MAX_OPEN_FILES
    assert OpenFileCache(5).limit == 5


@needs_proc
@pytest.mark.parametrize("native", [True, False], ids=["FileMap", "no accelerator"])
def test_many_queues_within_a_small_bound_read_back_exactly_after_flush_and_reopen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    """With the accelerator the files are written through maps (closed with their files), without it
    with ``pwrite``."""
    if not native:
        monkeypatch.setattr(segment_module, "_c", None)
    root = tmp_path / "consumequeue"
    queues, per_queue = 200, 10  # 3 files a queue (4 entries each): 600 files, 8 open at most
    before = open_descriptors()
    table = QueueTable(root, 4, max_open_files=BOUND)
    most = 0
    for index in range(per_queue):  # round robin, the worst order for an LRU
        for number in range(queues):
            queue = table.get_or_create(f"T{number // 8}", number % 8)
            assert queue.put(index, *entry_of(number, index))
            most = max(most, open_descriptors() - before)
    assert len(table.open_files) <= BOUND and most <= BOUND + SLACK
    assert table.open_files.evictions > 0

    def read_all(table: QueueTable) -> None:
        for number in range(queues):
            queue = table.get(f"T{number // 8}", number % 8)
            assert queue is not None and (queue.min_offset, queue.max_offset) == (0, per_queue)
            entries = queue.read(0, 100)
            assert entries is not None
            assert [(e.commit_log_offset, e.size, e.tags_code) for e in entries] == [
                entry_of(number, index) for index in range(per_queue)
            ]

    read_all(table)
    assert open_descriptors() - before <= BOUND + SLACK
    for queue in table:
        queue.flush()
        assert queue._files.flushed_offset == queue._files.max_offset  # every file, open or not
    assert open_descriptors() - before <= BOUND + SLACK
    table.close()
    assert open_descriptors() == before

    reopened = QueueTable(root, 4, max_open_files=BOUND)
    reopened.load()
    assert len(reopened) == queues and len(reopened.open_files) == 0  # loading opens nothing
    assert open_descriptors() == before
    for queue in reopened:
        queue.recover()
        assert open_descriptors() - before <= BOUND + SLACK
    read_all(reopened)
    for queue in reopened:  # and they go on where they left off
        number = int(queue.topic[1:]) * 8 + queue.queue_id
        assert queue.put(per_queue, *entry_of(number, per_queue))
    for queue in reopened:
        number = int(queue.topic[1:]) * 8 + queue.queue_id
        last = queue.last()
        assert last is not None and (last.commit_log_offset, last.size) == entry_of(number, per_queue)[:2]
    reopened.close()
    assert open_descriptors() == before


def test_a_file_closed_for_room_keeps_its_positions_blocks_and_size(tmp_path: Path) -> None:
    files = OpenFileCache(1)
    first = ConsumeQueue(tmp_path, "T", 0, 100, open_files=files)
    second = ConsumeQueue(tmp_path, "T", 1, 100, open_files=files)
    for index in range(5):
        first.put(index, *entry_of(0, index))
    segment = first._files.last
    assert segment is not None and segment.is_open
    reserved, size = segment._reserved, segment.path.stat().st_size
    blocks = segment.path.stat().st_blocks
    second.put(0, *entry_of(1, 0))  # the only slot goes to the other queue's file
    assert not segment.is_open and segment._map is None and not segment.closed
    assert (segment.write_position, segment.flushed_position, segment._reserved) == (100, 0, reserved)
    assert segment.path.stat().st_size == size and segment.path.stat().st_blocks == blocks
    first.put(5, *entry_of(0, 5))  # opened again: appended after what was there, nothing cut or grown
    assert segment.is_open and segment.write_position == 120
    assert segment.path.stat().st_size == size and segment.path.stat().st_blocks == blocks
    assert segment._map is None  # not mapped again for one write ...
    written = 6 + segment_module.REMAP_AFTER_WRITES
    for index in range(6, written):
        first.put(index, *entry_of(0, index))
    if segment._mappable:
        assert segment._map is not None  # ... but once it proves busy
    entries = first.read(0, 100)
    assert entries is not None
    assert [(e.commit_log_offset, e.size, e.tags_code) for e in entries] == [
        entry_of(0, i) for i in range(written)
    ]
    first.close()
    second.close()


def test_a_file_written_then_closed_for_room_is_synced_by_its_next_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_sync = segment_module._sync_data

    def recording(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}") if PROC_FD.is_dir() else str(fd))
        real_sync(fd)

    monkeypatch.setattr(segment_module, "_sync_data", recording)
    files = OpenFileCache(1)
    written = ConsumeQueue(tmp_path, "T", 0, 100, open_files=files)
    other = ConsumeQueue(tmp_path, "T", 1, 100, open_files=files)
    written.put(0, *entry_of(0, 0))
    other.put(0, *entry_of(1, 0))  # evicts the written file before any flush
    segment = written._files.last
    assert segment is not None and not segment.is_open
    before = open_descriptors() if PROC_FD.is_dir() else 0
    written.flush()
    assert segment.flushed_position == segment.write_position == 20  # the dirty marker outlived the close
    if PROC_FD.is_dir():
        assert synced == [str(segment.path)]  # a descriptor of that very file
        assert open_descriptors() == before  # the flush's own descriptor is closed again
    assert not segment.is_open  # a flush never takes a place in the cache
    written.flush()
    assert len(synced) == 1  # nothing new: no fsync
    written.close()
    other.close()


def _segments(count: int, files: OpenFileCache, directory: Path) -> list[Segment]:
    directory.mkdir(parents=True, exist_ok=True)
    made = []
    for start in range(count):
        segment = Segment.create(directory, start * 64, 64, files=files)
        segment.append(b"x")
        made.append(segment)
    return made


def test_out_of_descriptors_the_cache_closes_half_of_its_files_and_tries_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = OpenFileCache(8)
    segments = _segments(8, files, tmp_path)
    segments[0].close()  # closed for good: the other seven stay open
    queue = ConsumeQueue(tmp_path / "cq", "T", 0, 100, open_files=files)
    queue.put(0, *entry_of(0, 0))
    target = queue._files.last
    assert target is not None
    files._shed(8)  # the queue's file is closed for room
    assert len(files) == 0
    for segment in segments[1:]:
        segment.read(0, 1)  # seven files open again, the queue's is not
    real_open = os.open
    refused: list[str] = []

    def emfile_once(path: object, flags: int, *args: int) -> int:
        if not refused and str(path) == str(target.path):
            refused.append(str(path))
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", emfile_once)
    assert queue.put(1, *entry_of(0, 1))  # a process out of descriptors: the write still goes through
    assert refused and target.is_open and len(files) == 7 - 3 + 1  # three of seven closed, the queue's opened
    entries = queue.read(0, 10)
    assert entries is not None and [(e.commit_log_offset, e.size, e.tags_code) for e in entries] == [
        entry_of(0, 0),
        entry_of(0, 1),
    ]
    queue.close()
    for segment in segments:
        segment.close()
    assert len(files) == 0


def test_a_pinned_file_is_never_closed_under_its_flush(tmp_path: Path) -> None:
    files = OpenFileCache(2)
    first, *others = _segments(2, files, tmp_path)
    pinned = files.pin(first)
    assert pinned is not None and pinned == (first._fd, False)
    more = _segments(4, files, tmp_path / "more")  # would evict ``first`` four times over
    assert first.is_open and os.fstat(pinned[0]).st_size == 64
    assert more[-1].is_open and not more[0].is_open and not others[0].is_open
    first.destroy()  # retention deletes it meanwhile: the descriptor outlives the flush's fsync
    assert first.closed and not first.path.exists()
    os.fsync(pinned[0])
    files.unpin(first)
    assert not first.is_open
    with pytest.raises(OSError):
        os.fstat(pinned[0])
    assert files.pin(first) is None  # closed for good: nothing to flush


def test_a_closed_file_can_be_deleted_and_a_closed_queue_is_not_reopened(tmp_path: Path) -> None:
    files = OpenFileCache(1)
    first, second = _segments(2, files, tmp_path)
    assert not first.is_open and second.is_open
    first.destroy()
    assert not first.path.exists() and first.closed
    second.close()
    assert len(files) == 0
    with pytest.raises(OSError):
        second.read(0, 1)  # closed for good: the cache does not open it behind the owner's back


@needs_proc
def test_flushing_threads_race_eviction_without_syncing_a_wrong_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint flushes queues on a thread of its own while appends evict files: every fsync must
    land on a descriptor of the file it is for (a descriptor closed and reused for another file would
    make ``flushed_position`` a lie)."""
    wrong: list[tuple[str, str]] = []
    syncs = [0]
    flushing = threading.local()  # the segment each thread is flushing
    real_sync = segment_module._sync_data
    real_flush_cached = Segment._flush_cached

    def verifying_flush(segment: Segment, files: OpenFileCache, target: int) -> bool:
        flushing.segment = segment
        return real_flush_cached(segment, files, target)

    def verifying_sync(fd: int) -> None:
        expected = str(flushing.segment.path)
        found = os.readlink(f"/proc/self/fd/{fd}")
        if found != expected:
            wrong.append((expected, found))
        syncs[0] += 1
        real_sync(fd)

    monkeypatch.setattr(Segment, "_flush_cached", verifying_flush)
    monkeypatch.setattr(segment_module, "_sync_data", verifying_sync)
    table = QueueTable(tmp_path, 16, max_open_files=4)
    queues = [table.get_or_create("Race", number) for number in range(40)]
    lock = threading.Lock()  # the store's lock: the owner's side of the queues
    stop = threading.Event()
    errors: list[BaseException] = []

    def flusher() -> None:
        try:
            while not stop.is_set():
                with lock:
                    snapshot = list(table)
                for queue in snapshot:  # outside the lock, as MessageStore.checkpoint flushes
                    queue.flush()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=flusher) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for index in range(200):
            for number, queue in enumerate(queues):
                with lock:
                    assert queue.put(index, *entry_of(number, index))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not errors and not wrong and syncs[0] > 0
    for number, queue in enumerate(queues):
        queue.flush()
        assert queue._files.flushed_offset == queue._files.max_offset
        entries = queue.read(0, 1000)
        assert entries is not None
        assert [(e.commit_log_offset, e.size, e.tags_code) for e in entries] == [
            entry_of(number, index) for index in range(200)
        ]
    table.close()


# --- the whole store ----------------------------------------------------------------------------------------


def message(topic: str, queue_id: int, body: bytes) -> MessageExt:
    return MessageExt(topic=topic, body=body, queue_id=queue_id, born_host="192.168.1.7:50000")


def read_queue(store: MessageStore, topic: str, queue_id: int) -> list[bytes]:
    bodies: list[bytes] = []
    offset = store.get_min_offset(topic, queue_id)
    while True:
        result = store.get_messages(topic, queue_id, offset, 32)
        if not result.messages:
            return bodies
        bodies.extend(record.body for record in decode_messages(result.body))
        offset = result.next_begin_offset


@needs_proc
def test_a_store_with_200_queues_keeps_within_the_bound_across_a_reopen(tmp_path: Path) -> None:
    root = tmp_path / "store"
    topics, rounds = 25, 6  # 25 topics x 8 queues; 6 messages each: two files a queue
    before = open_descriptors()
    bounded = dataclasses.replace(CONFIG, max_open_consume_queue_files=BOUND)
    store = MessageStore(root, bounded)
    store.open()
    baseline = open_descriptors() - before  # the commit log, the index, the lock
    most = 0
    for index in range(rounds):
        for topic in range(topics):
            for queue_id in range(8):
                body = f"{topic}/{queue_id}/{index}".encode()
                assert store.put_message(message(f"T{topic}", queue_id, body)).ok
                most = max(most, open_descriptors() - before)
    expected = {
        (f"T{topic}", queue_id): [f"{topic}/{queue_id}/{index}".encode() for index in range(rounds)]
        for topic in range(topics)
        for queue_id in range(8)
    }
    for (topic_name, queue_id), bodies in expected.items():
        assert read_queue(store, topic_name, queue_id) == bodies
    store.checkpoint()
    most = max(most, open_descriptors() - before)
    # The commit log may roll over while the test runs: one more file.
    assert most <= baseline + 1 + BOUND + SLACK
    store.close()
    assert open_descriptors() == before

    reopened = MessageStore(root, bounded)
    reopened.open()
    try:
        assert open_descriptors() - before <= baseline + BOUND + SLACK
        for (topic_name, queue_id), bodies in expected.items():
            assert read_queue(reopened, topic_name, queue_id) == bodies
        assert open_descriptors() - before <= baseline + BOUND + SLACK
    finally:
        reopened.close()
    assert open_descriptors() == before


_LOW_LIMIT_SCRIPT = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path
    from broker.store import MessageStore, StoreConfig
    from rocketmq_wire.message.stored import MessageExt, decode_messages

    root, topics, limit = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    config = StoreConfig(
        commit_log_segment_size=1024 * 1024,
        consume_queue_entries_per_file=4,
        max_hash_slot_num=64,
        max_index_num=20000,
    )
    store = MessageStore(root, config)
    store.open()
    for topic in range(topics):
        for queue_id in range(8):
            body = f"second {topic}/{queue_id}".encode()
            message = MessageExt(topic=f"T{topic}", body=body, queue_id=queue_id, born_host="10.0.0.1:1")
            assert store.put_message(message).ok
    store.checkpoint()
    for topic in range(topics):
        for queue_id in range(8):
            result = store.get_messages(f"T{topic}", queue_id, 0, 32)
            bodies = [record.body for record in decode_messages(result.body)]
            expected = [f"{which} {topic}/{queue_id}".encode() for which in ("first", "second")]
            assert bodies == expected, bodies
    store.close()
    print("ok", topics * 8)
    """
)


def test_a_store_with_more_queue_files_than_descriptors_starts_writes_and_reads_them(tmp_path: Path) -> None:
    root = tmp_path / "store"
    topics, limit = 250, 256  # 2,000 queues (2,000 files) under a limit of 256 descriptors
    config = StoreConfig(
        commit_log_segment_size=1024 * 1024,
        consume_queue_entries_per_file=4,
        max_hash_slot_num=64,
        max_index_num=20000,
    )
    store = MessageStore(root, config)
    store.open()
    for topic in range(topics):
        for queue_id in range(8):
            body = f"first {topic}/{queue_id}".encode()
            result = store.put_message(message(f"T{topic}", queue_id, body))
            assert result.status is PutMessageStatus.PUT_OK
    store.close()
    files = sum(1 for _ in (root / "consumequeue").glob("*/*/*"))
    assert files == topics * 8 > limit
    done = subprocess.run(
        [sys.executable, "-c", _LOW_LIMIT_SCRIPT, str(root), str(topics), str(limit)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok", str(topics * 8)]
