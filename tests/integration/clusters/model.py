"""What the ``cluster`` fixture hands a test, and the failures a provider may report."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

#: Cluster and broker names every provider configures: not Apache's defaults, so a scenario that finds
#: them proves the setting travelled through the broker's registration.
CLUSTER_NAME = "ItCluster"
BROKER_NAME = "it-broker-a"


class ProviderUnavailable(Exception):
    """This provider cannot run here; ``str(exc)`` names exactly what is missing (the skip reason)."""


@dataclasses.dataclass(frozen=True)
class Cluster:
    """A running NameServer with one broker registered to it.

    ``provider`` is the pytest id of the set-up (``python``, ``binaries-5.3.3``, ``docker-4.9.6``,
    ``mixed-python-broker-on-apache-5.3.3-namesrv`` …); ``version`` is what the *broker* is (``python`` or an
    Apache version), ``namesrv_version`` what the NameServer is. ``logs_dir`` holds every server's output and
    is kept when a test using the cluster failed.
    """

    provider: str
    version: str
    namesrv_version: str
    namesrv: str
    broker_addrs: tuple[str, ...]
    cluster_name: str
    broker_name: str
    logs_dir: Path

    @property
    def broker_addr(self) -> str:
        """The master's address (the only broker of every provider)."""
        return self.broker_addrs[0]


def unique_name(prefix: str) -> str:
    """A topic or group name no other test uses (tests share a cluster, never its data)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
