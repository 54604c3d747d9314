"""The project's NameServer and Broker as real subprocesses on free loopback ports.

Subprocesses rather than in-process servers: the scenarios then exercise the same start-up, signal handling
and shutdown a user gets from ``rmq namesrv`` and ``rmq broker``, and a server bug cannot hang the tests.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.integration.clusters import configs
from tests.integration.clusters.launch import Launch, NamesrvEndpoint
from tests.integration.clusters.model import BROKER_NAME
from tests.integration.clusters.probe import wait_for_namesrv_sync
from tests.integration.clusters.processes import ManagedProcess, free_port, free_port_block

REPO_ROOT = Path(__file__).resolve().parents[3]
#: The Apache NameServer whose answers the project's NameServer reproduces (unless a mixed set-up pairs it
#: with an Apache 4.x broker).
NAMESRV_PROFILE = "5.3.3"
GRACE_S = 10.0
START_TIMEOUT_S = 20.0


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return env


def start_namesrv(launch: Launch, profile: str = NAMESRV_PROFILE) -> NamesrvEndpoint:
    """``rmq namesrv`` (run as ``python -m cli.main``, so no installed script is needed), answering as the
    Apache NameServer ``profile`` ("4.9.8" or "5.3.3") does."""
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "cli.main",
        "namesrv",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--apache-version",
        profile,
    ]
    launch.process("python-namesrv", argv, env=python_env(), cwd=REPO_ROOT, grace_s=GRACE_S)
    addr = f"127.0.0.1:{port}"
    wait_for_namesrv_sync(addr, START_TIMEOUT_S, launch.check_alive)
    return NamesrvEndpoint(addr, "python")


def broker_argv(
    config: Path,
    store: str,
    namesrv_addr: str,
    settings: Mapping[str, str],
    *,
    port: int,
    host: str = "127.0.0.1",
    broker_ip: str = "127.0.0.1",
    extra: Sequence[str] = (),
) -> list[str]:
    """``rmq broker`` (as ``python -m cli.main``) on ``config``, its options repeating what the file says
    (they win over it): where it listens (``host``), the address it announces (``broker_ip``), its cluster
    and name from ``settings``; ``extra`` options follow."""
    return [
        sys.executable,
        "-m",
        "cli.main",
        "broker",
        "--config",
        str(config),
        "--store",
        store,
        "--namesrv",
        namesrv_addr,
        "--host",
        host,
        "--broker-ip",
        broker_ip,
        "--port",
        str(port),
        "--cluster",
        settings["brokerClusterName"],
        "--broker-name",
        settings["brokerName"],
        *extra,
    ]


def start_broker(
    launch: Launch,
    namesrv_addr: str,
    *,
    broker_name: str = BROKER_NAME,
    name: str = "python-broker",
    extra: Mapping[str, str] | None = None,
) -> ManagedProcess:
    """``rmq broker`` on a free loopback port with its store under the launch's work folder.

    The settings without a command-line option (transaction check timing, disk ratio …) come from the same
    ``broker.conf`` an Apache broker gets (``--config``), plus ``extra`` (e.g. a slave's ``brokerId`` and
    ``brokerRole``); the options, which win over the file, repeat the file's values. The port after the
    broker's is free too: a master's HA port is listenPort + 1.
    """
    port = free_port_block((0, 1))
    store = launch.work_dir / f"{name}-store"
    settings = configs.broker_properties(
        listen_port=port,
        namesrv_addr=namesrv_addr,
        store_dir=str(store),
        broker_name=broker_name,
        extra={"listenHost": "127.0.0.1", **(extra or {})},
    )
    config = configs.write_properties(launch.work_dir / f"{name}.conf", settings)
    argv = broker_argv(config, str(store), namesrv_addr, settings, port=port)
    return launch.process(name, argv, env=python_env(), cwd=REPO_ROOT, grace_s=GRACE_S)
