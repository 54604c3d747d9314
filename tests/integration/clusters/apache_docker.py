"""Apache RocketMQ's NameServer and Broker in Docker containers, through testcontainers, with no registry.

The image is the suite's own (:func:`~.docker_image.apache_image`: a local Debian base with Java 17 and the
release's jars from Maven Central); nothing is ever pulled, and testcontainers' reaper (ryuk, an image from
Docker Hub) is disabled. The servers start as ``java <opens, heap> -cp /opt/rocketmq/lib/* <Main> -c FILE``,
the JVM options taken from :mod:`tests.integration.apache.jvm` and the main classes from
:mod:`tests.integration.apache.servers`; the config file is copied into the container (no bind mount) and the
broker's store stays inside it.

Every container uses **host networking**: the servers bind free loopback ports chosen on this host (5.x with
``bindAddress=127.0.0.1``; 4.x has no such setting and binds every interface), the broker registers
``127.0.0.1:<port>`` (what clients on this host connect to) and reaches any NameServer on this host's
loopback -- one in Docker or the project's own. That needs the engine to run on this host; a remote engine
(or Docker Desktop's VM) makes the provider unavailable.

On stop a container gets SIGTERM (the JVM's shutdown hooks run) and SIGKILL :data:`STOP_GRACE_S` later, its
output is saved into the launch's ``logs_dir`` (``<name>.log``, and Apache's own log files under
``<name>-home/``), then it is removed and the engine asked that it is gone. Every container is labelled with
its launch (:func:`containers_of` lists what the engine still has of one).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import io
import ipaddress
import itertools
import logging
import os
import re
import tarfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tests.integration.apache import jvm, servers
from tests.integration.apache.releases import ApacheRelease, full_releases
from tests.integration.clusters import configs
from tests.integration.clusters.docker_image import (
    LIB_DIR,
    USER_HOME,
    apache_image,
    docker_sdk,
)
from tests.integration.clusters.launch import Launch, NamesrvEndpoint
from tests.integration.clusters.model import BROKER_NAME, ProviderUnavailable
from tests.integration.clusters.processes import StartupError, free_port, free_port_block

# None of the imports above loads testcontainers (it is imported where a container starts), so this comes
# first: its reaper, ryuk, is an image from Docker Hub, and nothing may be pulled.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

log = logging.getLogger("tests.clusters.docker")

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
#: A JVM's and RocketMQ's start-up on a busy 2-core machine (the image is built before the clock starts).
BOOT_TIMEOUT_S = servers.BOOT_TIMEOUT_S
#: SIGTERM to SIGKILL on stop. The store goes with the container, so a complete shutdown buys nothing but
#: log lines: 4.9.7's broker needs about 6 s, 5.3.3's about 15 s (service threads joined one by one).
STOP_GRACE_S = 5
NAMESRV_CONF = f"{USER_HOME}/namesrv.properties"
BROKER_CONF = f"{USER_HOME}/broker.conf"
STORE_DIR = f"{USER_HOME}/store"
#: Apache's log files (``${user.home}/logs/rocketmqlogs``), copied out before a container is removed.
LOGS_DIR = f"{USER_HOME}/logs"
#: Labels of every container started here: which launch (its logs folder) and which server.
LAUNCH_LABEL = "io.github.rocketmq-toolkit.it.launch"
NAME_LABEL = "io.github.rocketmq-toolkit.it.name"
#: How often the output is searched for the boot line while a server starts.
BOOT_POLL_S = 0.25
#: How often :meth:`Launch.check_alive` may ask the engine whether a container still runs.
CHECK_INTERVAL_S = 1.0
#: How much of a failed container's output goes into the :class:`StartupError` (a Java stack trace).
OUTPUT_TAIL_LINES = 40


class NotBooted(StartupError):
    """A container started and then exited, or never printed its boot line."""


#: Numbers the logs of containers that failed to boot (``<name>-failed-<n>.log``).
_failures = itertools.count(1)


@dataclasses.dataclass(frozen=True)
class DockerServer:
    """A started container: ``addr`` is where this host reaches the server (host networking)."""

    name: str
    image: str
    container_id: str
    addr: str


def releases() -> list[ApacheRelease]:
    """The releases the ``docker`` provider runs (``docker-<version>``): the full ones."""
    return full_releases()


def image_version(release: ApacheRelease | str) -> str:
    """What the servers are: a release's version, or the version in one of our image names
    (``rocketmq-toolkit-it/apache-rocketmq:5.3.3-<digest>`` -> ``5.3.3``)."""
    if isinstance(release, ApacheRelease):
        return release.version
    name = release.rsplit("/", 1)[-1]
    tag = name.split(":", 1)[1] if ":" in name else "latest"
    return tag.split("-", 1)[0]


def docker_host() -> str:
    try:
        from testcontainers.core.docker_client import get_docker_host
    except ImportError:
        return os.environ.get("DOCKER_HOST") or DEFAULT_DOCKER_HOST
    return get_docker_host() or os.environ.get("DOCKER_HOST") or DEFAULT_DOCKER_HOST


def _remote_host(url: str) -> str | None:
    """The engine's host when ``url`` names one other than this host's loopback, else None."""
    parsed = urlparse(url)
    if parsed.scheme in ("unix", "npipe", ""):
        return None
    host = parsed.hostname or ""
    if host == "localhost":
        return None
    try:
        return None if ipaddress.ip_address(host).is_loopback else host
    except ValueError:
        return host


@functools.cache
def engine_unavailable() -> str | None:
    """None when a Docker engine on this host answers a ping, else exactly why not (asked once)."""
    try:
        importlib.import_module("testcontainers")
    except ImportError as exc:
        return f"PyPI package {exc.name} not installed (pip install -e '.[test]')"
    host = docker_host()
    remote = _remote_host(host)
    if remote is not None:
        return f"the Docker engine at {host} is on another host ({remote}); host networking needs a local one"
    try:
        docker = docker_sdk()
        client = docker.from_env(timeout=10)
        try:
            client.ping()
            system = str(client.info().get("OperatingSystem", ""))
        finally:
            client.close()
    except ProviderUnavailable as exc:
        return str(exc)
    except Exception as exc:
        return f"no Docker engine answers at {host}: {exc}"
    if "Docker Desktop" in system:
        return f"the Docker engine at {host} runs in Docker Desktop's VM; host networking needs a local one"
    return None


def require_engine() -> None:
    reason = engine_unavailable()
    if reason is not None:
        raise ProviderUnavailable(reason)


def launch_key(launch: Launch) -> str:
    return str(launch.logs_dir.resolve())


def containers_of(launch: Launch) -> list[str]:
    """Ids of the containers (running or not) the engine still has for ``launch``: none after its stop."""
    docker = docker_sdk()
    client = docker.from_env(timeout=10)
    try:
        found = client.containers.list(all=True, filters={"label": f"{LAUNCH_LABEL}={launch_key(launch)}"})
    finally:
        client.close()
    return [str(container.id) for container in found]


def _java(kind: jvm.Kind, main: str, args: list[str]) -> list[str]:
    """The container's command: ``java`` of the image, the suite's JVM options, every jar of the image."""
    return [
        "java",
        *jvm.HEAPS[kind],
        *jvm.server_options(kind),
        f"-Duser.home={USER_HOME}",
        "-Dfile.encoding=UTF-8",
        *jvm.JAVA17_OPENS,
        "-cp",
        f"{LIB_DIR}/*",  # expanded by the JVM: the image's lib holds the release's jars only
        main,
        *args,
    ]


def _save_logs(container: Any, path: Path) -> list[str]:
    try:
        stdout, stderr = container.get_logs()
    except Exception as exc:  # the container may never have been created
        log.info("no logs from %s: %s", path.name, exc)
        return []
    path.write_bytes(stdout + (b"\n--- stderr ---\n" + stderr if stderr else b""))
    return []


def _save_log_files(container: Any, folder: Path) -> None:
    """Apache's own log files (``~/logs`` in the container) into ``folder``; nothing when there are none."""
    try:
        chunks, _ = container.get_wrapped_container().get_archive(LOGS_DIR)
        data = b"".join(chunks)
    except Exception as exc:
        log.info("no log files from %s: %s", folder.name, exc)
        return
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(folder, filter="data")


