"""The source's Spark side: plan one partition per message queue on the driver, pull it on an executor.

A partition is a queue and an offset range fixed at planning time, so a task that Spark retries reads
exactly the same messages again. Batch reads resolve ``startingOffsets``/``endingOffsets`` (and their
``ByTimestamp`` forms) against the queues' current bounds; streaming reads take their ranges from Spark's
checkpointed offsets, in the JSON form of :mod:`spark_connector.offsets`. The topics are those the options
name, or with ``topicPattern`` those the NameServers list and the pattern matches, at every plan.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition

from spark_connector.errors import DataLossError, OptionError, SourceReadError
from spark_connector.offsets import (
    OffsetSpec,
    TopicQueue,
    cap_offsets,
    resolve_offsets,
    topic_offsets_from_json,
    topic_offsets_to_json,
    unknown_queues,
    waiting_messages,
)
from spark_connector.options import SourceOptions
from spark_connector.progress import BatchMetrics, append_batch_metrics
from spark_connector.pull import QueueAddress, TopicReader
from spark_connector.records import message_row
from spark_connector.timestamps import TimestampSpec

logger = logging.getLogger("spark_connector.reader")


@dataclasses.dataclass(frozen=True)
class QueueRange(InputPartition):
    """Offsets ``start`` (inclusive) to ``end`` (exclusive) of one queue, and where to pull them."""

    broker_name: str
    queue_id: int
    broker_addr: str
    start: int
    end: int
    topic: str = ""


def _reader(options: SourceOptions, topic: str) -> TopicReader:
    return TopicReader(
        options.connection,
        topic,
        timeout_ms=options.pull_timeout_ms,
        filter_sql=options.filter_sql,
        filter_tags=options.filter_tags,
    )


def read_range(options: SourceOptions, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
    """The rows of one planned range, pulled batch by batch on an event loop of this task's own.

    Spark substitutes a placeholder partition when a plan has none; it reads nothing.
    """
    if not isinstance(partition, QueueRange) or partition.end <= partition.start:
        return
    queue = QueueAddress(partition.broker_name, partition.queue_id, partition.broker_addr, partition.topic)
    loop = asyncio.new_event_loop()
    reader = _reader(options, partition.topic)
    pulls = reader.pull_range(
        queue,
        partition.start,
        partition.end,
        group=options.group,
        batch_size=options.pull_batch_size,
        fail_on_data_loss=options.fail_on_data_loss,
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


@dataclasses.dataclass
class Snapshot:
    """The query's queues as the brokers had them at one moment, and positions resolved there."""

    queues: list[QueueAddress]
    lows: dict[TopicQueue, int]
    highs: dict[TopicQueue, int]
    #: Queue positions searched by timestamp, per spec (``starting``/``ending``), where a spec names them.
    searched: dict[str, dict[TopicQueue, int]] = dataclasses.field(default_factory=dict)

    @property
    def keys(self) -> list[TopicQueue]:
        return [queue.key for queue in self.queues]

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({queue.topic for queue in self.queues}))


async def matching_topics(options: SourceOptions) -> list[str]:
    """The topics the query reads now: those named, or the NameServers' topics ``topicPattern`` matches."""
    if options.topic_pattern is None:
        return list(options.named_topics)
    pattern = re.compile(options.topic_pattern)
    async with _reader(options, "") as lister:
        names = await lister.topic_names()
    return [name for name in names if pattern.fullmatch(name)]


async def _topic_snapshot(
    options: SourceOptions,
    topic: str,
    stamps: dict[str, TimestampSpec | None],
    *,
    check_filter: bool,
    tolerate_missing: bool,
) -> Snapshot:
    async with _reader(options, topic) as reader:
        try:
            if check_filter:
                await reader.check_filter(options.group)
            queues = await reader.queues()
        except SourceReadError:
            if tolerate_missing and not await reader.exists():
                logger.info("topic %s is gone (deleted); the query no longer reads it", topic)
                return Snapshot([], {}, {})
            raise
        lows, highs = await reader.bounds(queues)
        searched: dict[str, dict[TopicQueue, int]] = {}
        for which, spec in stamps.items():
            if spec is None:
                continue
            found = searched.setdefault(which, {})
            for queue in queues:
                stamp = spec.for_queue(queue.key)
                if stamp is not None:
                    offset = await reader.search_offset(queue, stamp)
                    found[queue.key] = min(max(offset, lows[queue.key]), highs[queue.key])
    return Snapshot(queues, lows, highs, searched)


