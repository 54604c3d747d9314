"""Flow control of a push consumer's queue reader: it stops pulling while the queue's window is full (by
count, by body size, or -- for concurrent consumption -- by offset span) and resumes as soon as handlers
make room. A scripted puller stands in for the broker, answering every pull at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from consumer import commands
from consumer.config import ConsumerConfig
from consumer.fetch import PullResult, PullStatus
from consumer.offset_store import LocalFileOffsetStore
from consumer.process_queue import ProcessQueue
from consumer.puller import Puller
from consumer.queue_reader import QueueReader, ReaderHooks
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.message import MessageExt

QUEUE = MessageQueue(topic="T", broker_name="b", queue_id=0)
LIMIT_S = 10


class ScriptedPuller(Puller):
    """Answers each pull with ``batch`` messages of ``body_size`` bytes, starting at the asked offset."""

    def __init__(self, batch: int, body_size: int = 1) -> None:
        self.batch = batch
        self.body_size = body_size
        self.offsets: list[int] = []
        self._changed = asyncio.Condition()

    async def pull(
        self,
        queue: MessageQueue,
        offset: int,
        spec: commands.PullSpec,
        tags: frozenset[str] | None,
        timeout_ms: float,
    ) -> PullResult:
        messages = [
            MessageExt(
                topic=queue.topic or "", queue_id=0, queue_offset=offset + i, body=b"x" * self.body_size
            )
            for i in range(self.batch)
        ]
        async with self._changed:
            self.offsets.append(offset)
            self._changed.notify_all()
        return PullResult(PullStatus.FOUND, offset + self.batch, 0, 1 << 40, 0, messages)

    async def wait_for_pulls(self, count: int) -> None:
        async with asyncio.timeout(LIMIT_S), self._changed:
            await self._changed.wait_for(lambda: len(self.offsets) >= count)


class WatchedWindow(ProcessQueue):
    """A process queue that reports each time the reader waits for room."""

    def __init__(self) -> None:
        super().__init__()
        self.waits = 0
        self._waited = asyncio.Condition()

    async def wait_for_room(self, timeout_s: float) -> None:
        async with self._waited:
            self.waits += 1
            self._waited.notify_all()
        await super().wait_for_room(timeout_s)

    async def wait_for_waits(self, count: int) -> None:
        async with asyncio.timeout(LIMIT_S), self._waited:
            await self._waited.wait_for(lambda: self.waits >= count)


def spec_for(queue: MessageQueue) -> commands.PullSpec:
    return commands.PullSpec(
        group="G",
        max_nums=32,
        sys_flag=0,
        commit_offset=0,
        suspend_timeout_ms=15_000,
        subscription=None,
        sub_version=0,
        expression_type="TAG",
    )


@pytest.fixture
async def reader_factory(tmp_path: Path) -> AsyncIterator[Any]:
    readers: list[QueueReader] = []

    def make(
        config: ConsumerConfig, puller: ScriptedPuller, *, orderly: bool = False
    ) -> tuple[QueueReader, WatchedWindow, list[MessageExt]]:
        window = WatchedWindow()
        delivered: list[MessageExt] = []

        async def moved(queue: MessageQueue, offset: int) -> None:
            raise AssertionError("no offset moves in these tests")

        hooks = ReaderHooks(
            spec_for=spec_for,
            tags_for=lambda queue: None,
            deliver=lambda messages, pq, queue, dispatch: delivered.extend(messages),
            offset_moved=moved,
            paused=lambda: False,
        )
        reader = QueueReader(
            QUEUE,
            window,
            0,
            config=config,
            puller=puller,
            offsets=LocalFileOffsetStore(tmp_path, "c", "G"),
            hooks=hooks,
            orderly=orderly,
            commit_offsets=False,
        )
        readers.append(reader)
        return reader, window, delivered

    yield make
    for reader in readers:
        await reader.stop()


async def _held_back(puller: ScriptedPuller, window: WatchedWindow, pulls: int) -> None:
    """The reader made ``pulls`` pulls and then waited for room twice without pulling again."""
    await puller.wait_for_pulls(pulls)
    await window.wait_for_waits(2)
    assert len(puller.offsets) == pulls


async def test_pulling_stops_at_the_message_count_threshold_and_resumes(reader_factory: Any) -> None:
    puller = ScriptedPuller(batch=5)
    reader, window, delivered = reader_factory(ConsumerConfig(pull_threshold_for_queue=10), puller)
    reader.start()
    await _held_back(puller, window, 3)  # 5, 10 (not over), 15 (over the threshold)
    assert window.count == 15 and len(delivered) == 15
    window.remove(delivered[:5])
    await puller.wait_for_pulls(4)
    assert puller.offsets == [0, 5, 10, 15]


async def test_pulling_stops_at_the_size_threshold(reader_factory: Any) -> None:
    puller = ScriptedPuller(batch=1, body_size=600 * 1024)
    reader, window, _ = reader_factory(ConsumerConfig(pull_threshold_size_for_queue_mib=1), puller)
    reader.start()
    await _held_back(puller, window, 2)
    assert window.size_bytes == 1200 * 1024


async def test_concurrent_consumption_bounds_the_offset_span(reader_factory: Any) -> None:
    puller = ScriptedPuller(batch=5)
    reader, window, delivered = reader_factory(ConsumerConfig(consume_max_span=20), puller)
    reader.start()
    await _held_back(puller, window, 5)  # offsets 0..24: a span of 24
    assert window.max_span == 24
    window.remove(delivered[:5])  # the slow first messages are done: span 19
    await puller.wait_for_pulls(6)


async def test_orderly_consumption_ignores_the_span(reader_factory: Any) -> None:
    puller = ScriptedPuller(batch=5)
    reader, window, _ = reader_factory(
        ConsumerConfig(consume_max_span=20, pull_threshold_for_queue=40), puller, orderly=True
    )
    reader.start()
    await _held_back(puller, window, 9)  # only the count (45 > 40) holds it back
    assert window.max_span == 44
