"""Which clusters the suite runs against (``ROCKETMQ_PROVIDERS``) and how each one is started.

Families, selected by ``ROCKETMQ_PROVIDERS=python,binaries,docker,mixed`` (unset: all of them):

* ``python`` -- the project's NameServer and Broker (always available);
* ``binaries`` -- Apache's NameServer and Broker from ``ROCKETMQ_HOME`` (one id per distribution);
* ``docker`` -- Apache's images, one id per image of ``ROCKETMQ_DOCKER_IMAGES``;
* ``mixed`` -- an Apache broker registered to the project's NameServer and the project's broker registered
  to an Apache NameServer (binaries), and the project's broker registered to an Apache NameServer in Docker.
  An Apache broker *in Docker* on the project's NameServer is not offered: the container would have to
  reach a NameServer bound to this host's loopback.

A family that cannot run here still yields one provider whose ``unavailable`` says why, so every scenario
shows up as skipped with that reason rather than silently missing.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable
from pathlib import Path

from tests.integration.clusters import apache_binaries, apache_docker, python_servers
from tests.integration.clusters.apache_binaries import ApacheInstall
from tests.integration.clusters.launch import Launch, NamesrvEndpoint
from tests.integration.clusters.model import BROKER_NAME, CLUSTER_NAME, Cluster, ProviderUnavailable
from tests.integration.clusters.probe import wait_for_broker_sync

log = logging.getLogger("tests.clusters.providers")

PROVIDERS_ENV = "ROCKETMQ_PROVIDERS"
FAMILIES = ("python", "binaries", "docker", "mixed")

#: ``start(launch)`` starts a NameServer and a broker registered to it; returns the NameServer's endpoint
#: and what the broker is ("python" or an Apache version).
Starter = Callable[[Launch], tuple[NamesrvEndpoint, str]]


@dataclasses.dataclass(frozen=True)
class ProviderSpec:
    id: str
    family: str
    start: Starter
    #: Seconds from the servers' start until the broker must be listed by the NameServer.
    register_timeout_s: float
    #: Why it cannot run here, or None; computed when the fixture first needs it (a Docker ping is slow).
    unavailable: Callable[[], str | None] = lambda: None


def selected_families() -> list[str]:
    value = os.environ.get(PROVIDERS_ENV, "")
    chosen = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in FAMILIES]
    if unknown:
        raise ValueError(f"{PROVIDERS_ENV}: unknown provider(s) {unknown}; choose from {', '.join(FAMILIES)}")
    return chosen or list(FAMILIES)


def _because(reason: str) -> Callable[[], str | None]:
    return lambda: reason


def _unavailable(reason: str) -> Starter:
    def start(launch: Launch) -> tuple[NamesrvEndpoint, str]:
        raise ProviderUnavailable(reason)

    return start


def _python(launch: Launch) -> tuple[NamesrvEndpoint, str]:
    namesrv = python_servers.start_namesrv(launch)
    python_servers.start_broker(launch, namesrv.addr)
    return namesrv, "python"


def _binaries(install: ApacheInstall) -> Starter:
    def start(launch: Launch) -> tuple[NamesrvEndpoint, str]:
        namesrv = apache_binaries.start_namesrv(launch, install)
        apache_binaries.start_broker(launch, install, namesrv.addr)
        return namesrv, install.version

    return start


def _apache_broker_on_python_namesrv(install: ApacheInstall) -> Starter:
    # The project's NameServer answers as the Apache NameServer of the broker's generation would.
    profile = "4.9.8" if install.version.startswith("4.") else "5.3.3"

    def start(launch: Launch) -> tuple[NamesrvEndpoint, str]:
        namesrv = python_servers.start_namesrv(launch, profile)
        apache_binaries.start_broker(launch, install, namesrv.addr)
        return namesrv, install.version

    return start


def _python_broker_on_apache_namesrv(install: ApacheInstall) -> Starter:
    def start(launch: Launch) -> tuple[NamesrvEndpoint, str]:
        namesrv = apache_binaries.start_namesrv(launch, install)
        python_servers.start_broker(launch, namesrv.addr)
        return namesrv, "python"

    return start


def _docker(image: str) -> Starter:
    def start(launch: Launch) -> tuple[NamesrvEndpoint, str]:
        namesrv = apache_docker.start_namesrv(launch, image)
        apache_docker.start_broker(launch, image, namesrv)
        return namesrv, apache_docker.image_version(image)

    return start


def _python_broker_on_docker_namesrv(image: str) -> Starter:
    def start(launch: Launch) -> tuple[NamesrvEndpoint, str]:
        namesrv = apache_docker.start_namesrv(launch, image)
        python_servers.start_broker(launch, namesrv.addr)
        return namesrv, "python"

    return start


def _installs() -> list[ApacheInstall | tuple[Path, str]]:
    """Each ``ROCKETMQ_HOME`` entry inspected: the install, or (home, what is missing)."""
    found: list[ApacheInstall | tuple[Path, str]] = []
    for home in apache_binaries.homes():
        try:
            found.append(apache_binaries.inspect_install(home))
        except ProviderUnavailable as exc:
            found.append((home, str(exc)))
    return found


def provider_specs() -> list[ProviderSpec]:
    """Every provider of the selected families, available or not (the unavailable ones skip)."""
    families = selected_families()
    installs = _installs() if {"binaries", "mixed"} & set(families) else []
    images = apache_docker.images()
    specs: list[ProviderSpec] = []
    java_s = apache_binaries.BOOT_TIMEOUT_S
    docker_s = float(apache_docker.BOOT_TIMEOUT_S)
    if "python" in families:
        specs.append(ProviderSpec("python", "python", _python, 20.0))
    if "binaries" in families:
        if not installs:
            reason = f"{apache_binaries.HOME_ENV} not set"
            specs.append(ProviderSpec("binaries", "binaries", _unavailable(reason), 0, _because(reason)))
        for entry in installs:
            if isinstance(entry, ApacheInstall):
                specs.append(ProviderSpec(f"binaries-{entry.version}", "binaries", _binaries(entry), java_s))
            else:
                home, why = entry
                specs.append(
                    ProviderSpec(f"binaries-{home.name}", "binaries", _unavailable(why), 0, _because(why))
                )
    if "docker" in families:
        for image in images:
            specs.append(
                ProviderSpec(
                    f"docker-{apache_docker.image_version(image)}",
                    "docker",
                    _docker(image),
                    docker_s,
                    apache_docker.engine_unavailable,
                )
            )
    if "mixed" in families:
        if not installs:
            reason = f"{apache_binaries.HOME_ENV} not set"
            specs.append(ProviderSpec("mixed-binaries", "mixed", _unavailable(reason), 0, _because(reason)))
        for entry in installs:
            if isinstance(entry, ApacheInstall):
                version = entry.version
                specs += [
                    ProviderSpec(
                        f"mixed-apache-{version}-broker-on-python-namesrv",
                        "mixed",
                        _apache_broker_on_python_namesrv(entry),
                        java_s,
                    ),
                    ProviderSpec(
                        f"mixed-python-broker-on-apache-{version}-namesrv",
                        "mixed",
                        _python_broker_on_apache_namesrv(entry),
                        java_s,
                    ),
                ]
            else:
                home, why = entry
                specs.append(
                    ProviderSpec(f"mixed-binaries-{home.name}", "mixed", _unavailable(why), 0, _because(why))
                )
        for image in images:
            specs.append(
                ProviderSpec(
                    f"mixed-python-broker-on-docker-{apache_docker.image_version(image)}-namesrv",
                    "mixed",
                    _python_broker_on_docker_namesrv(image),
                    docker_s,
                    apache_docker.engine_unavailable,
                )
            )
    return specs


def start_cluster(spec: ProviderSpec, work_dir: Path, logs_dir: Path) -> tuple[Cluster, Launch]:
    """Start ``spec``'s servers and wait until the NameServer lists the broker; on any failure everything
    started so far is stopped before the error propagates."""
    work_dir.mkdir(parents=True, exist_ok=True)
    logs_dir.mkdir(parents=True, exist_ok=True)
    launch = Launch(work_dir, logs_dir)
    try:
        namesrv, broker_version = spec.start(launch)
        data = wait_for_broker_sync(
            namesrv.addr, CLUSTER_NAME, BROKER_NAME, spec.register_timeout_s, launch.check_alive
        )
    except BaseException:
        leftovers = launch.stop()
        if leftovers:
            log.error("after a failed start of %s, still running: %s", spec.id, leftovers)
        raise
    cluster = Cluster(
        provider=spec.id,
        version=broker_version,
        namesrv_version=namesrv.version,
        namesrv=namesrv.addr,
        broker_addrs=tuple(addr for _, addr in sorted(data.broker_addrs.items())),
        cluster_name=CLUSTER_NAME,
        broker_name=BROKER_NAME,
        logs_dir=logs_dir,
    )
    return cluster, launch
