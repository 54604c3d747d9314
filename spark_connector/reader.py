"""The source's Spark side: plan one partition per message queue on the driver, pull it on an executor.

A partition is a queue and an offset range fixed at planning time, so a task that Spark retries reads
exactly the same messages again. Batch reads resolve ``startingOffsets``/``endingOffsets`` against the
queues' current bounds; streaming reads take their ranges from Spark's checkpointed offsets, in the JSON
form of :mod:`spark_connector.offsets`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition

from spark_connector.errors import OptionError
from spark_connector.offsets import (
    OffsetSpec,
    QueueKey,
    cap_offsets,
    offsets_from_json,
    offsets_to_json,
    resolve_offsets,
    unknown_queues,
)
from spark_connector.options import SourceOptions
from spark_connector.pull import QueueAddress, TopicReader
from spark_connector.records import message_row

logger = logging.getLogger("spark_connector.reader")


@dataclasses.dataclass(frozen=True)
class QueueRange(InputPartition):
    """Offsets ``start`` (inclusive) to ``end`` (exclusive) of one queue, and where to pull them."""

    broker_name: str
    queue_id: int
    broker_addr: str
    start: int
    end: int


def _reader(options: SourceOptions) -> TopicReader:
    return TopicReader(
        options.connection, options.topic, timeout_ms=options.pull_timeout_ms, filter_sql=options.filter_sql
    )


def read_range(options: SourceOptions, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
    """The rows of one planned range, pulled batch by batch on an event loop of this task's own.

    Spark substitutes a placeholder partition when a plan has none; it reads nothing.
    """
    if not isinstance(partition, QueueRange) or partition.end <= partition.start:
        return
    queue = QueueAddress(partition.broker_name, partition.queue_id, partition.broker_addr)
    loop = asyncio.new_event_loop()
    reader = _reader(options)
    pulls = reader.pull_range(
        queue, partition.start, partition.end, group=options.group, batch_size=options.pull_batch_size
    )
    namespace = options.connection.namespace
    try:
        while True:
            try:
                messages = loop.run_until_complete(anext(pulls))
            except StopAsyncIteration:
                break
            for message in messages:
                yield message_row(message, queue.broker_name, namespace)
    finally:
        loop.run_until_complete(pulls.aclose())
        loop.run_until_complete(reader.close())
        loop.close()


async def _plan(
    options: SourceOptions, starting: OffsetSpec, ending: OffsetSpec, *, check_filter: bool = False
) -> tuple[list[QueueAddress], dict[QueueKey, int], dict[QueueKey, int]]:
    """The queues and their resolved offsets; ``check_filter`` first asks the brokers about ``filter.sql``,
    so that a refusal fails the query on the driver rather than in every task."""
    async with _reader(options) as reader:
        if check_filter:
            await reader.check_filter(options.group)
        queues = await reader.queues()
        lows, highs = await reader.bounds(queues)
    keys = [queue.key for queue in queues]
    for option, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
        missing = unknown_queues(spec, keys)
        if missing:
            broker, queue_id = missing[0]
            raise OptionError(
                f"option {option!r} names queue {queue_id} of broker {broker!r}, which topic "
                f"{options.topic!r} does not have (its queues: {offsets_to_json(dict.fromkeys(keys, 0))})"
            )
    start = resolve_offsets(starting, keys, lows, highs, default="earliest")
    end = resolve_offsets(ending, keys, lows, highs, default="latest")
    return queues, start, end


def _ranges(
    queues: list[QueueAddress], start: dict[QueueKey, int], end: dict[QueueKey, int]
) -> list[QueueRange]:
    return [
        QueueRange(q.broker_name, q.queue_id, q.broker_addr, start[q.key], max(start[q.key], end[q.key]))
        for q in queues
    ]


class RocketMQReader(DataSourceReader):
    """``spark.read.format("rocketmq")``: a bounded read of every queue between two offsets."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        options = self.options
        queues, start, end = asyncio.run(
            _plan(options, options.starting_offsets, options.ending_offsets, check_filter=True)
        )
        ranges = _ranges(queues, start, end)
        logger.info(
            "reading %d message(s) of topic %s from %d queue(s)",
            sum(r.end - r.start for r in ranges),
            options.topic,
            len(ranges),
        )
        return list(ranges)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return read_range(self.options, partition)


