"""Fixtures and hooks for the whole suite: how tests are shared out between pytest-xdist workers.

``scripts/test.sh`` runs the suite in two worker processes (``-n 2 --dist loadgroup``): most of an
integration test's time is spent waiting on other processes (JVMs starting, brokers registering, consumers
rebalancing), so a second worker fills the idle core. Each worker is its own pytest session with its own
session fixtures, so the unit of work handed to a worker must keep expensive fixtures set up once:

* a test on the shared ``cluster`` fixture goes with every other test of that provider (a worker starts
  each provider's servers at most once, and runs one provider's tests back to back);
* any other test goes with the rest of its module (module-scoped servers and peers start once), unless
  the module says its tests share nothing expensive (``EACH_TEST_ITS_OWN_WORK_UNIT = True``): then each is
  a unit of its own, so a module of long tests is spread over the workers;
* a module whose tests use several providers' clusters *and* a module-scoped fixture dearer than some of
  those clusters names one group for all of its tests (``XDIST_GROUP = "cluster:<provider id>"``): its
  fixture then starts once, beside that provider's cluster, and only the cheaper clusters may start twice.

The end-of-run summaries (cluster start-up times, kept logs, the compatibility matrix) are hooked here and
not in ``tests/integration/conftest.py``: xdist's controller, the process that reports, never collects, so
it loads this file only. What only workers know reaches it through
:class:`~tests.integration.clusters.fixture.WorkerRelay`.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from tests.installed_package import installed_run, require_installed_package
from tests.integration.clusters.fixture import WorkerRelay, provider_of
from tests.integration.clusters.fixture import terminal_summary as clusters_summary
from tests.integration.matrix import report as matrix_report

# Property tests check what the code computes, never how fast: on a machine busy with the integration
# suite's JVMs, Hypothesis's timing checks (a 200 ms deadline per example, "too slow" data generation) fail
# tests that are right (seen: test_message_batch's round trip while a cluster ran beside it).
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Against an installed wheel on the other Python versions (scripts/check-dist.sh), a quarter of the default
# examples: the full count runs on 3.11, and CI time is short. Tests that name their count keep it.
settings.register_profile("installed", parent=settings.get_profile("suite"), max_examples=25)
settings.load_profile("installed" if installed_run() else "suite")


def work_unit(item: pytest.Item) -> str:
    """The xdist group of ``item``: its module's ``XDIST_GROUP``, ``cluster:<provider id>``, its own node id
    in a module that sets ``EACH_TEST_ITS_OWN_WORK_UNIT`` (its tests share nothing expensive), or its
    module's path."""
    module = getattr(item, "module", None)
    group = getattr(module, "XDIST_GROUP", None)
    if isinstance(group, str):
        return group
    provider = provider_of(item)
    if provider is not None:
        return f"cluster:{provider}"
    if getattr(module, "EACH_TEST_ITS_OWN_WORK_UNIT", False):
        return item.nodeid
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # xdist's worker reads the marks in its own hook of the same name
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        item.add_marker(pytest.mark.xdist_group(work_unit(item)))


def pytest_configure(config: pytest.Config) -> None:
    require_installed_package()
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(WorkerRelay(), "rmq-worker-relay")


def pytest_report_header() -> str | None:
    return require_installed_package()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    matrix_report.OUTCOMES.record(report)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    clusters_summary(terminalreporter)
    matrix_report.terminal_summary(terminalreporter)
