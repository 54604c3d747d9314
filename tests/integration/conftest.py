"""Fixtures shared by the integration tests: real peers, each started and stopped by pid."""

import pytest

from tests.integration.apache import mqadmin_host
from tests.integration.apache.releases import releases
from tests.integration.clusters.fixture import cluster, provider_of, scenario_budget
from tests.integration.cpp_peer.fixtures import cpp_client, cpp_client_unavailable
from tests.integration.go_peer.fixtures import go_client, go_client_unavailable
from tests.integration.java_peer.fixtures import java_client, java_client_unavailable
from tests.integration.spark_fixtures import spark
from tests.integration.unanswering import refused_namesrv, silent_namesrv

__all__ = [
    "cluster",
    "cpp_client",
    "cpp_client_unavailable",
    "go_client",
    "go_client_unavailable",
    "java_client",
    "java_client_unavailable",
    "refused_namesrv",
    "scenario_budget",
    "silent_namesrv",
    "spark",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The compatibility matrix runs on the set-ups it is defined over (Apache's servers from Maven Central,
    the project's, and the mixed ones); the Docker set-ups run the scenario suite, and the newest 5.x only
    the matrix (send, route, clusters, consume). Deselected, not skipped: those cells do not exist."""
    dropped = []
    for item in items:
        provider = provider_of(item)
        if provider is None:
            continue
        in_matrix = item.path.name == "test_matrix.py"
        docker = provider.startswith("docker-") or "-on-docker-" in provider
        newest_only = any(provider == f"binaries-{r.version}" for r in releases() if not r.full)
        if (in_matrix and docker) or (
            not in_matrix and item.path.name.startswith("test_cluster_") and newest_only
        ):
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The mqadmin host JVMs this process started end with it, stopped by pid (an ``atexit`` hook does the
    same for a process that never gets here)."""
    mqadmin_host.POOL.close()
