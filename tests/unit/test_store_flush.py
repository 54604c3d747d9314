"""Flushing: SYNC group commit shares fsyncs and acknowledges only durable data; ASYNC flushes on a timer."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from broker.store import FlushDiskType, MessageStore, PutMessageResult, PutMessageStatus, StoreConfig
from broker.store import flush as flush_module
from broker.store.checkpoint import load_checkpoint
from broker.store.flush import GATHER_TURNS, GroupCommitService
from broker.store.segment_queue import SegmentQueue
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt, decode_messages


def message(body: bytes, queue_id: int = 0, wait: bool = True) -> MessageExt:
    properties = {} if wait else {"WAIT": "false"}
    return MessageExt(
        topic="FlushT",
        body=body,
        queue_id=queue_id,
        properties_string=encode_properties(properties),
        born_host="127.0.0.1:1",
    )


def sync_config(**overrides: object) -> StoreConfig:
    return StoreConfig(
        commit_log_segment_size=256 * 1024,
        flush_disk_type=FlushDiskType.SYNC_FLUSH,
        **overrides,  # type: ignore[arg-type]
    )


async def test_group_commit_acknowledges_many_appends_with_few_fsyncs(tmp_path: Path) -> None:
    store = MessageStore(tmp_path, sync_config())
    await store.start()
    try:
        before = store.sync_count

        async def append(i: int) -> tuple[int, int]:
            result = await store.put_message_async(message(b"m%04d" % i, queue_id=i % 4))
            assert result.status is PutMessageStatus.PUT_OK
            end = result.wrote_offset + result.wrote_bytes
            # Resolved means durable: an fsync has covered this message's last byte.
            assert store.flushed_physical_offset >= end
            return result.queue_offset, end

        results = await asyncio.gather(*(append(i) for i in range(300)))
        fsyncs = store.sync_count - before
        assert 1 <= fsyncs < 30
        assert len({end for _, end in results}) == 300
        for queue_id in range(4):
            got = store.get_messages("FlushT", queue_id, 0, 1000)
            assert got.max_offset == 75
    finally:
        await store.stop()


def fsync_on_the_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every round of group commit on the store's fsync thread, where these tests hold it up."""
    monkeypatch.setattr(flush_module, "INLINE_FSYNC_MAX_S", 0.0)


async def test_sync_append_waits_for_its_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fsync_on_the_thread(monkeypatch)
    started = threading.Event()
    gate = threading.Event()
    original: Callable[[SegmentQueue], int] = SegmentQueue.flush

    def gated_flush(self: SegmentQueue) -> int:
        if threading.current_thread().name.startswith("store-fsync"):
            started.set()
            gate.wait(10)
        return original(self)

    store = MessageStore(tmp_path, sync_config())
    await store.start()
    monkeypatch.setattr(SegmentQueue, "flush", gated_flush)
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(1) as waiter:
        try:
            task = asyncio.create_task(store.put_message_async(message(b"durable")))
            assert await loop.run_in_executor(waiter, started.wait, 10)
            assert not task.done()
            assert store.flushed_physical_offset == 0
            gate.set()
            result = await task
            assert result.status is PutMessageStatus.PUT_OK
            assert store.flushed_physical_offset >= result.wrote_offset + result.wrote_bytes
        finally:
            gate.set()
            await store.stop()


async def test_slow_fsync_answers_flush_disk_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fsync_on_the_thread(monkeypatch)
    gate = threading.Event()
    original: Callable[[SegmentQueue], int] = SegmentQueue.flush

    def stuck_flush(self: SegmentQueue) -> int:
        if threading.current_thread().name.startswith("store-fsync"):
            gate.wait(10)
        return original(self)

    store = MessageStore(tmp_path, sync_config(sync_flush_timeout_ms=50))
    await store.start()
    monkeypatch.setattr(SegmentQueue, "flush", stuck_flush)
    try:
        result = await store.put_message_async(message(b"late"))
        assert result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT
        # Stored all the same, as Apache's FLUSH_DISK_TIMEOUT is.
        assert decode_messages(store.get_messages("FlushT", 0, 0).body)[0].body == b"late"
        # A producer that does not wait (WAIT=false) is answered at once.
        quick = await store.put_message_async(message(b"nowait", wait=False))
        assert quick.status is PutMessageStatus.PUT_OK
    finally:
        gate.set()
        await store.stop()


