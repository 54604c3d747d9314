"""``rmq namesrv``: run a NameServer in the foreground until Ctrl-C or SIGTERM."""

from __future__ import annotations

import contextlib
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from cli import params
from cli.common import StartupLogging
from cli.errors import CliError, friendly
from cli.tls_options import TlsConfigOption, TlsModeOption, server_tls
from rocketmq_wire.errors import CodecError

if TYPE_CHECKING:
    from nameserver import NameServer

#: ``nameserver.DEFAULT_PORT``, here so that reading the command line does not import the NameServer (a
#: unit test checks that they agree).
DEFAULT_PORT = 9876


async def _serve(server: NameServer, logs: StartupLogging) -> None:
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await server.start()
        logs.started()
        await stop.wait()
        logging.getLogger("nameserver.server").info("shutting down")
    finally:
        await server.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


@friendly
def namesrv(
    port: int = typer.Option(
        DEFAULT_PORT, "--port", "-p", callback=params.port, help="Port to listen on (0: any free port)"
    ),
    host: str = typer.Option("0.0.0.0", "--host", callback=params.listen_host, help="Address to bind"),
    apache_version: str = typer.Option(
        "5.3.3", "--apache-version", help="Apache NameServer whose answers to reproduce: 4.9.8 or 5.3.3"
    ),
    kv_config: Path | None = typer.Option(
        None,
        "--kv-config",
        parser=params.data_file,
        metavar="FILE",
        help="kvConfig.json to load KV settings from and keep them in (default: memory)",
    ),
    order_message_enable: bool = typer.Option(
        False, "--order-message-enable", help="Put ORDER_TOPIC_CONFIG entries into topic routes"
    ),
    tls_mode: TlsModeOption = None,
    metrics_port: int | None = typer.Option(
        None,
        "--metrics-port",
        callback=params.port,
        help="Serve Prometheus metrics on this port at /metrics [default: off]",
    ),
    tls_config: TlsConfigOption = None,
    log_level: str = typer.Option(
        "INFO", "--log-level", callback=params.log_level, help="DEBUG, INFO, WARNING or ERROR"
    ),
) -> None:
    """Run a NameServer: brokers register with it, clients and mqadmin ask it for routes."""
    import asyncio

    from nameserver import NameServer, NamesrvConfig, profile_named

    try:
        profile = profile_named(apache_version)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--apache-version") from None
    logs = StartupLogging(log_level)
    config = NamesrvConfig(
        kv_config_path=None if kv_config is None else str(kv_config),
        order_message_enable=order_message_enable,
    )
    if metrics_port is not None:
        config.metrics_exporter_type = "PROM"
        config.metrics_prom_exporter_port = metrics_port
    tls = server_tls({}, tls_mode, tls_config)
    try:
        server = NameServer(host, port, config=config, profile=profile, tls=tls)
    except ValueError as exc:  # TlsError: an enforcing server without its certificate
        raise CliError(str(exc)) from None
    with contextlib.suppress(KeyboardInterrupt):
        try:
            asyncio.run(_serve(server, logs))
        except CodecError as exc:
            if kv_config is None:
                raise
            # the one file a NameServer reads is its KV config (at start): name the option and the file
            raise CliError(f"--kv-config {kv_config}: {exc}") from None
