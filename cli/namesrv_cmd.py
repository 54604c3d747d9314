"""``rmq namesrv``: run a NameServer in the foreground until Ctrl-C or SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path

import typer

from cli.errors import friendly
from nameserver import DEFAULT_PORT, NameServer, NamesrvConfig, profile_named

_LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s: %(message)s"


async def _serve(server: NameServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await server.start()
        await stop.wait()
        logging.getLogger("nameserver.server").info("shutting down")
    finally:
        await server.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


@friendly
def namesrv(
    port: int = typer.Option(DEFAULT_PORT, "--port", "-p", help="Port to listen on (0: any free port)"),
    host: str = typer.Option("0.0.0.0", "--host", help="Address to bind"),
    apache_version: str = typer.Option(
        "5.3.3", "--apache-version", help="Apache NameServer whose answers to reproduce: 4.9.8 or 5.3.3"
    ),
    kv_config: Path | None = typer.Option(
        None, "--kv-config", help="kvConfig.json to load KV settings from and keep them in (default: memory)"
    ),
    order_message_enable: bool = typer.Option(
        False, "--order-message-enable", help="Put ORDER_TOPIC_CONFIG entries into topic routes"
    ),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Run a NameServer: brokers register with it, clients and mqadmin ask it for routes."""
    try:
        profile = profile_named(apache_version)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--apache-version") from None
    level = logging.getLevelName(log_level.upper())
    if not isinstance(level, int):
        raise typer.BadParameter(f"unknown log level {log_level!r}", param_hint="--log-level")
    logging.basicConfig(level=level, format=_LOG_FORMAT)
    config = NamesrvConfig(
        kv_config_path=None if kv_config is None else str(kv_config),
        order_message_enable=order_message_enable,
    )
    server = NameServer(host, port, config=config, profile=profile)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(server))
