"""Message trace dispatch, as Apache's ``AsyncTraceDispatcher``: trace records are queued without waiting,
gathered into trace messages of up to ``max_msg_size`` bytes every few milliseconds, and handed to a send
function (in practice the ``send`` of an internal producer of their own; see ``producer.trace``). A full
queue drops records (logged); a failed trace send is logged; neither ever reaches the traced send or
consume. ``shutdown`` flushes what is queued.

The dispatcher takes a function rather than a producer so that the core does not depend on the producer
(which itself writes traces through a dispatcher), and so that tests can watch what it sends.
The record format is :mod:`rocketmq_wire.trace`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from rocketmq_wire.message import Message
from rocketmq_wire.trace import TRACE_TOPIC, TraceContext, encode_trace_context, trace_keys

logger = logging.getLogger("client.trace")

#: Java's ``traceContextQueue`` capacity, batch size, trace message size and flush period.
DEFAULT_QUEUE_SIZE = 2048
DEFAULT_BATCH_SIZE = 100
DEFAULT_MAX_MSG_SIZE = 128_000
DEFAULT_FLUSH_INTERVAL_MS = 5

#: ``await send(message)`` delivers one trace message; whatever it returns is ignored, what it raises logged.
TraceSend = Callable[[Message], Awaitable[object]]
#: ``await close()`` releases what carries the sends (the internal producer), after the last one ended.
TraceClose = Callable[[], Awaitable[object]]


def now_ms() -> int:
    """Wall-clock milliseconds, the unit of every trace timestamp."""
    return int(time.time() * 1000)


class TraceDispatcher:
    """Queues trace contexts and hands them, packed into messages to ``trace_topic``, to ``send``."""

    def __init__(
        self,
        send: TraceSend,
        *,
        trace_topic: str | None = None,
        close: TraceClose | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_msg_size: int = DEFAULT_MAX_MSG_SIZE,
        flush_interval_ms: float = DEFAULT_FLUSH_INTERVAL_MS,
    ) -> None:
        self.trace_topic = trace_topic or TRACE_TOPIC
        self._send_message = send
        self._close = close
        self._queue: asyncio.Queue[TraceContext] = asyncio.Queue(maxsize=queue_size)
        self._batch_size = batch_size
        self._max_msg_size = max_msg_size
        self._flush_interval = flush_interval_ms / 1000
        self._worker: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[Any]] = set()
        self._unsent = 0  # queued or gathered into a batch, not yet handed to a send
        self.dropped = 0
        self.sent_messages = 0
        self.failed_messages = 0

    @property
    def running(self) -> bool:
        return self._worker is not None and not self._worker.done()

    async def start(self) -> None:
        """Start gathering and sending on the running event loop."""
        self._worker = asyncio.get_running_loop().create_task(self._run())

    def append(self, ctx: TraceContext) -> bool:
        """Queue ``ctx`` without waiting; ``False`` (and dropped) when the queue is full or not running."""
        if not self.running:
            self.dropped += 1
            return False
        try:
            self._queue.put_nowait(ctx)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped % 100 == 1:
                logger.warning("trace queue full: %d trace record(s) dropped so far", self.dropped)
            return False
        self._unsent += 1
        return True

    async def flush(self, timeout_s: float = 5.0) -> None:
        """Wait until every queued record was handed to a send and those sends ended (or ``timeout_s``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while (self._unsent > 0 or self._sending) and loop.time() < deadline:
            if self._sending:
                await asyncio.wait(set(self._sending), timeout=max(0.0, deadline - loop.time()))
            else:
                await asyncio.sleep(self._flush_interval)

    async def shutdown(self, timeout_s: float = 5.0) -> None:
        """Flush (at most ``timeout_s``), then stop the worker and run ``close``."""
        if self._worker is None:
            return
        try:
            await self.flush(timeout_s)
        finally:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None
            for task in list(self._sending):
                task.cancel()
            await asyncio.gather(*self._sending, return_exceptions=True)
            if self._close is not None:
                await self._close()

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            batch = [first]
            loop = asyncio.get_running_loop()
            until = loop.time() + self._flush_interval
            while len(batch) < self._batch_size:
                try:
                    batch.append(self._queue.get_nowait())
                    continue
                except asyncio.QueueEmpty:
                    pass
                remaining = until - loop.time()
                if remaining <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), remaining))
                except TimeoutError:
                    break
            for body, keys in self._pack(batch):
                task = loop.create_task(self._send(body, keys))
                self._sending.add(task)
                task.add_done_callback(self._sending.discard)
            self._unsent -= len(batch)

    def _pack(self, batch: list[TraceContext]) -> list[tuple[str, list[str]]]:
        """Trace message bodies of up to ``max_msg_size`` bytes, each with the keys of its records."""
        out: list[tuple[str, list[str]]] = []
        parts: list[str] = []
        keys: list[str] = []
        size = 0
        for ctx in batch:
            data = encode_trace_context(ctx)
            if not data:
                continue
            parts.append(data)
            size += len(data.encode("utf-8"))
            keys.extend(k for k in trace_keys(ctx) if k not in keys)
            if size >= self._max_msg_size:
                out.append(("".join(parts), keys))
                parts, keys, size = [], [], 0
        if parts:
            out.append(("".join(parts), keys))
        return out

    async def _send(self, body: str, keys: list[str]) -> None:
        try:
            await self._send_message(Message(self.trace_topic, body.encode("utf-8"), keys=keys))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failed_messages += 1
            logger.warning("sending a trace message to %s failed: %s", self.trace_topic, exc)
        else:
            self.sent_messages += 1
