"""What the ``cluster`` fixture hands a test, and the failures a provider may report."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

#: Cluster and broker names every provider configures: not Apache's defaults, so a scenario that finds
#: them proves the setting travelled through the broker's registration.
CLUSTER_NAME = "ItCluster"
BROKER_NAME = "it-broker-a"
#: The second broker of a two-broker cluster (an Apache broker and the project's in one cluster).
SECOND_BROKER_NAME = "it-broker-b"


class ProviderUnavailable(Exception):
    """This provider cannot run here; ``str(exc)`` names exactly what is missing (the skip reason)."""


@dataclasses.dataclass(frozen=True)
class BrokerEndpoint:
    """One master broker of a test cluster; ``kind`` is "python" or an Apache version."""

    name: str
    addr: str
    kind: str


@dataclasses.dataclass(frozen=True)
class Cluster:
    """A running NameServer with one or two master brokers registered to it.

    ``provider`` is the pytest id of the set-up (``python``, ``binaries-5.3.3``, ``docker-4.9.7``,
    ``mixed-python-broker-on-apache-5.3.3-namesrv`` …); ``version`` is what the first broker is (``python``
    or an Apache version), ``namesrv_version`` what the NameServer is. ``brokers`` lists every broker (the
    first is ``broker_name``/``broker_addr``). ``logs_dir`` holds every server's output and is kept when a
    test using the cluster failed.
    """

    provider: str
    version: str
    namesrv_version: str
    namesrv: str
    brokers: tuple[BrokerEndpoint, ...]
    cluster_name: str
    logs_dir: Path

    @property
    def broker_name(self) -> str:
        return self.brokers[0].name

    @property
    def broker_addr(self) -> str:
        """The first broker's address."""
        return self.brokers[0].addr

    @property
    def broker_addrs(self) -> tuple[str, ...]:
        return tuple(b.addr for b in self.brokers)

    @property
    def broker_names(self) -> frozenset[str]:
        return frozenset(b.name for b in self.brokers)


def unique_name(prefix: str) -> str:
    """A topic or group name no other test uses (tests share a cluster, never its data)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
