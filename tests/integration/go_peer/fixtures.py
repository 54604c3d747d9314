"""The ``go_client`` fixtures, proposed for ``tests/integration/conftest.py``.

Until they move there, a test module gets them with
``from tests.integration.go_peer.fixtures import go_client, go_client_unavailable``.

Why two fixtures: checking the Go peer builds it (once per source version; the first build downloads the Go
client from the module proxy) and runs its ``probe``, which the session-scoped one caches; the
function-scoped one skips with exactly what is missing — or fails, when ``ROCKETMQ_REQUIRE_PEERS=1`` says
a missing peer is an error — and after the test kills any peer the test left running and fails if one of
its processes survived.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.integration.go_peer.build import GoClient, go_peer_unavailable

#: Set to 1 (as CI may) to make a missing peer fail the tests that need it instead of skipping them.
REQUIRE_PEERS_ENV = "ROCKETMQ_REQUIRE_PEERS"


@pytest.fixture(scope="session")
def go_client_unavailable() -> str | None:
    """None when the Go peer builds and runs here, else the reason it does not."""
    return go_peer_unavailable()


@pytest.fixture
def go_client(go_client_unavailable: str | None) -> Iterator[GoClient]:
    """Apache's Go client as a peer, each command in its own process (see ``cpp_peer/runner.py``).

    Skips with the missing thing, e.g. "no `go` command on PATH (...)".
    """
    if go_client_unavailable is not None:
        if os.environ.get(REQUIRE_PEERS_ENV) == "1":
            pytest.fail(f"{REQUIRE_PEERS_ENV}=1 but the Go peer is unavailable: {go_client_unavailable}")
        pytest.skip(go_client_unavailable)
    client = GoClient()
    yield client
    survivors = client.close()
    assert not survivors, f"Go client peer processes left behind: {survivors}"
