"""Which clusters the suite runs against (``ROCKETMQ_PROVIDERS``) and how each one is started.

Families, selected by ``ROCKETMQ_PROVIDERS=python,binaries,docker,mixed`` (unset: all of them):

* ``python`` -- the project's NameServer and Broker;
* ``binaries`` -- Apache's NameServer and Broker, ``java -cp`` on jars Maven resolved from Maven Central, one
  id per release of :func:`~tests.integration.apache.releases.releases`;
* ``docker`` -- the same servers in containers of an image built here from those jars (testcontainers);
* ``mixed`` -- per full release: an Apache broker on the project's NameServer, the project's broker on an
  Apache NameServer, one cluster holding an Apache broker and the project's broker (both serving every
  topic created cluster-wide), and the project's broker on an Apache NameServer in Docker.

A provider that cannot run here (no Java, no Maven, no route to Maven Central, no Docker engine) skips every
scenario with that reason -- or fails them when ``ROCKETMQ_REQUIRE_PEERS`` is set, as CI does.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.integration.apache import jvm, maven, servers
from tests.integration.apache.releases import ApacheRelease, full_releases, releases
from tests.integration.clusters import apache_docker, python_servers
from tests.integration.clusters.launch import Launch, NamesrvEndpoint
from tests.integration.clusters.model import (
    BROKER_NAME,
    CLUSTER_NAME,
    SECOND_BROKER_NAME,
    BrokerEndpoint,
    Cluster,
    ProviderUnavailable,
)
from tests.integration.clusters.probe import wait_for_broker_sync
from tests.integration.clusters.processes import StartupError

log = logging.getLogger("tests.clusters.providers")

PROVIDERS_ENV = "ROCKETMQ_PROVIDERS"
FAMILIES = ("python", "binaries", "docker", "mixed")
#: Seconds from the servers' start until the NameServer must list the brokers.
PYTHON_REGISTER_S = 20.0
JAVA_REGISTER_S = 120.0


@dataclasses.dataclass(frozen=True)
class Started:
    """What a starter brought up: the NameServer, and each broker's name and kind ("python" or a version)."""

    namesrv: NamesrvEndpoint
    brokers: tuple[tuple[str, str], ...]


#: ``start(launch)`` starts a NameServer and its brokers.
Starter = Callable[[Launch], Started]


@dataclasses.dataclass(frozen=True)
class ProviderSpec:
    id: str
    family: str
    start: Starter
    register_timeout_s: float
    #: Why it cannot run here, or None; computed when the fixture first needs it (resolving jars and
    #: pinging Docker take time).
    unavailable: Callable[[], str | None] = lambda: None
    #: The Apache release involved, if any (the matrix tests pick their Java client by it).
    release: ApacheRelease | None = None


def selected_families() -> list[str]:
    value = os.environ.get(PROVIDERS_ENV, "")
    chosen = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in FAMILIES]
    if unknown:
        raise ValueError(f"{PROVIDERS_ENV}: unknown provider(s) {unknown}; choose from {', '.join(FAMILIES)}")
    return chosen or list(FAMILIES)


def java_unavailable(release: ApacheRelease) -> str | None:
    """None when Java runs and Maven resolved the release's servers, else what is missing."""
    try:
        jvm.java_major(jvm.java_home())
        maven.classpath("servers", release.version)
    except ProviderUnavailable as exc:
        return str(exc)
    return None


def _either(*checks: Callable[[], str | None]) -> Callable[[], str | None]:
    def unavailable() -> str | None:
        for check in checks:
            reason = check()
            if reason is not None:
                return reason
        return None

    return unavailable


def _profile(release: ApacheRelease) -> str:
    """The Apache NameServer the project's NameServer answers as, next to a broker of ``release``."""
    return "4.9.8" if release.major == 4 else "5.3.3"


def _python(launch: Launch) -> Started:
    namesrv = python_servers.start_namesrv(launch)
    python_servers.start_broker(launch, namesrv.addr)
    return Started(namesrv, ((BROKER_NAME, "python"),))


