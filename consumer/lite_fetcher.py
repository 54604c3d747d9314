"""What runs behind ``PullConsumer.poll``: a fetcher task per queue and the buffer they fill.

Each fetcher long-polls its queue (the broker holds a pull up to 20 s when there is nothing new) and appends
what comes to one shared buffer, within Java's limits: per queue (count, bytes, offset span, as for a push
consumer) and in total (``pull_threshold_for_all``). Moving a queue (seek, an operator's reset) bumps its
*epoch*: batches and pull answers from before the move are recognised and ignored, so no stale message is
handed out after a seek.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
from collections.abc import Callable

from consumer import commands, filters
from consumer.core import ConsumerCore
from consumer.errors import ConsumerError
from consumer.fetch import PullStatus
from consumer.process_queue import ProcessQueue
from consumer.subscription import tag_filter
from rocketmq_wire.bodies.heartbeat import SUB_ALL, SubscriptionData
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.subscription import build_subscription
from rocketmq_wire.message import MessageExt, sysflag
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("consumer.lite_fetcher")

#: Java's ``DefaultLitePullConsumer`` defaults.
LITE_BROKER_SUSPEND_MS = 20_000
LITE_DELAY_WHEN_EXCEPTION_MS = 1_000
FLOW_CONTROL_DELAY_MS = 50
#: Java's ``Integer.MAX_VALUE``, what a 5.x lite pull asks for as ``maxMsgBytes``.
_NO_BYTE_LIMIT = 0x7FFFFFFF


@dataclasses.dataclass(eq=False)
class FetchedQueue:
    """One assigned queue: its window, where to pull next, where the caller has consumed up to."""

    queue: MessageQueue
    pq: ProcessQueue = dataclasses.field(default_factory=ProcessQueue)
    pull_offset: int = -1
    consume_offset: int = -1
    seek_offset: int = -1
    paused: bool = False
    epoch: int = 0
    task: asyncio.Task[None] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class PolledBatch:
    """Messages of one queue, in offset order, as :meth:`~consumer.PullConsumer.poll_batch` returns them."""

    queue: MessageQueue
    messages: list[MessageExt]

    @property
    def next_offset(self) -> int:
        """The offset after the last message: what to commit once all of them are processed."""
        return self.messages[-1].queue_offset + 1 if self.messages else -1


@dataclasses.dataclass(slots=True)
class _Batch:
    messages: list[MessageExt]
    state: FetchedQueue
    epoch: int


class LiteFetcher:
    """The fetchers of one pull consumer; queues are keyed by their wire names."""

    def __init__(
        self, core: ConsumerCore, subscription_for: Callable[[str], SubscriptionData | None]
    ) -> None:
        self._core = core
        self._subscription_for = subscription_for
        self.queues: dict[MessageQueue, FetchedQueue] = {}
        self._buffer: collections.deque[_Batch] = collections.deque()
        self._available = asyncio.Event()
        self._running = False

    def start(self) -> None:
        self._running = True
        for state in self.queues.values():
            self._restart(state)

    async def stop(self) -> None:
        """Stop every fetcher; buffered batches are dropped (their messages were never handed out)."""
        self._running = False
        await asyncio.gather(*(self._stop_task(state) for state in self.queues.values()))
        self._buffer.clear()
        self._available.set()

    # -- queues -----------------------------------------------------------------------------------------

    def add(self, queue: MessageQueue) -> FetchedQueue:
        state = FetchedQueue(queue)
        self.queues[queue] = state
        self._restart(state)
        return state

    async def remove(self, queue: MessageQueue) -> FetchedQueue | None:
        """Stop fetching ``queue`` and forget what it buffered; returns its last state."""
        state = self.queues.pop(queue, None)
        if state is not None:
            state.pq.drop()
            self._discard_buffered(state)
            await self._stop_task(state)
        return state

    def move(self, state: FetchedQueue, offset: int) -> None:
        """Continue ``state``'s queue at ``offset``: what it holds and buffered is dropped, a pull under way
        is abandoned, and the consumed offset is set there."""
        state.epoch += 1
        state.seek_offset = offset
        state.consume_offset = offset
        state.pq.clear()
        self._discard_buffered(state)
        self._restart(state)

    def pause(self, state: FetchedQueue) -> None:
        state.paused = True

    def resume(self, state: FetchedQueue) -> None:
        if state.paused:
            state.paused = False
            self._restart(state)

    # -- taking -------------------------------------------------------------------------------------------

    async def take(self, timeout: float) -> PolledBatch | None:
        """The next buffered batch (still current) within ``timeout`` seconds; its messages leave the queue's
        window and its consumed offset moves past them."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            while self._buffer:
                batch = self._buffer.popleft()
                state = batch.state
                if (
                    state.pq.dropped
                    or batch.epoch != state.epoch
                    or self.queues.get(state.queue) is not state
                ):
                    continue
                offset = state.pq.remove(batch.messages)
                if offset >= 0:
                    state.consume_offset = offset
                return PolledBatch(state.queue, batch.messages)
            remaining = deadline - loop.time()
            if remaining <= 0 or not self._running:
                return None
            self._available.clear()
            try:
                async with asyncio.timeout(remaining):
                    await self._available.wait()
            except TimeoutError:
                return None

    def consumed(self) -> dict[MessageQueue, int]:
        """Where the caller has consumed each live queue up to (queues not polled yet left out)."""
        return {
            queue: state.consume_offset
            for queue, state in self.queues.items()
            if state.consume_offset >= 0 and not state.pq.dropped
        }

    # -- the fetchers -------------------------------------------------------------------------------------

    def _discard_buffered(self, state: FetchedQueue) -> None:
        self._buffer = collections.deque(b for b in self._buffer if b.state is not state)

    def _restart(self, state: FetchedQueue) -> None:
        """(Re)start a queue's fetcher; what it buffered stays (a resumed queue keeps its batches)."""
        old = state.task
        if old is not None and not old.done():
            old.cancel()
        if not self._running or state.pq.dropped:
            state.task = None
            return
        state.task = asyncio.get_running_loop().create_task(
            self._fetch(state), name=f"fetch-{state.queue.topic}-{state.queue.queue_id}"
        )

    async def _stop_task(self, state: FetchedQueue) -> None:
        task, state.task = state.task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _flow_controlled(self, state: FetchedQueue) -> bool:
        config = self._core.config
        pq = state.pq
        return (
            len(self._buffer) * config.pull_batch_size > config.pull_threshold_for_all
            or pq.count > config.pull_threshold_for_queue
            or pq.size_bytes > config.pull_threshold_size_for_queue_mib * 1024 * 1024
            or pq.max_span > config.consume_max_span
        )

    def _spec(self, queue: MessageQueue) -> tuple[commands.PullSpec, frozenset[str] | None]:
        """A lite pull carries its subscription (no heartbeat needed) and commits nothing itself."""
        core = self._core
        config = core.config
        subscription = self._subscription_for(queue.topic or "") or build_subscription(
            queue.topic or "", SUB_ALL
        )
        spec = commands.PullSpec(
            group=core.wire_group,
            max_nums=config.pull_batch_size,
            sys_flag=sysflag.build_pull_sys_flag(suspend=True, subscription=True, lite_pull=True),
            commit_offset=0,
            suspend_timeout_ms=config.broker_suspend_max_ms or LITE_BROKER_SUSPEND_MS,
            subscription=subscription.sub_string,
            sub_version=filters.pull_sub_version(subscription),
            expression_type=subscription.expression_type,
            max_msg_bytes=_NO_BYTE_LIMIT if commands.is_v5(config.version) else None,
            lite=True,
        )
        return spec, tag_filter(subscription)

    async def _next_offset(self, state: FetchedQueue) -> int | None:
        if state.seek_offset >= 0:
            offset, state.seek_offset = state.seek_offset, -1
            state.pull_offset = offset
            return offset
        if state.pull_offset >= 0:
            return state.pull_offset
        start = await self._core.start_offset(state.queue)
        if start is not None and start >= 0:
            state.pull_offset = start
            return start
        return None

    async def _fetch(self, state: FetchedQueue) -> None:
        config = self._core.config
        delay_ms = (
            LITE_DELAY_WHEN_EXCEPTION_MS
            if config.pull_delay_when_exception_ms is None
            else config.pull_delay_when_exception_ms
        )
        while not state.pq.dropped and not state.paused and self._running:
            if self._flow_controlled(state):
                await state.pq.wait_for_room(FLOW_CONTROL_DELAY_MS / 1000)
                continue
            epoch = state.epoch
            offset = await self._next_offset(state)
            if offset is None:
                await asyncio.sleep(delay_ms / 1000)
                continue
            spec, tags = self._spec(state.queue)
            state.pq.last_pull_ms = asyncio.get_running_loop().time() * 1000
            try:
                result = await self._core.puller.pull(
                    state.queue, offset, spec, tags, config.consumer_timeout_when_suspend_ms
                )
            except (ConsumerError, RemotingError) as exc:
                logger.warning("pull of %s failed: %s", state.queue, exc)
                await asyncio.sleep(delay_ms / 1000)
                continue
            if state.pq.dropped or state.epoch != epoch:
                continue
            if result.status is PullStatus.FOUND and result.messages:
                state.pq.put(result.messages)
                self._buffer.append(_Batch(result.messages, state, epoch))
                self._available.set()
            elif result.status is PullStatus.OFFSET_ILLEGAL:
                logger.warning(
                    "offset %d of %s is out of range; continuing at %d",
                    offset,
                    state.queue,
                    result.next_begin_offset,
                )
            state.pull_offset = result.next_begin_offset
