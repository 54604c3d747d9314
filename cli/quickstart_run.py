"""The running half of ``rmq quickstart`` (:mod:`cli.quickstart_cmd`): the embedded servers, the topic,
the producer and the pull consumer, imported only once the command line has been checked."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from rich.console import Console

from admin import Admin, TopicNotFoundError
from cli.errors import CliError
from cli.local_cluster import LocalCluster, LocalClusterSettings
from cli.render import broker_row, clusters_table, messages_table, progress_table, route_table
from consumer import ConsumeFromWhere, PullConsumer
from producer import Message, Producer, SendResult
from rocketmq_wire.message import MessageExt

#: The group the read-back reads as (its progress is shown afterwards).
QUICKSTART_GROUP = "QuickstartConsumer"
#: Queues of the topic the quickstart creates.
QUICKSTART_QUEUES = 4
#: How long the read-back waits for every sent message before calling the quickstart failed.
READ_BACK_TIMEOUT_S = 15.0


@contextlib.asynccontextmanager
async def store_or_temporary(store: Path | None) -> AsyncIterator[Path]:
    if store is not None:
        yield store
        return
    with tempfile.TemporaryDirectory(prefix="rmq-quickstart-") as tmp:
        yield Path(tmp)


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


async def _read_back(namesrv: str, topic: str, expected: int, timeout_s: float) -> list[MessageExt]:
    """Every message of the topic, from the start of each queue, with the project's pull consumer.

    It reads as group ``QUICKSTART_GROUP`` and commits what it read when it closes, so the group's
    progress shows up (lag 0) afterwards.
    """
    found: list[MessageExt] = []
    consumer = PullConsumer(
        QUICKSTART_GROUP, namesrv, consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    async with consumer:
        queues = await consumer.fetch_message_queues(topic)
        consumer.assign(queues)
        for queue in queues:
            await consumer.seek_to_begin(queue)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while len(found) < expected and loop.time() < deadline:
            found += await consumer.poll(timeout=max(0.0, min(1.0, deadline - loop.time())))
    return found


async def _topic_routed(admin: Admin, topic: str) -> bool:
    try:
        await admin.topic_route(topic)
    except TopicNotFoundError:
        return False
    return True


async def run(console: Console, settings: LocalClusterSettings, topic: str, count: int, serve: bool) -> None:
    async with LocalCluster(settings) as local:
        console.print(
            f"[bold]NameServer[/] {local.namesrv_address}   [bold]Broker[/] {settings.broker_name} "
            f"{local.broker_address}   [bold]store[/] {settings.store_dir}"
        )
        async with Admin(local.namesrv_address) as admin:
            await admin.create_topic(
                topic,
                cluster=settings.cluster_name,
                read_queue_nums=QUICKSTART_QUEUES,
                write_queue_nums=QUICKSTART_QUEUES,
            )
            await local.wait_for_route(lambda: _topic_routed(admin, topic))
            console.print(f"created topic [bold]{topic}[/] with {QUICKSTART_QUEUES} queues")

            sent: list[SendResult] = []
            async with Producer("QuickstartProducer", local.namesrv_address) as producer:
                for number in range(1, count + 1):
                    body = f"hello #{number} from rmq quickstart".encode()
                    message = Message(topic, body, tags="quickstart", keys=[f"quickstart-{number}"])
                    sent.append(await producer.send(message))
            console.print(f"sent {len(sent)} messages with the project's producer")

            read = await _read_back(local.namesrv_address, topic, len(sent), READ_BACK_TIMEOUT_S)
            read.sort(key=lambda m: (m.queue_id, m.queue_offset))
            console.print(f"read back {len(read)} of {len(sent)} messages with the project's pull consumer:")
            console.print(messages_table(read))
            console.print(progress_table(await admin.consumer_progress(QUICKSTART_GROUP, topic)))
            console.print(route_table(topic, await admin.topic_route(topic)))
            rows = [broker_row(b, await admin.broker_runtime_stats(b.addr)) for b in await admin.brokers()]
            console.print(clusters_table(rows))

        missing = {r.msg_id for r in sent} - {m.unique_id for m in read}
        if missing:
            raise CliError(f"{len(missing)} sent messages were not read back: {', '.join(sorted(missing))}")
        if serve:
            console.print(
                f"serving until Ctrl-C: export NAMESRV_ADDR={local.namesrv_address} "
                f"(e.g. rmq route {topic} -n {local.namesrv_address})"
            )
            sys.stdout.flush()
            await _until_stopped()
            console.print("stopping")
    console.print("NameServer and Broker stopped cleanly")