def _binaries(release: ApacheRelease) -> Starter:
    def start(launch: Launch) -> Started:
        namesrv = servers.start_namesrv(launch, release)
        servers.start_broker(launch, release, namesrv.addr)
        return Started(namesrv, ((BROKER_NAME, release.version),))

    return start


def _apache_broker_on_python_namesrv(release: ApacheRelease) -> Starter:
    def start(launch: Launch) -> Started:
        namesrv = python_servers.start_namesrv(launch, _profile(release))
        servers.start_broker(launch, release, namesrv.addr)
        return Started(namesrv, ((BROKER_NAME, release.version),))

    return start


def _python_broker_on_apache_namesrv(release: ApacheRelease) -> Starter:
    def start(launch: Launch) -> Started:
        namesrv = servers.start_namesrv(launch, release)
        python_servers.start_broker(launch, namesrv.addr)
        return Started(namesrv, ((BROKER_NAME, "python"),))

    return start


def _apache_and_python_brokers(release: ApacheRelease) -> Starter:
    """One cluster, two masters: Apache's (``it-broker-a``) and the project's (``it-broker-b``), on an Apache
    NameServer; a topic created on the cluster lives on both, so clients spread over them."""

    def start(launch: Launch) -> Started:
        namesrv = servers.start_namesrv(launch, release)
        servers.start_broker(launch, release, namesrv.addr)
        python_servers.start_broker(launch, namesrv.addr, broker_name=SECOND_BROKER_NAME)
        return Started(namesrv, ((BROKER_NAME, release.version), (SECOND_BROKER_NAME, "python")))

    return start


def _apache_and_python_brokers_on_python_namesrv(
    release: ApacheRelease, extra: Mapping[str, str] | None = None
) -> Starter:
    """The project's NameServer with two masters in one cluster: Apache's (``it-broker-a``) and the
    project's (``it-broker-b``), both with the ``extra`` broker settings."""

    def start(launch: Launch) -> Started:
        namesrv = python_servers.start_namesrv(launch, _profile(release))
        servers.start_broker(launch, release, namesrv.addr, extra=extra)
        python_servers.start_broker(launch, namesrv.addr, broker_name=SECOND_BROKER_NAME, extra=extra)
        return Started(namesrv, ((BROKER_NAME, release.version), (SECOND_BROKER_NAME, "python")))

    return start


def all_servers_mixed_spec(
    release: ApacheRelease, extra: Mapping[str, str] | None = None, variant: str = ""
) -> ProviderSpec:
    """One cluster of the project's NameServer, an Apache ``release`` broker and the project's broker, both
    brokers started with the ``extra`` settings (those Apache reads only at start: ACL 2.0's, say), which
    ``variant`` names in the id (start-up times are reported by id).

    Not among :func:`provider_specs` (every scenario on the shared ``cluster`` would run on it): a module
    that needs it starts it for itself (:func:`~tests.integration.clusters.fixture.running_cluster`)."""
    return ProviderSpec(
        f"mixed-apache-{release.version}-and-python-brokers-on-python-namesrv"
        + (f"-{variant}" if variant else ""),
        "mixed",
        _apache_and_python_brokers_on_python_namesrv(release, extra),
        JAVA_REGISTER_S,
        functools.partial(java_unavailable, release),
        release,
    )


def _docker(release: ApacheRelease) -> Starter:
    def start(launch: Launch) -> Started:
        namesrv = apache_docker.start_namesrv(launch, release)
        apache_docker.start_broker(launch, release, namesrv.addr)
        return Started(namesrv, ((BROKER_NAME, release.version),))

    return start


def _python_broker_on_docker_namesrv(release: ApacheRelease) -> Starter:
    def start(launch: Launch) -> Started:
        namesrv = apache_docker.start_namesrv(launch, release)
        python_servers.start_broker(launch, namesrv.addr)
        return Started(namesrv, ((BROKER_NAME, "python"),))

    return start