async def snapshot(
    options: SourceOptions,
    topics: list[str] | None = None,
    *,
    stamps: dict[str, TimestampSpec | None] | None = None,
    check_filter: bool = False,
) -> Snapshot:
    """Queues and bounds of ``topics`` (default: :func:`matching_topics`), topics read concurrently.

    With ``topicPattern`` a topic deleted meanwhile is left out; a named one that does not exist fails.
    """
    chosen = await matching_topics(options) if topics is None else topics
    parts = await asyncio.gather(
        *(
            _topic_snapshot(
                options,
                topic,
                stamps or {},
                check_filter=check_filter,
                tolerate_missing=options.topic_pattern is not None,
            )
            for topic in chosen
        )
    )
    whole = Snapshot([], {}, {})
    for part in parts:
        whole.queues.extend(part.queues)
        whole.lows.update(part.lows)
        whole.highs.update(part.highs)
        for which, found in part.searched.items():
            whole.searched.setdefault(which, {}).update(found)
    whole.queues.sort()
    return whole


def _check_named_queues(options: SourceOptions, whole: Snapshot, specs: dict[str, OffsetSpec]) -> None:
    keys = whole.keys
    for option, spec in specs.items():
        missing = unknown_queues(spec, keys)
        if missing:
            topic, broker, queue_id = missing[0]
            known = dict.fromkeys(keys, 0)
            raise OptionError(
                f"option {option!r} names queue {queue_id} of broker {broker!r} of topic {topic!r}, "
                f"which the query does not read (its queues: {topic_offsets_to_json(known, None)})"
            )


async def _plan(
    options: SourceOptions,
    starting: OffsetSpec,
    ending: OffsetSpec,
    *,
    stamps: dict[str, TimestampSpec | None] | None = None,
    check_filter: bool = False,
) -> tuple[Snapshot, dict[TopicQueue, int], dict[TopicQueue, int]]:
    """The queues and their resolved offsets; a queue a timestamp spec names takes the offset the broker
    found for that time. ``check_filter`` first asks the brokers about ``filter.sql``, so that a refusal
    fails the query on the driver rather than in every task."""
    whole = await snapshot(options, stamps=stamps, check_filter=check_filter)
    _check_named_queues(options, whole, {"startingOffsets": starting, "endingOffsets": ending})
    start = resolve_offsets(starting, whole.keys, whole.lows, whole.highs, default="earliest")
    end = resolve_offsets(ending, whole.keys, whole.lows, whole.highs, default="latest")
    start.update(whole.searched.get("starting", {}))
    end.update(whole.searched.get("ending", {}))
    return whole, start, end


def _ranges(
    queues: list[QueueAddress], start: dict[TopicQueue, int], end: dict[TopicQueue, int]
) -> list[QueueRange]:
    return [
        QueueRange(
            q.broker_name, q.queue_id, q.broker_addr, start[q.key], max(start[q.key], end[q.key]), q.topic
        )
        for q in queues
    ]