def _remove(container: Any, what: str) -> list[str]:
    """Remove the container and check the engine no longer knows it."""
    try:
        container_id = container.get_container_id()
    except Exception:
        return []  # never created
    container.stop()
    docker = docker_sdk()
    client = docker.from_env(timeout=10)
    try:
        client.containers.get(container_id)
    except docker.errors.NotFound:
        return []
    finally:
        client.close()
    return [f"{what}: container {container_id[:12]} still exists"]


def _undo(container: Any, name: str, logs_dir: Path, discard: bool) -> list[str]:
    """Stop gracefully (bounded; at once when the launch is discarded, as for Apache's servers started
    by ``java``), keep the output and log files, remove, verify gone."""
    try:
        wrapped = container.get_wrapped_container()
    except Exception:
        return []  # never created
    try:
        wrapped.stop(timeout=0 if discard else STOP_GRACE_S)
    except Exception as exc:  # already gone, or the engine failed: removal below says which
        log.info("stopping %s: %s", name, exc)
    _save_logs(container, logs_dir / f"{name}.log")
    _save_log_files(container, logs_dir / f"{name}-home")
    return _remove(container, name)


def _liveness(container: Any, name: str) -> Callable[[], None]:
    """A :meth:`Launch.on_check` raising :class:`StartupError` once the container is no longer running
    (asking the engine at most every :data:`CHECK_INTERVAL_S`)."""
    last = [0.0]

    def check() -> None:
        now = time.monotonic()
        if now - last[0] < CHECK_INTERVAL_S:
            return
        last[0] = now
        try:
            wrapped = container.get_wrapped_container()
            wrapped.reload()
        except Exception as exc:
            raise StartupError(f"{name}: container gone: {exc}") from exc
        if wrapped.status != "running":
            state = wrapped.attrs.get("State", {})
            tail = wrapped.logs(tail=20).decode("utf-8", "replace")
            raise StartupError(f"{name}: container {wrapped.status} (exit {state.get('ExitCode')}): {tail}")

    return check


