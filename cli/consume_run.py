"""The running half of ``rmq consume`` (:mod:`cli.consume_cmd`): the pull consumer, the loop printing what
it polls and the shape of each printed line, imported only once the command line has been checked."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import signal
import sys
from typing import Any, TextIO

from cli.common import Target
from consumer import ConsumerConfig, MessageExt, PolledBatch, PullConsumer

#: How long one poll waits before checking for Ctrl-C and ``--count`` again.
_POLL_S = 1.0


def body_fields(body: bytes) -> dict[str, str]:
    """The body as text when it is UTF-8, else base64 -- ``body_encoding`` says which."""
    try:
        return {"body": body.decode("utf-8"), "body_encoding": "utf-8"}
    except UnicodeDecodeError:
        return {"body": base64.b64encode(body).decode("ascii"), "body_encoding": "base64"}


def message_record(message: MessageExt, broker_name: str | None = None) -> dict[str, Any]:
    """One ``--json`` line."""
    record: dict[str, Any] = {
        "msg_id": message.client_msg_id,
        "offset_msg_id": message.msg_id,
        "topic": message.topic,
        "broker_name": broker_name,
        "queue_id": message.queue_id,
        "queue_offset": message.queue_offset,
        "tags": message.tags,
        "keys": message.keys,
        "properties": dict(message.properties),
        "reconsume_times": message.reconsume_times,
        "born_timestamp": message.born_timestamp,
        "store_timestamp": message.store_timestamp,
        "born_host": message.born_host,
        "store_host": message.store_host,
    }
    record.update(body_fields(message.body))
    return record


def message_line(message: MessageExt) -> str:
    """One human-readable line: where it is, its ids, then the body (text, or base64 marked as such)."""
    fields = body_fields(message.body)
    body = fields["body"] if fields["body_encoding"] == "utf-8" else f"base64:{fields['body']}"
    parts = [f"{message.topic} q{message.queue_id}@{message.queue_offset}", f"id={message.client_msg_id}"]
    if message.tags:
        parts.append(f"tags={message.tags}")
    if message.keys:
        parts.append(f"keys={','.join(message.keys)}")
    return " ".join(parts) + " " + body.replace("\n", "\\n")


class Printer:
    def __init__(self, stream: TextIO, as_json: bool) -> None:
        self._stream = stream
        self._json = as_json

    def show(self, batch: PolledBatch, message: MessageExt) -> None:
        if self._json:
            line = json.dumps(message_record(message, batch.queue.broker_name), ensure_ascii=False)
        else:
            line = message_line(message)
        self._stream.write(line + "\n")
        self._stream.flush()


async def _poll_or_stop(consumer: PullConsumer, stop: asyncio.Event) -> PolledBatch | None:
    polling = asyncio.ensure_future(consumer.poll_batch(_POLL_S))
    stopping = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({polling, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if polling not in done:
        polling.cancel()
        await asyncio.gather(polling, return_exceptions=True)
        return None
    return polling.result()


async def run_consume(
    where: Target,
    topic: str,
    group: str,
    expression: str,
    start: str,
    timestamp: int | None,
    count: int,
    printer: Printer,
    stop: asyncio.Event,
    *,
    sql: str | None = None,
) -> int:
    """Print messages until ``count`` were printed (0: no limit) or ``stop`` is set; returns how many."""
    consumer = PullConsumer(
        group,
        where.namesrv,
        consume_from=start,
        consume_timestamp=timestamp,
        auto_commit=False,
        access_key=where.access_key,
        secret_key=where.secret_key,
        config=ConsumerConfig(
            strict_consume_from=True,
            request_timeout_ms=where.timeout_ms,
            serialize_type=where.serialize_type,
            ssl=where.ssl,
        ),
    )
    if sql is None:
        consumer.subscribe(topic, expression)
    else:
        consumer.subscribe(topic, sql=sql)
    printed = 0
    await consumer.start()
    try:
        await consumer.fetch_message_queues(topic)  # a missing topic or NameServer: say so, do not wait
        while not stop.is_set() and (count == 0 or printed < count):
            batch = await _poll_or_stop(consumer, stop)
            if batch is None:
                continue
            position = -1
            for message in batch.messages:
                if count and printed >= count:
                    break
                printer.show(batch, message)
                printed += 1
                position = message.queue_offset + 1
            if position >= 0:
                await consumer.commit({batch.queue: position}, persist=False)
    finally:
        await consumer.close()  # commits what was printed
    return printed


async def main(
    where: Target,
    topic: str,
    group: str,
    expression: str,
    start: str,
    timestamp: int | None,
    count: int,
    as_json: bool,
    *,
    sql: str | None = None,
) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        return await run_consume(
            where,
            topic,
            group,
            expression,
            start,
            timestamp,
            count,
            Printer(sys.stdout, as_json),
            stop,
            sql=sql,
        )
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
