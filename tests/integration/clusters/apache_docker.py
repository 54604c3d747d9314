"""Apache RocketMQ's official images (``apache/rocketmq:<version>``) through testcontainers.

The images' working directory is the distribution's ``bin``; the documented start is ``sh mqnamesrv`` and
``sh mqbroker -c FILE``, and ``JAVA_OPT_EXT`` reaches the java command line as in the binary distribution.

A broker tells clients the address it registers (``brokerIP1:listenPort``), so that address must work from
this host: ``brokerIP1`` is the address the host reaches the Docker engine's published ports at, and the
broker's ports are published on the *same* host port numbers (``listenPort``, ``listenPort - 2`` for the VIP
channel, ``listenPort + 1`` for HA). The NameServer is reached from the broker over the containers' own
network (alias ``rmq-namesrv``) and from this host through a published port.

The broker's config file is copied into the container (no bind mount), which also works with a remote
engine. Ports are published on loopback when this host reaches the engine there (a local engine).
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import re
import socket
from pathlib import Path
from typing import Any, cast

from tests.integration.clusters import configs
from tests.integration.clusters.launch import Launch, NamesrvEndpoint
from tests.integration.clusters.model import ProviderUnavailable
from tests.integration.clusters.processes import free_port, free_port_block

log = logging.getLogger("tests.clusters.docker")

IMAGES_ENV = "ROCKETMQ_DOCKER_IMAGES"
DEFAULT_IMAGES = ("apache/rocketmq:4.9.6", "apache/rocketmq:5.3.3")
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
#: Pulling an image on first use is part of the start-up.
BOOT_TIMEOUT_S = 300
NAMESRV_ALIAS = "rmq-namesrv"
NAMESRV_PORT = 9876
BROKER_CONF = "/home/rocketmq/it-broker.conf"
JAVA_OPT_EXT = "-Xms256m -Xmx256m -Xmn128m -XX:MaxDirectMemorySize=512m"
NAMESRV_BOOT = r"The Name Server boot success"
BROKER_BOOT = r"The broker\[[^\]]*\] boot success"


def _docker_sdk() -> Any:
    """docker-py (testcontainers' dependency), imported here because it ships no type information."""
    docker = importlib.import_module("docker")
    importlib.import_module("docker.errors")
    return docker


def images() -> list[str]:
    """``ROCKETMQ_DOCKER_IMAGES`` (comma separated) or the defaults."""
    value = os.environ.get(IMAGES_ENV, "")
    chosen = [image.strip() for image in value.split(",") if image.strip()]
    return chosen or list(DEFAULT_IMAGES)


def image_version(image: str) -> str:
    """The tag (``apache/rocketmq:5.3.3`` -> ``5.3.3``); ``latest`` when there is none."""
    name = image.rsplit("/", 1)[-1]
    return name.split(":", 1)[1] if ":" in name else "latest"


def docker_host() -> str:
    try:
        from testcontainers.core.docker_client import get_docker_host
    except ImportError:
        return os.environ.get("DOCKER_HOST") or DEFAULT_DOCKER_HOST
    return get_docker_host() or DEFAULT_DOCKER_HOST


@functools.cache
def engine_unavailable() -> str | None:
    """None when a Docker engine answers a ping, else exactly why not (asked once per session)."""
    try:
        importlib.import_module("testcontainers")
        docker = _docker_sdk()
    except ImportError as exc:
        return f"PyPI package {exc.name} not installed (pip install -e '.[test]')"
    host = docker_host()
    try:
        client = docker.from_env(timeout=10)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        return f"no Docker engine answers at {host}: {exc}"
    return None


def require_engine() -> None:
    reason = engine_unavailable()
    if reason is not None:
        raise ProviderUnavailable(reason)


def _host_address() -> str:
    """The IPv4 address this host reaches the engine's published ports at (what ``brokerIP1`` must be)."""
    from testcontainers.core.docker_client import DockerClient

    host = DockerClient().host()
    return socket.gethostbyname(host)


def _publish(container: Any, port: int, host_port: int, host_address: str) -> None:
    """Publish ``port`` on ``host_port``; on loopback only when that is where this host reaches the engine
    (a remote engine, or one reached through a gateway from inside a container, needs every interface).
    docker-py takes a ``(host_ip, host_port)`` pair where testcontainers' signature says int."""
    binding: object = ("127.0.0.1", host_port) if host_address.startswith("127.") else host_port
    container.ports[f"{port}/tcp"] = cast(Any, binding)


def _save_logs(container: Any, path: Path) -> list[str]:
    try:
        stdout, stderr = container.get_logs()
    except Exception as exc:  # the container may never have been created
        log.info("no logs from %s: %s", path.name, exc)
        return []
    path.write_bytes(stdout + (b"\n--- stderr ---\n" + stderr if stderr else b""))
    return []


def _remove(container: Any, what: str) -> list[str]:
    """Remove the container and check the engine no longer knows it."""
    try:
        container_id = container.get_container_id()
    except Exception:
        return []  # never created
    container.stop()
    docker = _docker_sdk()
    client = docker.from_env(timeout=10)
    try:
        client.containers.get(container_id)
    except docker.errors.NotFound:
        return []
    finally:
        client.close()
    return [f"{what}: container {container_id[:12]} still exists"]


def start_namesrv(launch: Launch, image: str) -> NamesrvEndpoint:
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    require_engine()
    network = Network().create()
    launch.on_stop("docker network", lambda: _remove_network(network))
    host_port = free_port()
    host_address = _host_address()
    container = (
        DockerContainer(image)
        .with_command("sh mqnamesrv")
        .with_network(network)
        .with_network_aliases(NAMESRV_ALIAS)
        .with_env("JAVA_OPT_EXT", JAVA_OPT_EXT)
        .waiting_for(LogMessageWaitStrategy(re.compile(NAMESRV_BOOT)).with_startup_timeout(BOOT_TIMEOUT_S))
    )
    _publish(container, NAMESRV_PORT, host_port, host_address)
    launch.on_stop("docker namesrv", lambda: _remove(container, "docker namesrv"))
    launch.on_stop(
        "docker namesrv logs", lambda: _save_logs(container, launch.logs_dir / "docker-namesrv.log")
    )
    container.start()
    return NamesrvEndpoint(
        f"{host_address}:{host_port}",
        image_version(image),
        internal_addr=f"{NAMESRV_ALIAS}:{NAMESRV_PORT}",
        docker_network=network,
    )


def start_broker(launch: Launch, image: str, namesrv: NamesrvEndpoint) -> None:
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    require_engine()
    network = namesrv.docker_network
    if network is None or namesrv.internal_addr is None:
        raise ProviderUnavailable(
            "an Apache broker in Docker needs its NameServer on the same Docker network"
        )
    port = free_port_block()
    host_address = _host_address()
    settings = configs.broker_properties(
        listen_port=port,
        namesrv_addr=namesrv.internal_addr,
        store_dir=None,
        broker_ip=host_address,
    )
    container = (
        DockerContainer(image)
        .with_command(f"sh mqbroker -c {BROKER_CONF}")
        .with_network(network)
        .with_env("JAVA_OPT_EXT", JAVA_OPT_EXT)
        .with_env("NAMESRV_ADDR", namesrv.internal_addr)
        .with_copy_into_container(configs.render(settings).encode(), BROKER_CONF)
        .waiting_for(LogMessageWaitStrategy(re.compile(BROKER_BOOT)).with_startup_timeout(BOOT_TIMEOUT_S))
    )
    for published in (port - 2, port, port + 1):
        _publish(container, published, published, host_address)
    launch.on_stop("docker broker", lambda: _remove(container, "docker broker"))
    launch.on_stop("docker broker logs", lambda: _save_logs(container, launch.logs_dir / "docker-broker.log"))
    container.start()


def _remove_network(network: Any) -> list[str]:
    try:
        network.remove()
    except AssertionError:
        return []  # never created
    return []
