"""The sink's Spark side: writers made on the driver, ``write`` run once per task on the executors.

Spark builds the writer on the driver (in a Python worker there), pickles it to every task and, when all
tasks have returned, unpickles it again on the driver to call ``commit`` (or ``abort``) with the tasks'
commit messages. So the constructor is where options and schema are checked, the writer carries only
picklable settings, and each task makes its own producer and event loop.

Delivery is at-least-once: a task returns its commit message only after the broker acknowledged every
message of its partition, and raises otherwise; Spark then retries the task (``spark.task.maxFailures``),
which sends the partition again, so messages acknowledged before the failure can appear twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from producer import Producer
from spark_connector.columns import check_sink_schema
from spark_connector.options import SinkOptions
from spark_connector.rows import outgoing_chunks
from spark_connector.sender import PartitionSender
from spark_connector.summary import CommitSummary, PartitionReport, append_summary

logger = logging.getLogger("spark_connector.writer")

try:  # Spark 4.1 and later hand streaming writers Arrow batches too
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover - Spark 4.0: rows
    _StreamWriterBase = DataSourceStreamWriter  # type: ignore[assignment,misc]


@dataclasses.dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task sends back to the driver: its acknowledged figures."""

    report: PartitionReport


async def _send_partition(options: SinkOptions, inputs: Iterable[Any]) -> PartitionSender:
    connection = options.connection
    producer = Producer(
        options.group,
        list(connection.namesrv),
        namespace=connection.namespace,
        access_key=connection.access_key,
        secret_key=connection.secret_key,
        send_timeout_ms=options.send_timeout_ms,
        ssl=connection.ssl_context(),
    )
    async with producer:
        sender = PartitionSender(
            producer,
            batch_size=options.batch_size,
            max_in_flight=options.max_in_flight,
            flow_control_timeout_ms=options.flow_control_timeout_ms,
        )
        await sender.send_all(outgoing_chunks(inputs, topic=options.topic))
    return sender


def write_partition(options: SinkOptions, inputs: Iterable[Any]) -> SinkCommitMessage:
    """Send one task's input (Arrow record batches or rows) and wait for every acknowledgement."""
    context = TaskContext.get()
    partition_id = context.partitionId() if context is not None else 0
    attempt = context.attemptNumber() if context is not None else 0
    sender = asyncio.run(_send_partition(options, inputs))
    report = PartitionReport.of(partition_id, attempt, sender.tally)
    logger.info(
        "partition %d (attempt %d): %d message(s) acknowledged in %.3f s (%d busy answer(s), %d resend(s), "
        "smallest window %d)",
        partition_id,
        attempt,
        report.rows,
        report.seconds,
        report.busy_answers,
        report.resends,
        report.smallest_window,
    )
    return SinkCommitMessage(report)


def _reports(messages: Iterable[WriterCommitMessage | None]) -> list[PartitionReport | None]:
    return [message.report if isinstance(message, SinkCommitMessage) else None for message in messages]


def _conclude(
    options: SinkOptions,
    messages: Iterable[WriterCommitMessage | None],
    *,
    mode: Literal["batch", "stream"],
    committed: bool,
    batch_id: int | None,
) -> CommitSummary:
    summary = CommitSummary.of(
        _reports(messages), mode=mode, committed=committed, batch_id=batch_id, topic=options.topic
    )
    logger.log(logging.INFO if committed else logging.WARNING, "%s", summary.describe())
    if options.summary_path is not None:
        append_summary(options.summary_path, summary)
    return summary


class RocketMQWriter(DataSourceArrowWriter):
    """``df.write.format("rocketmq")``: one producer per task, the job's figures at commit."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        self.options = options
        self.columns = check_sink_schema(schema, topic_option=options.topic)

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return write_partition(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _conclude(self.options, messages, mode="batch", committed=True, batch_id=None)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _conclude(self.options, messages, mode="batch", committed=False, batch_id=None)


class RocketMQStreamWriter(_StreamWriterBase):
    """``df.writeStream.format("rocketmq")``: the same per task, the figures of each micro-batch at commit.

    A micro-batch Spark replays after a restart is sent again (the sink has no transactions): streaming
    delivery is at-least-once as well.
    """

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        self.options = options
        self.columns = check_sink_schema(schema, topic_option=options.topic)

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return write_partition(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _conclude(self.options, messages, mode="stream", committed=True, batch_id=batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _conclude(self.options, messages, mode="stream", committed=False, batch_id=batchId)
