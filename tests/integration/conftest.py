"""Fixtures shared by the integration tests: real peers, each started and stopped by pid."""

import pytest

from tests.integration.apache.releases import releases
from tests.integration.clusters.fixture import WorkerRelay, cluster, scenario_budget, terminal_summary
from tests.integration.cpp_peer.fixtures import cpp_client, cpp_client_unavailable
from tests.integration.go_peer.fixtures import go_client, go_client_unavailable
from tests.integration.java_peer.fixtures import java_client, java_client_unavailable
from tests.integration.matrix import report as matrix_report
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


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(WorkerRelay(), "rmq-worker-relay")


def _provider_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    spec = callspec.params.get("cluster") if callspec is not None else None
    return getattr(spec, "id", None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The compatibility matrix runs on the set-ups it is defined over (Apache's servers from Maven Central,
    the project's, and the mixed ones); the Docker set-ups run the scenario suite, and the newest 5.x only
    the matrix (send, route, clusters, consume). Deselected, not skipped: those cells do not exist."""
    dropped = []
    for item in items:
        provider = _provider_of(item)
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


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    matrix_report.OUTCOMES.record(report)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminal_summary(terminalreporter)
    matrix_report.terminal_summary(terminalreporter)
