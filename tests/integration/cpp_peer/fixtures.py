"""The ``cpp_client`` fixture, proposed for ``tests/integration/conftest.py``.

Until the lead moves it there, a test module gets it with
``from tests.integration.cpp_peer.fixtures import cpp_client, cpp_client_unavailable``. To move it, paste
the two fixtures below into ``conftest.py`` (with the imports) and delete the module-level import from
``test_cpp_peer_smoke.py``.

Why two fixtures: checking the binding starts a peer process once (about 0.2 s), which the session-scoped
one caches; the function-scoped one skips with exactly what is missing, and after the test kills any peer
the test left running and fails if one of its processes survived.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.cpp_peer import runner


@pytest.fixture(scope="session")
def cpp_client_unavailable() -> str | None:
    """None when PyPI's rocketmq==0.4.4 (the Apache C++ client) works here, else the reason it does not."""
    return runner.binding_unavailable_reason()


@pytest.fixture
def cpp_client(cpp_client_unavailable: str | None) -> Iterator[runner.CppClient]:
    """Apache's C++ client as a peer, each command in its own process (see ``runner``).

    Skips with the missing thing, e.g. "PyPI package rocketmq==0.4.4 not installed (run
    scripts/install-cpp-client.sh)".
    """
    if cpp_client_unavailable is not None:
        pytest.skip(cpp_client_unavailable)
    client = runner.CppClient()
    yield client
    survivors = client.close()
    assert not survivors, f"C++ client peer processes left behind: {survivors}"