def provider_specs() -> list[ProviderSpec]:
    """Every provider of the selected families, available or not (the unavailable ones skip)."""
    families = selected_families()
    specs: list[ProviderSpec] = []
    if "python" in families:
        specs.append(ProviderSpec("python", "python", _python, PYTHON_REGISTER_S))
    if "binaries" in families:
        for release in releases():
            specs.append(
                ProviderSpec(
                    f"binaries-{release.version}",
                    "binaries",
                    _binaries(release),
                    JAVA_REGISTER_S,
                    functools.partial(java_unavailable, release),
                    release,
                )
            )
    if "docker" in families:
        for release in full_releases():
            specs.append(
                ProviderSpec(
                    f"docker-{release.version}",
                    "docker",
                    _docker(release),
                    JAVA_REGISTER_S,
                    _either(apache_docker.engine_unavailable, functools.partial(java_unavailable, release)),
                    release,
                )
            )
    if "mixed" in families:
        for release in full_releases():
            java = functools.partial(java_unavailable, release)
            v = release.version
            specs += [
                ProviderSpec(
                    f"mixed-apache-{v}-broker-on-python-namesrv",
                    "mixed",
                    _apache_broker_on_python_namesrv(release),
                    JAVA_REGISTER_S,
                    java,
                    release,
                ),
                ProviderSpec(
                    f"mixed-python-broker-on-apache-{v}-namesrv",
                    "mixed",
                    _python_broker_on_apache_namesrv(release),
                    JAVA_REGISTER_S,
                    java,
                    release,
                ),
                ProviderSpec(
                    f"mixed-apache-{v}-and-python-brokers",
                    "mixed",
                    _apache_and_python_brokers(release),
                    JAVA_REGISTER_S,
                    java,
                    release,
                ),
                ProviderSpec(
                    f"mixed-python-broker-on-docker-{v}-namesrv",
                    "mixed",
                    _python_broker_on_docker_namesrv(release),
                    JAVA_REGISTER_S,
                    _either(apache_docker.engine_unavailable, java),
                    release,
                ),
            ]
    return specs


#: What a JVM or the project's servers log when the port they were handed was taken in between.
_PORT_TAKEN = ("Address already in use", "BindException", "EADDRINUSE")


def start_cluster(spec: ProviderSpec, work_dir: Path, logs_dir: Path) -> tuple[Cluster, Launch]:
    """Start ``spec``'s servers and wait until the NameServer lists every broker; on any failure everything
    started so far is stopped before the error propagates.

    Ports are picked free but bound later by another process, so a server of another xdist worker can take
    one in between (the suite saw Apache's NameServer die of a BindException). Such a start, and only such
    a start, is tried once more on fresh ports; the first attempt's logs stay beside the second's.
    """
    first = _new_launch(work_dir, logs_dir)
    try:
        return _start_on(spec, first)
    except StartupError:
        taken = [p.name for p in first.processes if any(mark in p.log_text() for mark in _PORT_TAKEN)]
        if not taken:
            raise
    log.warning("%s: a port was taken before %s bound it; starting once more", spec.id, ", ".join(taken))
    shutil.rmtree(work_dir, ignore_errors=True)
    logs_dir.rename(logs_dir.with_name(logs_dir.name + "-port-taken"))
    return _start_on(spec, _new_launch(work_dir, logs_dir))


def _new_launch(work_dir: Path, logs_dir: Path) -> Launch:
    work_dir.mkdir(parents=True, exist_ok=True)
    logs_dir.mkdir(parents=True, exist_ok=True)
    return Launch(work_dir, logs_dir)


def _start_on(spec: ProviderSpec, launch: Launch) -> tuple[Cluster, Launch]:
    try:
        started = spec.start(launch)
        brokers = []
        for name, kind in started.brokers:
            data = wait_for_broker_sync(
                started.namesrv.addr, CLUSTER_NAME, name, spec.register_timeout_s, launch.check_alive
            )
            brokers.append(BrokerEndpoint(name, data.broker_addrs[0], kind))
    except BaseException:
        leftovers = launch.stop(discard=True)
        if leftovers:
            log.error("after a failed start of %s, still running: %s", spec.id, leftovers)
        raise
    cluster = Cluster(
        provider=spec.id,
        version=brokers[0].kind,
        namesrv_version=started.namesrv.version,
        namesrv=started.namesrv.addr,
        brokers=tuple(brokers),
        cluster_name=CLUSTER_NAME,
        logs_dir=launch.logs_dir,
    )
    return cluster, launch
