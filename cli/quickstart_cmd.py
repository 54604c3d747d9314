"""``rmq quickstart``: a NameServer and a Broker in this process, a topic, a few messages sent with the
project's producer and read back with its pull consumer -- the whole path in one command, nothing to install.

The store goes to a temporary directory (deleted afterwards) unless ``--store`` names one. With
``--serve`` both servers keep running until Ctrl-C / SIGTERM, so other ``rmq`` commands, Java clients or
mqadmin can be pointed at them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from cli import params
from cli.common import out, quiet_logging, run_async
from cli.errors import friendly

QUICKSTART_TOPIC = "QuickstartTopic"


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
    from cli.local_cluster import LocalClusterSettings
    from cli.quickstart_run import run, store_or_temporary

    quiet_logging()
    logging.getLogger().setLevel(log_level)
    console = out()

    async def main() -> None:
        async with store_or_temporary(store) as where:
            settings = LocalClusterSettings(
                store_dir=where, host=host, namesrv_port=namesrv_port, broker_port=broker_port
            )
            await run(console, settings, topic, messages, serve)

    run_async(main())
