"""``rmq broker``: run a Broker in the foreground until Ctrl-C or SIGTERM, then unregister and stop."""

from __future__ import annotations

import contextlib
import enum
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
    from broker import Broker, BrokerConfig
    from broker.config import BrokerRole


class FlushMode(enum.StrEnum):
    ASYNC = "ASYNC"
    SYNC = "SYNC"


class Role(enum.StrEnum):
    """The ``--role`` choices: the values of :class:`broker.config.BrokerRole` (a unit test checks that
    they agree), here so that reading the command line does not import the broker."""

    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


async def _serve(broker: Broker, logs: StartupLogging) -> None:
    import asyncio

    from broker.acl import AclError
    from broker.store import StoreLockedError

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
        except AclError as exc:
            path = str(broker.acl.path) if broker.acl is not None else str(broker.config.acl_path)
            text = str(exc)
            raise CliError(text if path in text else f"ACL file {path}: {text}") from None
        logs.started()
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


def read_config_file(path: Path) -> dict[str, str]:
    """The settings of a broker.conf, refusing what the broker would otherwise skip with a log line or
    choke on: binary or non-UTF-8 content, text ``Properties.load`` cannot read, a value of the wrong type
    (``listenPort=abc``), or a file that sets no broker setting at all."""
    from broker import BrokerConfig
    from broker.config import parse_java, parse_properties

    data = path.read_bytes()
    where = f"--config {path}"
    if b"\0" in data:
        raise CliError(f"{where}: a binary file, not a broker.conf")
    try:
        properties = parse_properties(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CliError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except CodecError as exc:
        raise CliError(f"{where}: {exc}") from None
    defaults, names = BrokerConfig(), BrokerConfig.java_names()
    known = {key: text for key, text in properties.items() if key in names}
    if properties and not known:
        raise CliError(f"{where}: none of its {len(properties)} settings is a broker setting")
    for key, text in known.items():
        current = getattr(defaults, names[key])
        try:
            parse_java(text, type(current) if current is not None else str)
        except ValueError:
            raise CliError(f"{where}: {key}={text!r} is not a valid value") from None
    return properties


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
    role: Role | BrokerRole | None = None,
    ha_port: int | None = None,
    ha_master: str | None = None,
    acl_file: Path | None = None,
    metrics_port: int | None = None,
) -> BrokerConfig:
    """The broker's settings: Java's defaults, then the broker.conf file, then the options actually given."""
    from broker import BrokerConfig

    config = BrokerConfig()
    file_keys: set[str] = set()
    if config_file is not None:
        properties = read_config_file(config_file)
        config.update(properties)
        file_keys = set(properties)
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
    if role is not None:
        config.broker_role = role.value
    if ha_port is not None:
        config.ha_listen_port = ha_port
    elif "haListenPort" not in file_keys:
        config.ha_listen_port = 0  # listenPort + 1, as Apache's start-up derives it
    if ha_master is not None:
        config.ha_master_address = ha_master
    if acl_file is not None:  # --acl FILE: ACL on, with that file (aclEnable=true alone reads Apache's path)
        config.acl_enable = True
        config.acl_file = str(acl_file)
    if metrics_port is not None:  # --metrics-port: Prometheus metrics on, on that port
        config.metrics_exporter_type = "PROM"
        config.metrics_prom_exporter_port = metrics_port
    return config


@friendly
def broker(
    store: Path = typer.Option(
        ...,
        "--store",
        "-s",
        parser=params.store_dir,
        metavar="DIR",
        help="Store directory (commitlog/, consumequeue/, config/ ...)",
    ),
    namesrv: str | None = typer.Option(
        None,
        "--namesrv",
        "-n",
        callback=params.namesrv_addresses,
        help="NameServer address(es), host:port, several separated by ';'",
    ),
    port: int | None = typer.Option(
        None,
        "--port",
        "-p",
        callback=params.port,
        help="Port to listen on (0: any free port) [default: 10911]",
    ),
    host: str | None = typer.Option(
        None, "--host", callback=params.listen_host, help="Address to bind [default: 0.0.0.0]"
    ),
    broker_ip: str | None = typer.Option(
        None,
        "--broker-ip",
        callback=params.ip_address,
        help="Address clients are told to use (brokerIP1; default: --host, or 127.0.0.1)",
    ),
    broker_name: str | None = typer.Option(
        None, "--broker-name", "-b", callback=params.not_blank, help="brokerName [default: broker-a]"
    ),
    cluster: str | None = typer.Option(
        None, "--cluster", "-c", callback=params.not_blank, help="brokerClusterName [default: DefaultCluster]"
    ),
    broker_id: int | None = typer.Option(
        None, "--broker-id", min=0, max=params.JAVA_LONG_MAX, help="brokerId (0: master) [default: 0]"
    ),
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
    role: Role | None = typer.Option(
        None,
        "--role",
        case_sensitive=False,
        help="brokerRole: ASYNC_MASTER, SYNC_MASTER (a send waits for a slave) or SLAVE "
        "(needs --broker-id > 0) [default: ASYNC_MASTER]",
    ),
    ha_port: int | None = typer.Option(
        None,
        "--ha-port",
        callback=params.port,
        help="haListenPort, where slaves connect [default: --port + 1]",
    ),
    ha_master: str | None = typer.Option(
        None,
        "--ha-master",
        callback=params.broker_address,
        help="haMasterAddress: a slave's master HA address, host:port [default: learned from the NameServer]",
    ),
    config_file: Path | None = typer.Option(
        None,
        "--config",
        exists=True,
        dir_okay=False,
        readable=True,
        help="broker.conf with Apache's setting names, applied before the options above",
    ),
    acl_file: Path | None = typer.Option(
        None,
        "--acl",
        exists=True,
        dir_okay=False,
        readable=True,
        help="Enforce Apache's plain ACL with this plain_acl.yml (aclEnable=true); re-read when it changes",
    ),
    metrics_port: int | None = typer.Option(
        None,
        "--metrics-port",
        callback=params.port,
        help="Serve Prometheus metrics on this port at /metrics (metricsExporterType=PROM) [default: off]",
    ),
    tls_mode: TlsModeOption = None,
    tls_config: TlsConfigOption = None,
    log_level: str = typer.Option(
        "INFO", "--log-level", callback=params.log_level, help="DEBUG, INFO, WARNING or ERROR"
    ),
) -> None:
    """Run a Broker: producers send to it, consumers pull from it, it registers with the NameServers."""
    import asyncio

    from broker import Broker

    logs = StartupLogging(log_level)
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
        role=role,
        ha_port=ha_port,
        ha_master=ha_master,
        acl_file=acl_file,
        metrics_port=metrics_port,
    )
    try:
        config.validate()
    except ValueError as exc:
        raise CliError(f"bad broker settings: {exc}") from None
    file_settings = read_config_file(config_file) if config_file is not None else {}
    tls = server_tls(file_settings, tls_mode, tls_config)
    try:
        server = Broker(config, tls=tls)
    except ValueError as exc:  # TlsError: an enforcing broker without its certificate
        raise CliError(str(exc)) from None
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(server, logs))
