"""``rmq quickstart``: a NameServer and a Broker in this process, a topic, a few messages sent with the
project's producer and read back with its pull consumer -- the whole path in one command, nothing to install.

The store goes to a temporary directory (deleted afterwards) unless ``--store`` names one. With
``--serve`` both servers keep running until Ctrl-C / SIGTERM, so other ``rmq`` commands, Java clients or
mqadmin can be pointed at them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from admin import Admin, TopicNotFoundError
from cli import params
from cli.common import out, quiet_logging, run_async
from cli.errors import CliError, friendly
from cli.local_cluster import LocalCluster, LocalClusterSettings
from cli.render import broker_row, clusters_table, messages_table, progress_table, route_table
from consumer import ConsumeFromWhere, PullConsumer
from producer import Message, Producer, SendResult
from rocketmq_wire.message import MessageExt

QUICKSTART_TOPIC = "QuickstartTopic"
QUICKSTART_GROUP = "QuickstartConsumer"
QUICKSTART_QUEUES = 4
#: How long the read-back waits for every sent message before calling the quickstart failed.
READ_BACK_TIMEOUT_S = 15.0


@contextlib.asynccontextmanager
async def _store(store: Path | None) -> AsyncIterator[Path]:
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


async def _run(console: Console, settings: LocalClusterSettings, topic: str, count: int, serve: bool) -> None:
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


@friendly
def quickstart(
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            parser=params.store_dir,
            metavar="DIR",
            help="Keep the broker's store here (default: a temporary dir)",
        ),
    ] = None,
    serve: Annotated[bool, typer.Option("--serve", help="Keep both servers running until Ctrl-C")] = False,
    topic: Annotated[
        str, typer.Option("--topic", "-t", callback=params.topic_name, help="Topic to create and use")
    ] = QUICKSTART_TOPIC,
    messages: Annotated[
        int, typer.Option("--messages", "-m", min=1, max=10_000, help="How many to send")
    ] = 5,
    host: Annotated[
        str, typer.Option("--host", callback=params.listen_host, help="Address both servers bind")
    ] = "127.0.0.1",
    namesrv_port: Annotated[
        int, typer.Option("--namesrv-port", callback=params.port, help="0: any free")
    ] = 0,
    broker_port: Annotated[int, typer.Option("--broker-port", callback=params.port, help="0: any free")] = 0,
    log_level: Annotated[
        str, typer.Option("--log-level", callback=params.log_level, help="DEBUG, INFO, WARNING or ERROR")
    ] = "ERROR",
) -> None:
    """Start an embedded NameServer and Broker, create a topic, send and read back a few messages."""
    quiet_logging()
    logging.getLogger().setLevel(log_level)
    console = out()

    async def main() -> None:
        async with _store(store) as where:
            settings = LocalClusterSettings(
                store_dir=where, host=host, namesrv_port=namesrv_port, broker_port=broker_port
            )
            await _run(console, settings, topic, messages, serve)

    run_async(main())
