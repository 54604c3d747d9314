"""Which Apache RocketMQ releases the suite runs against, and the artifact versions each one needs.

``ROCKETMQ_VERSIONS`` (comma separated) picks them; unset, the defaults below. A release is named by its
servers' version. Maven Central serves no ``rocketmq-namesrv`` or ``rocketmq-broker`` 4.9.8 (only its client,
tools and lower modules), so the 4.x line runs 4.9.7's servers with 4.9.8's client and mqadmin.

``full`` releases run through every set-up of the matrix (Apache servers alone, mixed with the project's, in
Docker); the others run with Apache's own NameServer and Broker only.
"""

from __future__ import annotations

import dataclasses
import os

VERSIONS_ENV = "ROCKETMQ_VERSIONS"


@dataclasses.dataclass(frozen=True)
class ApacheRelease:
    #: The servers' version (what the broker reports, e.g. V4_9_7), used in provider ids.
    version: str
    #: The version of rocketmq-tools and rocketmq-client: mqadmin and the Java client peers.
    tools_version: str
    full: bool

    @property
    def major(self) -> int:
        return int(self.version.split(".", 1)[0])


#: The newest release of each line that Maven Central serves whole, and the newest 5.x.
DEFAULT_RELEASES = (
    ApacheRelease("4.9.7", "4.9.8", full=True),
    ApacheRelease("5.3.3", "5.3.3", full=True),
    ApacheRelease("5.5.0", "5.5.0", full=False),
)
#: Servers whose own client/tools release is missing or older on Maven Central.
_TOOLS_FOR = {"4.9.7": "4.9.8"}


def releases() -> list[ApacheRelease]:
    value = os.environ.get(VERSIONS_ENV, "")
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    if not chosen:
        return list(DEFAULT_RELEASES)
    known = {r.version: r for r in DEFAULT_RELEASES}
    return [known.get(v) or ApacheRelease(v, _TOOLS_FOR.get(v, v), full=True) for v in chosen]


def full_releases() -> list[ApacheRelease]:
    return [r for r in releases() if r.full]