async def test_async_mode_flushes_and_checkpoints_on_a_timer(tmp_path: Path) -> None:
    config = StoreConfig(
        commit_log_segment_size=256 * 1024,
        flush_interval_commit_log_ms=10,
        flush_interval_consume_queue_ms=20,
    )
    store = MessageStore(tmp_path, config)
    store.open()
    flushed = threading.Event()
    checkpointed = threading.Event()
    real_flush = store._commit_log.flush
    real_checkpoint = store.checkpoint

    def observed_flush() -> int:
        offset = real_flush()
        if offset >= store.max_physical_offset > 0:
            flushed.set()
        return offset

    def observed_checkpoint() -> object:
        result = real_checkpoint()
        if result.dispatched_offset > 0:
            checkpointed.set()
        return result

    store._commit_log.flush = observed_flush  # type: ignore[method-assign]
    store.checkpoint = observed_checkpoint  # type: ignore[assignment,method-assign]
    await store.start()
    loop = asyncio.get_running_loop()
    try:
        result = await store.put_message_async(message(b"async"))
        assert result.status is PutMessageStatus.PUT_OK
        with ThreadPoolExecutor(2) as waiter:
            assert await loop.run_in_executor(waiter, flushed.wait, 10)
            assert await loop.run_in_executor(waiter, checkpointed.wait, 10)
        assert store.flushed_physical_offset >= result.wrote_offset + result.wrote_bytes
        checkpoint = load_checkpoint(tmp_path)
        assert checkpoint is not None and checkpoint.dispatched_offset == store.max_physical_offset
    finally:
        await store.stop()
    assert not store.is_open


async def test_group_commit_service_resolves_waiters_by_offset() -> None:
    durable = 0
    calls = 0
    lock = threading.Lock()

    def flush() -> int:
        nonlocal durable, calls
        with lock:
            calls += 1
            durable = target
            return durable

    target = 100
    with ThreadPoolExecutor(1) as executor:
        service = GroupCommitService(flush, lambda: durable, executor)
        results = await asyncio.gather(*(service.wait_durable(offset, 5) for offset in (10, 50, 100)))
        assert results == [True, True, True]
        assert calls == 1
        assert await service.wait_durable(80, 5)  # already durable: no fsync needed
        assert calls == 1
        target = 150
        assert not await service.wait_durable(400, 0.2)  # the flush never gets there
        await service.close()
        assert not await service.wait_durable(500, 1)


async def test_group_commit_waits_time_out_each_at_its_own_deadline() -> None:
    """One timer serves every wait; a later wait with a shorter timeout still ends first."""

    def flush() -> int:
        return 0  # the disk never gets anywhere

    with ThreadPoolExecutor(1) as executor:
        service = GroupCommitService(flush, lambda: 0, executor)
        loop = asyncio.get_running_loop()
        started = loop.time()
        ended: dict[str, tuple[bool, float]] = {}

        async def wait(name: str, offset: int, timeout: float) -> None:
            durable = await service.wait_durable(offset, timeout)
            ended[name] = (durable, loop.time() - started)

        await asyncio.gather(wait("long", 10, 0.5), wait("short", 20, 0.1))
        await service.close()
    assert ended["short"][0] is False and ended["long"][0] is False
    assert 0.1 <= ended["short"][1] < 0.4
    assert ended["long"][1] >= 0.5


class _Disk:
    """A flush that records which thread ran it and takes ``delay`` seconds on its own clock (``now``, the
    service's clock): the wall clock would make a fast flush slow whenever a loaded machine preempts the
    test. ``stall`` holds the flush up for real, for a round that must still be running meanwhile."""

    def __init__(self) -> None:
        self.durable = 0
        self.delay = 0.0
        self.stall = 0.0
        self.now = 0.0
        self.threads: list[int] = []

    def flush(self) -> int:
        self.threads.append(threading.get_ident())
        self.now += self.delay
        if self.stall:
            time.sleep(self.stall)
        self.durable += 100
        return self.durable

    def clock(self) -> float:
        return self.now

    def on_loop(self, rounds: slice) -> list[bool]:
        return [ident == threading.get_ident() for ident in self.threads[rounds]]