class RocketMQStreamReader(DataSourceStreamReader):
    """``spark.readStream.format("rocketmq")``: micro-batches between checkpointed offsets.

    The latest offsets come from GET_MAX_OFFSET of every queue the route lists at the time, so queues
    added to the topic later are picked up (read from their start). ``maxMessagesPerTrigger`` caps a
    micro-batch; ``Trigger.AvailableNow`` reads up to the offsets current when the query started.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._available_now: dict[QueueKey, int] | None = None
        self._filter_checked = False

    def _plan(
        self, starting: OffsetSpec, ending: OffsetSpec
    ) -> tuple[list[QueueAddress], dict[QueueKey, int], dict[QueueKey, int]]:
        """:func:`_plan`, asking the brokers about ``filter.sql`` the first time only."""
        planned = asyncio.run(_plan(self.options, starting, ending, check_filter=not self._filter_checked))
        self._filter_checked = True
        return planned

    def _latest(self) -> tuple[list[QueueAddress], dict[QueueKey, int]]:
        _queues, _start, latest = self._plan("earliest", "latest")
        return _queues, latest

    def initialOffset(self) -> dict[str, dict[str, int]]:
        options = self.options
        if options.starting_offsets == "latest":
            _queues, start, _end = self._plan("latest", "latest")
        else:
            _queues, start, _end = self._plan(options.starting_offsets, "latest")
        return offsets_to_json(start)

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: Any = None
    ) -> dict[str, dict[str, int]]:
        """Every queue's current end, or less when a read limit (``maxMessagesPerTrigger``) applies."""
        if self._available_now is not None:
            latest = dict(self._available_now)
        else:
            latest = self._latest()[1]
        begin = offsets_from_json(start, "start offset") if start is not None else {}
        for queue, offset in begin.items():
            latest[queue] = max(latest.get(queue, offset), offset)
        max_rows = getattr(limit, "max_rows", None)
        if max_rows is None and limit is None:
            max_rows = self.options.max_messages_per_trigger
        if start is not None and isinstance(max_rows, int) and max_rows > 0:
            latest = cap_offsets(begin, latest, max_rows)
        return offsets_to_json(latest)

    def getDefaultReadLimit(self) -> Any:
        """``ReadMaxRows(maxMessagesPerTrigger)`` when that option is set, else read all (Spark 4.2+)."""
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        per_trigger = self.options.max_messages_per_trigger
        return ReadAllAvailable() if per_trigger is None else ReadMaxRows(per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of a ``Trigger.AvailableNow`` query at the offsets of this moment."""
        self._available_now = self._latest()[1]

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        return offsets_to_json(self._latest()[1])

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin = offsets_from_json(start, "start offset")
        finish = offsets_from_json(end, "end offset")

        async def route() -> list[QueueAddress]:
            async with _reader(self.options) as reader:
                return await reader.queues()

        addresses = {q.key: q for q in asyncio.run(route())} if finish else {}
        ranges: list[InputPartition] = []
        for key in sorted(finish):
            first, last = begin.get(key, 0), finish[key]
            if last <= first:
                continue
            queue = addresses.get(key)
            if queue is None:
                logger.warning(
                    "queue %s of topic %s is gone from its route; skipping it", key, self.options.topic
                )
                continue
            ranges.append(QueueRange(queue.broker_name, queue.queue_id, queue.broker_addr, first, last))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return read_range(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        logger.debug("micro-batch up to %s committed", end)


def _declare_available_now() -> None:
    """Mark the stream reader as supporting ``Trigger.AvailableNow`` where Spark has the interface (4.2+)."""
    try:
        from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
    except ImportError:  # pragma: no cover - older Spark
        return
    SupportsTriggerAvailableNow.register(RocketMQStreamReader)


_declare_available_now()