def _run(
    launch: Launch,
    name: str,
    image: str,
    command: list[str],
    files: Mapping[str, str],
    boot: re.Pattern[str],
    addr: str,
) -> DockerServer:
    """Start ``command`` in a container of ``image`` on the host's network with ``files`` copied in, wait
    for ``boot`` in its output; the launch stops and removes it. A container that fails to boot is removed
    at once (its output kept in the launch's logs as ``<name>-failed.log``), and its last lines go into
    the :class:`StartupError`."""
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    labels = {LAUNCH_LABEL: launch_key(launch), NAME_LABEL: name}
    container = DockerContainer(image).with_command(command).with_kwargs(network="host", labels=labels)
    for path, text in files.items():
        container.with_copy_into_container(text.encode(), path)
    container.waiting_for(
        LogMessageWaitStrategy(boot).with_startup_timeout(int(BOOT_TIMEOUT_S)).with_poll_interval(BOOT_POLL_S)
    )
    started = time.monotonic()
    try:
        container.start()
    except Exception as exc:
        output = _output_tail(container)
        leftovers = "".join(f"\n{x}" for x in _undo(container, _failed_name(name), launch.logs_dir, True))
        if isinstance(exc, docker_sdk().errors.DockerException):
            raise StartupError(f"{name} ({image}): the Docker engine refused: {exc}{leftovers}") from exc
        if isinstance(exc, (TimeoutError, RuntimeError, OSError)):
            detail = f"{exc}\n--- the last lines of its output ---\n{output}{leftovers}"
            raise NotBooted(f"{name} ({image}) did not boot: {detail}") from exc
        raise
    launch.on_stop(name, lambda discard: _undo(container, name, launch.logs_dir, discard))
    launch.on_check(_liveness(container, name))
    container_id = container.get_container_id()
    log.info("%s up in container %s in %.1f s", name, container_id[:12], time.monotonic() - started)
    return DockerServer(name, image, container_id, addr)


