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


def _property_names(text: str) -> set[str]:
    """The setting names a broker.conf sets (comments and blank lines skipped)."""
    names = set()
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "!")) and "=" in stripped:
            names.add(stripped.split("=", 1)[0].strip())
    return names


def build_config(
    store: Path,
    config_file: Path | None,
    *,
    namesrv: str | None = None,
    port: int | None = None,
    host: str | None = None,
    broker_ip: str | None = None,
    broker_name: str | None = None,
    cluster: str | None = None,
    broker_id: int | None = None,
    flush: FlushMode | None = None,
    auto_create_topic: bool | None = None,
) -> BrokerConfig:
    """The broker's settings: Java's defaults, then the broker.conf file, then the options actually given."""
    file_keys: set[str] = set()
    if config_file is not None:
        text = config_file.read_text(encoding="utf-8")
        config = BrokerConfig.from_properties(text)
        file_keys = _property_names(text)
    else:
        config = BrokerConfig()
    # An option given on the command line wins over the file; one left out keeps the file's (or Java's) value.
    config.store_path_root_dir = str(store)
    if namesrv:
        config.namesrv_addr = namesrv
    if port is not None:
        config.listen_port = port
    if host is not None:
        config.listen_host = host
    if broker_ip is not None:
        config.broker_ip1 = config.broker_ip2 = broker_ip
    elif "brokerIP1" not in file_keys:
        bound = config.listen_host
        config.broker_ip1 = config.broker_ip2 = bound if bound not in ("0.0.0.0", "::", "") else "127.0.0.1"
    if broker_name is not None:
        config.broker_name = broker_name
    if cluster is not None:
        config.broker_cluster_name = cluster
    if broker_id is not None:
        config.broker_id = broker_id
    if flush is not None:
        config.flush_disk_type = f"{flush.value}_FLUSH"
    if auto_create_topic is not None:
        config.auto_create_topic_enable = auto_create_topic
    return config


@friendly
def broker(
    store: Path = typer.Option(
        ..., "--store", "-s", help="Store directory (commitlog/, consumequeue/, config/ ...)"
    ),
    namesrv: str | None = typer.Option(
        None, "--namesrv", "-n", help="NameServer address(es), host:port, several separated by ';'"
    ),
    port: int | None = typer.Option(
        None, "--port", "-p", help="Port to listen on (0: any free port) [default: 10911]"
    ),
    host: str | None = typer.Option(None, "--host", help="Address to bind [default: 0.0.0.0]"),
    broker_ip: str | None = typer.Option(
        None, "--broker-ip", help="Address clients are told to use (brokerIP1; default: --host, or 127.0.0.1)"
    ),
    broker_name: str | None = typer.Option(
        None, "--broker-name", "-b", help="brokerName [default: broker-a]"
    ),
    cluster: str | None = typer.Option(
        None, "--cluster", "-c", help="brokerClusterName [default: DefaultCluster]"
    ),
    broker_id: int | None = typer.Option(None, "--broker-id", help="brokerId (0: master) [default: 0]"),
    flush: FlushMode | None = typer.Option(
        None,
        "--flush",
        case_sensitive=False,
        help="ASYNC: acknowledge once written; SYNC: once fsynced [default: ASYNC]",
    ),
    auto_create_topic: bool | None = typer.Option(
        None,
        "--auto-create-topic/--no-auto-create-topic",
        help="Create unknown topics on first send (TBW102) [default: on]",
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
    config = build_config(
        store,
        config_file,
        namesrv=namesrv,
        port=port,
        host=host,
        broker_ip=broker_ip,
        broker_name=broker_name,
        cluster=cluster,
        broker_id=broker_id,
        flush=flush,
        auto_create_topic=auto_create_topic,
    )
    try:
        config.validate()
    except ValueError as exc:
        raise CliError(f"bad broker settings: {exc}") from None
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(Broker(config)))