async def test_group_commit_fsyncs_on_the_loop_while_the_disk_is_fast_and_on_its_thread_once_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(flush_module, "INLINE_RETRY_S", 0.2)
    disk = _Disk()
    with ThreadPoolExecutor(1) as executor:
        service = GroupCommitService(disk.flush, lambda: disk.durable, executor, clock=disk.clock)
        for _ in range(3):
            assert await service.wait_durable(disk.durable + 1, 5)
        assert disk.on_loop(slice(0, 3)) == [True, True, True]  # a fast disk: no thread handoff
        disk.delay = 0.2 * flush_module.INLINE_FSYNC_MAX_S  # a little slower: the loop keeps it
        assert await service.wait_durable(disk.durable + 1, 5)
        # One stall lifts the average past the limit at once: the next rounds go to the thread.
        disk.delay = 2 * flush_module.INLINE_FSYNC_MAX_S / flush_module.INLINE_WEIGHT
        for _ in range(3):
            assert await service.wait_durable(disk.durable + 1, 5)
        assert disk.on_loop(slice(3, 7)) == [True, True, False, False]
        disk.delay = 0.0
        await asyncio.sleep(0.25)  # past INLINE_RETRY_S, but the thread's last round was slow: not yet
        for _ in range(2):
            assert await service.wait_durable(disk.durable + 1, 5)
        assert disk.on_loop(slice(7, 9)) == [False, True]  # after a quick one: back on the loop
        assert (service.rounds, service.inline_rounds) == (9, 6)
        await service.close()


