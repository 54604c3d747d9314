"""The running half of ``rmq send`` (:mod:`cli.send_cmd`): the producer, the concurrent senders, the
progress bar and the result tables, imported only once a send is really made."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator, Sequence
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TimeElapsedColumn
from rich.table import Table

from cli.common import Target, cell, err
from cli.send_stats import SendStats, SendSummary
from producer import Message, Producer, ProducerError, SendResult


def result_json(result: SendResult) -> dict[str, Any]:
    return {
        "status": result.status.value,
        "msg_id": result.msg_id,
        "offset_msg_id": result.offset_msg_id,
        "topic": result.message_queue.topic,
        "broker_name": result.message_queue.broker_name,
        "queue_id": result.message_queue.queue_id,
        "queue_offset": result.queue_offset,
        "recall_handle": result.recall_handle,
    }


def results_table(results: Sequence[SendResult]) -> Table:
    table = Table()
    recallable = any(result.recall_handle for result in results)
    headings = ["Broker", "QID", "Status", "Message ID", "Offset message ID", "Queue offset"]
    for heading in [*headings, "Recall handle"] if recallable else headings:
        table.add_column(heading, overflow="fold")
    for result in results:
        row = [
            cell(result.message_queue.broker_name),
            cell(result.message_queue.queue_id),
            cell(result.status.value),
            cell(result.msg_id),
            cell(result.offset_msg_id),
            cell(result.queue_offset),
        ]
        table.add_row(*row, *([cell(result.recall_handle)] if recallable else []))
    return table


def summary_table(summary: SendSummary, body_size: int) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    rows = [
        ("sent", f"{summary.sent} messages of {body_size} B"),
        ("failed", str(summary.failed)),
        ("time", f"{summary.seconds:.3f} s"),
        ("throughput", f"{summary.msgs_per_s:,.1f} msgs/s  {summary.mb_per_s:,.3f} MB/s"),
        (
            "latency",
            f"p50 {summary.latency_p50_ms:.2f} ms  p99 {summary.latency_p99_ms:.2f} ms  "
            f"max {summary.latency_max_ms:.2f} ms",
        ),
    ]
    for name, value in rows:
        table.add_row(name, cell(value))
    return table


class Sender:
    """Sends ``count`` copies of a message, ``concurrency`` requests at a time, into ``stats``."""

    def __init__(self, producer: Producer, message: Message, *, oneway: bool, batch_size: int) -> None:
        self.producer = producer
        self.message = message
        self.oneway = oneway
        self.batch_size = batch_size
        self.stats = SendStats()
        self.results: list[SendResult] = []

    async def one_request(self, messages: int) -> None:
        started = time.perf_counter()
        try:
            if self.batch_size:
                result = await self.producer.send_batch([self.message] * messages)
                self.results.append(result)
            elif self.oneway:
                await self.producer.send_oneway(self.message)
            else:
                self.results.append(await self.producer.send(self.message))
        except ProducerError as exc:
            self.stats.record_failure(messages, str(exc))
            return
        self.stats.record(time.perf_counter() - started, messages, messages * len(self.message.body))

    async def run(self, count: int, concurrency: int, progress: Progress | None) -> SendSummary:
        requests = -(-count // self.batch_size) if self.batch_size else count
        task = progress.add_task("sending", total=count) if progress is not None else None
        pending = request_sizes(count, self.batch_size)
        started = time.perf_counter()

        async def worker() -> None:
            for size in pending:
                await self.one_request(size)
                if progress is not None and task is not None:
                    progress.advance(task, size)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, requests))))
        return self.stats.summary(time.perf_counter() - started)


def request_sizes(count: int, batch_size: int) -> Iterator[int]:
    """Messages per request, made as the workers take them (a list of a billion ones would not fit)."""
    if not batch_size:
        yield from itertools.repeat(1, count)
        return
    full, rest = divmod(count, batch_size)
    yield from itertools.repeat(batch_size, full)
    if rest:
        yield rest


def _producer(where: Target, group: str) -> Producer:
    return Producer(
        group,
        where.namesrv,
        access_key=where.access_key,
        secret_key=where.secret_key,
        serialize_type=where.serialize_type,
        ssl=where.ssl,
    )


async def recall_message(where: Target, group: str, topic: str, handle: str) -> str:
    """Take back a timer message by its recall handle; the recalled message's unique id."""
    async with _producer(where, group) as producer:
        return await producer.recall(topic, handle, timeout_ms=where.timeout_ms)


async def send_messages(
    where: Target,
    group: str,
    message: Message,
    *,
    count: int,
    oneway: bool,
    batch_size: int,
    concurrency: int,
    show_progress: bool,
) -> tuple[Sender, SendSummary]:
    async with _producer(where, group) as producer:
        sender = Sender(producer, message, oneway=oneway, batch_size=batch_size)
        if not show_progress:
            return sender, await sender.run(count, concurrency, None)
        columns = (BarColumn(), MofNCompleteColumn(), TaskProgressColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err(), transient=True) as progress:
            summary = await sender.run(count, concurrency, progress)
        return sender, summary
