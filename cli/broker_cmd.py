"""``rmq broker``: run a Broker in the foreground until Ctrl-C or SIGTERM, then unregister and stop."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import signal
from pathlib import Path

import typer

from broker import Broker, BrokerConfig
from broker.store import StoreLockedError
from cli.errors import CliError, friendly

_LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s: %(message)s"


class FlushMode(enum.StrEnum):
    ASYNC = "ASYNC"
    SYNC = "SYNC"


async def _serve(broker: Broker) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    log = logging.getLogger("broker")
    try:
        try:
            await broker.start()
        except StoreLockedError as exc:
            raise CliError(f"{exc}: is another broker using it?") from None
        for result in broker.registration.last_results:
            if result.ok:
                log.info("registered with NameServer %s", result.namesrv)
            else:
                log.warning(
                    "NameServer %s unreachable for now (%s); retrying every cycle",
                    result.namesrv,
                    result.error,
                )
        await stop.wait()
        log.info("shutting down")
    finally:
        await broker.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


@friendly
def broker(
    store: Path = typer.Option(
        ..., "--store", "-s", help="Store directory (commitlog/, consumequeue/, config/ ...)"
    ),
    namesrv: str | None = typer.Option(
        None, "--namesrv", "-n", help="NameServer address(es), host:port, several separated by ';'"
    ),
    port: int = typer.Option(10911, "--port", "-p", help="Port to listen on (0: any free port)"),
    host: str = typer.Option("0.0.0.0", "--host", help="Address to bind"),
    broker_ip: str | None = typer.Option(
        None, "--broker-ip", help="Address clients are told to use (brokerIP1; default: --host, or 127.0.0.1)"
    ),
    broker_name: str = typer.Option("broker-a", "--broker-name", "-b", help="brokerName"),
    cluster: str = typer.Option("DefaultCluster", "--cluster", "-c", help="brokerClusterName"),
    broker_id: int = typer.Option(0, "--broker-id", help="brokerId (0: master)"),
    flush: FlushMode = typer.Option(
        FlushMode.ASYNC,
        "--flush",
        case_sensitive=False,
        help="ASYNC: acknowledge once written; SYNC: once fsynced",
    ),
    auto_create_topic: bool = typer.Option(
        True,
        "--auto-create-topic/--no-auto-create-topic",
        help="Create unknown topics on first send (TBW102)",
    ),
    config_file: Path | None = typer.Option(
        None, "--config", help="broker.conf with Apache's setting names, applied before the options above"
    ),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Run a Broker: producers send to it, consumers pull from it, it registers with the NameServers."""
    level = logging.getLevelName(log_level.upper())
    if not isinstance(level, int):
        raise typer.BadParameter(f"unknown log level {log_level!r}", param_hint="--log-level")
    logging.basicConfig(level=level, format=_LOG_FORMAT)
    if config_file is not None:
        config = BrokerConfig.from_properties(config_file.read_text(encoding="utf-8"))
    else:
        config = BrokerConfig()
    config.store_path_root_dir = str(store)
    config.namesrv_addr = namesrv or config.namesrv_addr
    config.listen_port = port
    config.listen_host = host
    ip = broker_ip or (host if host not in ("0.0.0.0", "::", "") else "127.0.0.1")
    config.broker_ip1 = config.broker_ip2 = ip
    config.broker_name = broker_name
    config.broker_cluster_name = cluster
    config.broker_id = broker_id
    config.flush_disk_type = f"{flush.value}_FLUSH"
    config.auto_create_topic_enable = auto_create_topic
    try:
        config.validate()
    except ValueError as exc:
        raise CliError(f"bad broker settings: {exc}") from None
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(Broker(config)))
