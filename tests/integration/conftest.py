"""Fixtures shared by the integration tests: real peers, each started and stopped by pid."""

import pytest

from tests.integration.clusters.fixture import cluster, scenario_budget, terminal_summary
from tests.integration.cpp_peer.fixtures import cpp_client, cpp_client_unavailable

__all__ = ["cluster", "cpp_client", "cpp_client_unavailable", "scenario_budget"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminal_summary(terminalreporter)