async def test_group_commit_keeps_a_stalling_disk_off_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round on the thread slower than INLINE_RETRY_UNDER_S: no retry on the loop, however long ago."""
    monkeypatch.setattr(flush_module, "INLINE_RETRY_S", 0.0)
    disk = _Disk()
    with ThreadPoolExecutor(1) as executor:
        service = GroupCommitService(disk.flush, lambda: disk.durable, executor, clock=disk.clock)
        disk.delay = 2 * flush_module.INLINE_RETRY_UNDER_S
        for _ in range(3):
            assert await service.wait_durable(disk.durable + 1, 5)
        assert disk.on_loop(slice(0, 3)) == [True, False, False]
        disk.delay = 0.0
        for _ in range(2):  # the first fast round on the thread lets the next one onto the loop
            assert await service.wait_durable(disk.durable + 1, 5)
        assert disk.on_loop(slice(3, 5)) == [False, True]
        await service.close()


async def test_appends_of_one_turn_share_one_fsync_on_the_loop(tmp_path: Path) -> None:
    store = MessageStore(tmp_path, sync_config())
    await store.start()
    try:
        before = store.sync_count
        results = await asyncio.gather(*(store.put_message_async(message(b"m%d" % i)) for i in range(20)))
        assert all(r.status is PutMessageStatus.PUT_OK for r in results)
        assert store.sync_count - before == 1
        group_commit = store._group_commit
        assert group_commit is not None and group_commit.inline_rounds == 1
    finally:
        await store.stop()


async def test_verdict_callbacks_are_called_from_the_round_and_one_that_raises_spares_the_rest() -> None:
    durable = 0

    def flush() -> int:  # the disk gets to offset 100 and no further
        nonlocal durable
        durable = 100
        return durable

    with ThreadPoolExecutor(1) as executor:
        service = GroupCommitService(flush, lambda: durable, executor)
        heard: list[tuple[str, bool]] = []

        def broken(durable: bool) -> None:
            raise RuntimeError("a waiter that cannot take its verdict")

        assert service.when_durable(50, 5, lambda durable: heard.append(("first", durable))) is None
        assert service.when_durable(60, 5, broken) is None
        assert service.when_durable(70, 5, lambda durable: heard.append(("third", durable))) is None
        assert heard == []  # nothing is called back from inside when_durable
        for _ in range(5):
            await asyncio.sleep(0)
        assert heard == [("first", True), ("third", True)] and service.rounds == 1
        assert service.when_durable(100, 5, lambda durable: heard.append(("late", durable))) is True
        assert service.when_durable(10_000, 0.05, lambda durable: heard.append(("never", durable))) is None
        await asyncio.sleep(0.2)
        assert heard[2:] == [("never", False)]  # the flush never gets there: a timeout, once
        await service.close()
        assert service.when_durable(20_000, 5, lambda durable: heard.append(("closed", durable))) is False


async def test_put_then_answers_at_once_without_a_wait_and_through_the_callback_with_one(
    tmp_path: Path,
) -> None:
    store = MessageStore(tmp_path, sync_config())
    await store.start()
    try:
        heard: list[PutMessageResult] = []
        no_wait = store.put_messages_then([message(b"fire and forget", wait=False)], heard.append)
        assert no_wait is not None and no_wait.status is PutMessageStatus.PUT_OK and heard == []
        assert store.put_messages_then([message(b"durable")], heard.append) is None
        assert heard == []
        for _ in range(5):
            await asyncio.sleep(0)
        assert [r.status for r in heard] == [PutMessageStatus.PUT_OK]
        assert (
            heard[0].queue_offset == 1
            and store.flushed_physical_offset >= heard[0].wrote_offset + heard[0].wrote_bytes
        )
    finally:
        await store.stop()


async def test_rounds_run_as_loop_callbacks_without_a_task() -> None:
    disk = _Disk()
    with ThreadPoolExecutor(1) as executor:
        service = GroupCommitService(disk.flush, lambda: disk.durable, executor, clock=disk.clock)
        tasks_before = len(asyncio.all_tasks())
        heard: list[bool] = []
        for offset in range(1, 40):
            service.when_durable(offset, 5, heard.append)
        assert len(asyncio.all_tasks()) == tasks_before
        for _ in range(5):
            await asyncio.sleep(0)
        assert heard == [True] * 39 and service.rounds == service.inline_rounds == 1
        await service.close()


async def test_a_round_on_the_loop_takes_in_the_waits_of_the_turns_it_lets_pass() -> None:
    written = 0
    fsyncs: list[int] = []

    def flush() -> int:  # durable up to whatever was written when the round ran
        fsyncs.append(written)
        return written

    with ThreadPoolExecutor(1) as executor:
        service = GroupCommitService(flush, lambda: fsyncs[-1] if fsyncs else 0, executor)
        heard: list[int] = []

        def hear(offset: int, durable: bool) -> None:
            assert durable
            heard.append(offset)

        # One append per loop turn. The round becomes due on the turn after the first one's wait and
        # fsyncs GATHER_TURNS turns later: the waits begun until then share it, the next starts another.
        shared = GATHER_TURNS + 1
        for offset in range(1, shared + 2):
            written = offset
            assert service.when_durable(offset, 5, functools.partial(hear, offset)) is None
            await asyncio.sleep(0)
        for _ in range(GATHER_TURNS + 3):
            await asyncio.sleep(0)
        assert fsyncs == [shared, shared + 1]
        assert heard == list(range(1, shared + 2)) and service.rounds == 2
        await service.close()


async def test_closing_lets_the_round_on_the_thread_finish_and_fails_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(flush_module, "INLINE_FSYNC_MAX_S", 0)  # every round on the thread
    disk = _Disk()
    disk.stall = 0.1
    with ThreadPoolExecutor(1) as executor:
        service = GroupCommitService(disk.flush, lambda: disk.durable, executor, clock=disk.clock)
        heard: list[tuple[int, bool]] = []
        service.when_durable(50, 5, lambda durable: heard.append((50, durable)))
        await asyncio.sleep(0.02)  # the round is on the thread now, covering offset 100
        service.when_durable(150, 5, lambda durable: heard.append((150, durable)))
        await service.close()
        assert heard == [(50, True), (150, False)] and disk.threads[0] != threading.get_ident()


@pytest.mark.parametrize(
    ("properties", "waits"),
    [
        ({}, True),
        ({"WAIT": "true"}, True),
        ({"WAIT": "false"}, False),
        ({"NOWAIT": "false"}, True),  # contains the text WAIT<sep>false, but is another property
        ({"NOWAIT": "false", "WAIT": "false"}, False),
        ({"KEYS": "WAIT\x01false"}, True),  # a value cannot hold the separator, but the check is exact anyway
    ],
)
def test_which_messages_wait_for_the_store(properties: dict[str, str], waits: bool) -> None:
    one = MessageExt(topic="FlushT", body=b"x", properties_string=encode_properties(properties))
    assert MessageStore._waits_for_store([one]) is waits
    assert MessageStore._waits_for_store([message(b"no", wait=False), one]) is waits
