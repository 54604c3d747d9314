"""Sending one partition: pipelined, bounded, and finished only when every message is acknowledged.

A task's rows go out as concurrent requests over the producer's shared connections, at most
``max_in_flight`` unanswered at once, so throughput is not one round trip per row. Rows without a sharding
key or delay level are grouped into SEND_BATCH_MESSAGE requests of up to ``batch_size`` messages per topic;
rows with a sharding key keep their order by going out one at a time per key, as Java's ordered sends do.

The number of requests in flight follows the broker's load (:class:`~spark_connector.window.AdaptiveWindow`):
it halves when the broker answers busy and grows back with acknowledgements. A request the producer could not
place because every broker stayed busy for its whole send timeout (:class:`~producer.BrokerBusyError`) was
not stored, so it is sent again after a pause, for up to ``flow_control_timeout_ms``; this adds no duplicate.

Any other failure stops the intake of new rows; the requests already in flight are still awaited, so the
task never ends with sends of unknown outcome, and then the failure is raised (which fails the Spark task).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Protocol

from client.backoff import Backoff
from producer import BrokerBusyError, BusyAnswer, BusyListener, Message, SendResult, SendStatus
from spark_connector.errors import SinkSendError
from spark_connector.options import DEFAULT_FLOW_CONTROL_TIMEOUT_MS
from spark_connector.rows import Outgoing
from spark_connector.window import AdaptiveWindow

logger = logging.getLogger("spark_connector.sender")

#: A batch is sent once its bodies and properties reach this size, well under the broker's 4 MiB default
#: ``maxMessageSize`` which bounds a whole batch request.
BATCH_MAX_BYTES = 1024 * 1024
#: Rough bytes a message adds to a batch besides body and properties (the batch entry's fixed fields).
_ENTRY_OVERHEAD = 20
#: Pauses before sending again a request the producer gave up on as busy.
RESEND_BACKOFF_INITIAL_MS = 50
RESEND_BACKOFF_MAX_MS = 2000


class SendTarget(Protocol):
    """What the sender needs of a producer (``producer.Producer`` fits)."""

    async def send(self, message: Message, *, sharding_key: str | None = None) -> SendResult: ...

    async def send_batch(self, messages: Sequence[Message]) -> SendResult: ...

    def add_busy_listener(self, listener: BusyListener) -> None: ...


@dataclasses.dataclass
class SendTally:
    """What the broker acknowledged for one partition."""

    rows: int = 0
    bytes: int = 0
    requests: int = 0
    batches: int = 0
    #: Messages stored with a status other than SEND_OK (e.g. FLUSH_DISK_TIMEOUT): written, but reported.
    not_ok: int = 0
    seconds: float = 0.0
    #: Busy answers the brokers gave (each was resent by the producer or by the sender; none was stored).
    busy_answers: int = 0
    #: Requests sent again by the sender after the producer gave up on them as busy.
    resends: int = 0
    #: The smallest in-flight window reached (``max_in_flight`` when the broker never pushed back).
    smallest_window: int = 0


def _entry_size(message: Message) -> int:
    size = len(message.body) + len(message.topic) + _ENTRY_OVERHEAD
    for name, value in message.properties.items():
        size += len(name) + len(value) + 2
    return size


class PartitionSender:
    """Sends the messages of one partition through ``target`` and tallies the acknowledgements."""

    def __init__(
        self,
        target: SendTarget,
        *,
        batch_size: int = 1,
        max_in_flight: int = 64,
        batch_max_bytes: int = BATCH_MAX_BYTES,
        flow_control_timeout_ms: float = DEFAULT_FLOW_CONTROL_TIMEOUT_MS,
    ) -> None:
        if batch_size < 1 or max_in_flight < 1:
            raise ValueError("batch_size and max_in_flight must be positive")
        self._target = target
        self._batch_size = batch_size
        self._batch_max_bytes = batch_max_bytes
        self._flow_control_timeout_s = flow_control_timeout_ms / 1000
        self.tally = SendTally(smallest_window=max_in_flight)
        self.window = AdaptiveWindow(max_in_flight)
        target.add_busy_listener(self._on_busy)
        self._tasks: set[asyncio.Task[None]] = set()
        self._chains: dict[str, asyncio.Task[None]] = {}
        self._buffers: dict[str, list[Message]] = {}
        self._buffer_bytes: dict[str, int] = {}
        self._failure: BaseException | None = None
        self._unsent = 0

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    async def send_all(self, chunks: Iterable[Sequence[Outgoing]]) -> SendTally:
        """Send every message of ``chunks``; returns the tally once all are acknowledged.

        Raises :class:`SinkSendError` if a send failed, or whatever reading the input raised (a
        :class:`~spark_connector.errors.RowError` for a bad value), after the requests in flight ended.
        """
        started = time.perf_counter()
        try:
            for chunk in chunks:
                for outgoing in chunk:
                    if self._failure is not None:
                        break
                    await self._accept(outgoing)
                if self._failure is not None:
                    break
            if self._failure is None:
                for topic in list(self._buffers):
                    await self._flush(topic)
        finally:
            while self._tasks:
                await asyncio.wait(list(self._tasks))
            self.tally.seconds = time.perf_counter() - started
            self.tally.smallest_window = self.window.smallest
        if self._failure is not None:
            tally = self.tally
            raise SinkSendError(
                f"sending this partition stopped at its first failure ({tally.rows} message(s) "
                f"acknowledged, {self._unsent} failed or abandoned): {self._failure}",
                acknowledged=tally.rows,
                failed=self._unsent,
            ) from self._failure
        return self.tally

    async def _accept(self, outgoing: Outgoing) -> None:
        message = outgoing.message
        if outgoing.sharding_key is not None:
            await self._send_ordered(message, outgoing.sharding_key)
        elif self._batch_size > 1 and outgoing.batchable:
            await self._add_to_batch(message)
        else:
            await self._start(lambda: self._target.send(message), [message], batch=False)

    async def _add_to_batch(self, message: Message) -> None:
        topic = message.topic
        size = _entry_size(message)
        buffer = self._buffers.setdefault(topic, [])
        if buffer and self._buffer_bytes[topic] + size > self._batch_max_bytes:
            await self._flush(topic)
            buffer = self._buffers.setdefault(topic, [])
        buffer.append(message)
        self._buffer_bytes[topic] = self._buffer_bytes.get(topic, 0) + size
        if len(buffer) >= self._batch_size:
            await self._flush(topic)

    async def _flush(self, topic: str) -> None:
        messages = self._buffers.pop(topic, [])
        self._buffer_bytes.pop(topic, None)
        if len(messages) == 1:
            only = messages[0]
            await self._start(lambda: self._target.send(only), messages, batch=False)
        elif messages:
            await self._start(lambda: self._target.send_batch(messages), messages, batch=True)

    async def _start(
        self, send: Callable[[], Awaitable[SendResult]], messages: list[Message], *, batch: bool
    ) -> None:
        await self.window.acquire()
        if self._failure is not None:
            self.window.release()
            self._unsent += len(messages)
            return
        self._track(asyncio.ensure_future(self._run(send, messages, batch=batch)))
        await asyncio.sleep(0)  # let the new request reach the socket before the next row is converted

    async def _send_ordered(self, message: Message, key: str) -> None:
        await self.window.acquire()
        previous = self._chains.get(key)
        task = asyncio.ensure_future(self._run_after(previous, message, key))
        self._chains[key] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self._chains.get(key) is done:
                del self._chains[key]

        task.add_done_callback(forget)
        self._track(task)
        await asyncio.sleep(0)

    async def _run_after(self, previous: asyncio.Task[None] | None, message: Message, key: str) -> None:
        if previous is not None:
            await asyncio.wait([previous])
        if self._failure is not None:
            self.window.release()
            self._unsent += 1
            return
        await self._run(lambda: self._target.send(message, sharding_key=key), [message], batch=False)

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_busy(self, answer: BusyAnswer) -> None:
        self.tally.busy_answers += 1
        if self.window.busy():
            logger.info(
                "broker %s is busy (%s): at most %d request(s) in flight now",
                answer.broker_name,
                answer.remark,
                self.window.limit,
            )

    async def _send_riding_out_busy(self, send: Callable[[], Awaitable[SendResult]]) -> SendResult:
        """``send()``, sent again while the producer gives up on it as busy (so it was not stored)."""
        refused_since: float | None = None
        backoff: Backoff | None = None
        while True:
            try:
                return await send()
            except BrokerBusyError as exc:
                now = time.monotonic()
                refused_since = now if refused_since is None else refused_since
                if self._failure is not None or now - refused_since >= self._flow_control_timeout_s:
                    raise
                self.window.busy()
                self.tally.resends += 1
                backoff = backoff or Backoff(
                    RESEND_BACKOFF_INITIAL_MS, RESEND_BACKOFF_MAX_MS, random.Random()
                )
                delay_ms = backoff.next_delay_ms()
                logger.info("sending again in %.0f ms a request refused as busy: %s", delay_ms, exc)
                await asyncio.sleep(delay_ms / 1000)

    async def _run(
        self, send: Callable[[], Awaitable[SendResult]], messages: list[Message], *, batch: bool
    ) -> None:
        try:
            result = await self._send_riding_out_busy(send)
        except Exception as exc:
            self._unsent += len(messages)
            if self._failure is None:
                self._failure = exc
                logger.warning("a send failed, no further rows of this partition will be sent: %s", exc)
            return
        finally:
            self.window.release()
        self.window.succeeded()
        tally = self.tally
        tally.requests += 1
        tally.batches += batch
        tally.rows += len(messages)
        tally.bytes += sum(len(m.body) for m in messages)
        if result.status is not SendStatus.SEND_OK:
            tally.not_ok += len(messages)