def _failed_name(name: str) -> str:
    """Where a container that failed to boot leaves its logs: one name per failure, never reused."""
    return f"{name}-failed-{next(_failures)}"


def _output_tail(container: Any, lines: int = OUTPUT_TAIL_LINES) -> str:
    """The last ``lines`` of a container's output (stdout and stderr), or why there are none."""
    try:
        return str(container.get_wrapped_container().logs(tail=lines).decode("utf-8", "replace"))
    except Exception as exc:  # never created, or the engine failed
        return f"(no output: {exc})"


def _with_fresh_ports(name: str, start: Callable[[], DockerServer]) -> DockerServer:
    """``start()`` (which picks its ports), once more when the first container exits before booting.

    Ports are picked free on this host seconds before the JVM binds them, and in that time a server of
    another test worker may take one; the first failure's output is logged, the second is raised."""
    try:
        return start()
    except NotBooted as exc:
        log.warning("%s failed to boot; starting it once more on fresh ports. %s", name, exc)
    return start()


def start_namesrv(launch: Launch, release: ApacheRelease, name: str = "docker-namesrv") -> NamesrvEndpoint:
    """Apache's NameServer of ``release`` in a container, listening on a free port of this host's loopback."""
    require_engine()
    image = apache_image(release)
    command = _java("namesrv", servers.NAMESRV_MAIN, ["-c", NAMESRV_CONF])

    def start() -> DockerServer:
        port = free_port()
        settings = configs.render({"listenPort": str(port), "bindAddress": "127.0.0.1"})
        addr = f"127.0.0.1:{port}"
        return _run(launch, name, image, command, {NAMESRV_CONF: settings}, servers.NAMESRV_BOOT, addr)

    addr = _with_fresh_ports(name, start).addr
    # Containers (on the host's network) reach it where this host does.
    return NamesrvEndpoint(addr, release.version, internal_addr=addr)


def start_broker(
    launch: Launch,
    release: ApacheRelease,
    namesrv: NamesrvEndpoint | str,
    *,
    broker_name: str = BROKER_NAME,
    name: str = "docker-broker",
    extra: Mapping[str, str] | None = None,
) -> DockerServer:
    """Apache's Broker of ``release`` in a container, registered to ``namesrv`` -- an endpoint from
    :func:`start_namesrv` or any ``host:port`` on this host's loopback (the project's NameServer, say) --
    as ``brokerIP1=127.0.0.1`` on a free port block (``port - 2`` VIP, ``port + 1`` HA)."""
    require_engine()
    namesrv_addr = namesrv if isinstance(namesrv, str) else namesrv.addr
    image = apache_image(release)
    command = _java("broker", servers.BROKER_MAIN, ["-c", BROKER_CONF, "-n", namesrv_addr])

    def start() -> DockerServer:
        port = free_port_block()
        settings = configs.broker_properties(
            listen_port=port,
            namesrv_addr=namesrv_addr,
            store_dir=STORE_DIR,
            broker_ip="127.0.0.1",
            broker_name=broker_name,
            extra={"bindAddress": "127.0.0.1", **(extra or {})},
        )
        files = {BROKER_CONF: configs.render(settings)}
        return _run(launch, name, image, command, files, servers.BROKER_BOOT, f"127.0.0.1:{port}")

    return _with_fresh_ports(name, start)
