"""The ``java_client`` fixture, proposed for ``tests/integration/conftest.py``.

Until the lead moves them there, a test module gets them with
``from tests.integration.java_peer.fixtures import java_client, java_client_unavailable``. To move them,
import both names in ``conftest.py`` (and list them in its ``__all__``) and drop the import from the test
module.

Two fixtures, as for the C++ client: the session-scoped one remembers, per client version, whether the Java
peer compiles and starts (the first check may resolve jars and compile, tens of seconds; later ones are free);
the function-scoped one hands a test a factory ``make(release, serialize) -> JavaClient``, skips (fails when
``ROCKETMQ_REQUIRE_PEERS`` is set) with exactly what is missing, and after the test kills any peer left
running and fails if one of its processes survived.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

import pytest

from tests.integration.apache.cache import peers_required
from tests.integration.apache.releases import ApacheRelease
from tests.integration.java_peer.build import JavaClient, java_peer_unavailable


class JavaClientFactory(Protocol):
    def __call__(
        self, release: ApacheRelease, serialize: str = "JSON", *, tls: bool = False
    ) -> JavaClient: ...


@pytest.fixture(scope="session")
def java_client_unavailable() -> Callable[[ApacheRelease], str | None]:
    """``check(release)``: None when the Java peer of ``release.tools_version`` works here, else why not.

    A function rather than a value (unlike ``cpp_client_unavailable``): each client release is compiled and
    probed on first use only.
    """
    known: dict[str, str | None] = {}

    def check(release: ApacheRelease) -> str | None:
        if release.tools_version not in known:
            known[release.tools_version] = java_peer_unavailable(release)
        return known[release.tools_version]

    return check


@pytest.fixture
def java_client(
    java_client_unavailable: Callable[[ApacheRelease], str | None],
) -> Iterator[JavaClientFactory]:
    """Apache's Java client as a peer: ``java_client(release, "ROCKETMQ")`` is a :class:`JavaClient` whose
    every command runs in a JVM of its own.

    Skips (or fails, when peers are required) with the missing thing, e.g. "no javac in /usr/lib/jvm/…/bin".
    """
    made: list[JavaClient] = []

    def make(release: ApacheRelease, serialize: str = "JSON", *, tls: bool = False) -> JavaClient:
        reason = java_client_unavailable(release)
        if reason is not None:
            if peers_required():
                pytest.fail(f"Java peer required but unavailable: {reason}")
            pytest.skip(reason)
        client = JavaClient(release, serialize, tls=tls)
        made.append(client)
        return client

    yield make
    survivors = sorted({pid for client in made for pid in client.close()})
    assert not survivors, f"Java client peer processes left behind: {survivors}"