class RocketMQReader(DataSourceReader):
    """``spark.read.format("rocketmq")``: a bounded read of every queue between two offsets."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        options = self.options
        stamps = {"starting": options.starting_timestamps, "ending": options.ending_timestamps}
        whole, start, end = asyncio.run(
            _plan(options, options.starting_offsets, options.ending_offsets, stamps=stamps, check_filter=True)
        )
        ranges = _ranges(whole.queues, start, end)
        logger.info(
            "reading %d message(s) of %s from %d queue(s)",
            sum(r.end - r.start for r in ranges),
            options.described,
            len(ranges),
        )
        return list(ranges)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return read_range(self.options, partition)


class RocketMQStreamReader(DataSourceStreamReader):
    """``spark.readStream.format("rocketmq")``: micro-batches between checkpointed offsets.

    The latest offsets come from GET_MAX_OFFSET of every queue the routes list at the time, so queues
    added to a topic (and, with ``topicPattern``, topics created) are picked up, read from their start;
    the queues of a topic deleted meanwhile are dropped. ``maxMessagesPerTrigger`` caps a micro-batch,
    ``minMessagesPerTrigger`` holds it back until enough messages wait or ``maxTriggerDelay`` passed;
    ``Trigger.AvailableNow`` reads up to the offsets current when the query started.

    Spark keeps this object in one Python worker on the driver for the query's life, so the time of the
    last micro-batch and the count of skipped offsets live here (they restart with the query).
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._available_now: dict[TopicQueue, int] | None = None
        self._filter_checked = False
        self._last_trigger: float | None = None
        self._skipped_total = 0

    def _to_json(self, offsets: dict[TopicQueue, int]) -> dict[str, Any]:
        return topic_offsets_to_json(offsets, self.options.topic)

    def _from_json(self, value: Any, what: str) -> dict[TopicQueue, int]:
        return topic_offsets_from_json(value, what, self.options.topic)

    def _snapshot(self, topics: list[str] | None = None, **kwargs: Any) -> Snapshot:
        """:func:`snapshot`, asking the brokers about ``filter.sql`` the first time only."""
        taken = asyncio.run(snapshot(self.options, topics, check_filter=not self._filter_checked, **kwargs))
        self._filter_checked = True
        return taken

    def initialOffset(self) -> dict[str, Any]:
        options = self.options
        starting = options.starting_offsets
        stamps = {"starting": options.starting_timestamps}
        whole = self._snapshot(stamps=stamps)
        _check_named_queues(options, whole, {"startingOffsets": starting})
        start = resolve_offsets(starting, whole.keys, whole.lows, whole.highs, default="earliest")
        start.update(whole.searched.get("starting", {}))
        return self._to_json(start)

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, Any]:
        """Every queue's current end, or less when a read limit (``maxMessagesPerTrigger``) applies; the
        start itself while ``minMessagesPerTrigger`` holds the batch back."""
        whole = self._snapshot()
        latest = dict(self._available_now) if self._available_now is not None else dict(whole.highs)
        begin = self._from_json(start, "start offset") if start is not None else {}
        for queue, offset in begin.items():
            if queue in latest:
                latest[queue] = max(latest[queue], offset)
            elif self.options.topic_pattern is None or queue[0] in whole.topics:
                latest[queue] = offset  # a queue gone from a route: kept, nothing more to read
            else:
                logger.info("topic %s no longer matches or exists: dropping queue %s", queue[0], queue)
        from_start = {queue: begin.get(queue, whole.lows.get(queue, 0)) for queue in latest}
        max_rows = getattr(limit, "max_rows", None)
        if max_rows is None and limit is None:
            max_rows = self.options.max_messages_per_trigger
        if start is not None and isinstance(max_rows, int) and max_rows > 0:
            latest = cap_offsets(from_start, latest, max_rows)
        if start is not None and self._holds_back(waiting_messages(from_start, latest)):
            return start
        if latest != begin:
            self._last_trigger = time.monotonic()
        return self._to_json(latest)

    def _holds_back(self, waiting: int) -> bool:
        """Whether ``minMessagesPerTrigger`` keeps this trigger empty (never under ``AvailableNow``)."""
        wanted = self.options.min_messages_per_trigger
        if wanted is None or self._available_now is not None or waiting >= wanted:
            return False
        now = time.monotonic()
        if self._last_trigger is None:
            self._last_trigger = now  # the delay counts from the query's first look
        return (now - self._last_trigger) * 1000 < self.options.max_trigger_delay_ms

    def getDefaultReadLimit(self) -> Any:
        """``ReadMaxRows(maxMessagesPerTrigger)`` when that option is set, else read all (Spark 4.2+)."""
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        per_trigger = self.options.max_messages_per_trigger
        return ReadAllAvailable() if per_trigger is None else ReadMaxRows(per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of a ``Trigger.AvailableNow`` query at the offsets of this moment."""
        self._available_now = dict(self._snapshot().highs)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return self._to_json(self._snapshot().highs)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        """The ranges between two checkpointed offsets; offsets retention deleted meanwhile fail the query
        (``failOnDataLoss``) or are skipped and counted."""
        begin = self._from_json(start, "start offset")
        finish = self._from_json(end, "end offset")
        whole = self._snapshot(sorted({queue[0] for queue in finish})) if finish else Snapshot([], {}, {})
        addresses = {q.key: q for q in whole.queues}
        ranges: list[InputPartition] = []
        skipped = 0
        for key in sorted(finish):
            last = finish[key]
            queue = addresses.get(key)
            if queue is None:
                logger.warning("queue %s is gone from its route; skipping it", key)
                continue
            low = whole.lows[key]
            first = begin.get(key, low)  # a queue new since the last batch starts at its earliest
            if first < low:
                if self.options.fail_on_data_loss:
                    raise DataLossError(key[0], key[1], key[2], first, low, during="planning")
                lost = min(low, last) - first
                skipped += lost
                logger.warning("%s: %d offset(s) from %d deleted by retention; skipped", key, lost, first)
                first = low
            if last <= first:
                continue
            ranges.append(
                QueueRange(queue.broker_name, queue.queue_id, queue.broker_addr, first, last, key[0])
            )
        self._skipped_total += skipped
        self._report(ranges, whole, finish, skipped)
        return ranges

    def _report(
        self, ranges: list[InputPartition], whole: Snapshot, finish: dict[TopicQueue, int], skipped: int
    ) -> None:
        planned = [r for r in ranges if isinstance(r, QueueRange)]
        metrics = BatchMetrics(
            messages=sum(r.end - r.start for r in planned),
            lag=sum(
                max(whole.highs[key] - offset, 0) for key, offset in finish.items() if key in whole.highs
            ),
            skipped=skipped,
            skipped_total=self._skipped_total,
            queues=len(planned),
            topics=whole.topics,
        )
        logger.info("%s", metrics.describe())
        if self.options.metrics_path is not None:
            append_batch_metrics(self.options.metrics_path, metrics)

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
