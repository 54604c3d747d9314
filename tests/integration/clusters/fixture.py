"""The ``cluster`` fixture: one running cluster per provider for the whole session.

Session scope because Java servers take seconds to boot; pytest runs every test of one provider before
tearing it down and starting the next, so at most one shared cluster runs per pytest process (under
pytest-xdist, one per worker: ``tests/conftest.py`` hands all tests of a provider to the same worker).
Tests never share data: each uses its own topics and groups
(:func:`~tests.integration.clusters.model.unique_name`).

Teardown stops every process by pid and fails when one survives; the servers' logs are kept (and their
folder named at the end of the run) when a test that used the cluster failed, else removed with the store.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.apache.cache import REQUIRE_ENV, peers_required
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import Cluster, ProviderUnavailable
from tests.integration.clusters.providers import PROVIDERS_ENV, ProviderSpec, provider_specs, start_cluster

log = logging.getLogger("tests.clusters.fixture")

#: Longest a scenario may run (checked by ``scenario_budget``).
SCENARIO_BUDGET_S = 30.0

PROVIDERS: list[ProviderSpec] = provider_specs()
#: One set-up of each kind: the project's servers, Apache's two lines, and the two broker kinds in one
#: cluster. For behaviour every broker shares (a client's own feature), where running all fourteen set-ups
#: would only repeat these at the cost of CI time.
REPRESENTATIVE_IDS = ("python", "binaries-4.9.7", "binaries-5.3.3", "mixed-apache-5.3.3-and-python-brokers")


def representative_setups(*extra: str) -> list[ProviderSpec]:
    """The :data:`REPRESENTATIVE_IDS` set-ups (and ``extra`` ids) that :data:`PROVIDERS` selects here."""
    wanted = {*REPRESENTATIVE_IDS, *extra}
    return [s for s in PROVIDERS if s.id in wanted]


def on_representative_setups(*extra: str) -> pytest.MarkDecorator:
    """Runs a test (or, in ``pytestmark``, a module) on the shared ``cluster`` of each
    :func:`representative_setups` set-up instead of every provider's."""
    setups = representative_setups(*extra)
    return pytest.mark.parametrize("cluster", setups, ids=[s.id for s in setups], indirect=True)


#: Folders kept for a look after failures, and how long each provider took to start (for the summary).
KEPT_LOGS: list[Path] = []
START_TIMES: dict[str, float] = {}


def skip_or_fail(reason: str) -> None:
    """Skip with ``reason``; fail instead where every peer is required (``ROCKETMQ_REQUIRE_PEERS``, CI)."""
    if peers_required():
        pytest.fail(f"{reason} ({REQUIRE_ENV} is set: every peer must run here)")
    pytest.skip(reason)


@contextlib.contextmanager
def running_cluster(
    spec: ProviderSpec, prefix: str, failed: Callable[[], bool] = lambda: False
) -> Iterator[tuple[Cluster, Launch]]:
    """``spec``'s servers, started in a folder of their own and stopped by pid afterwards.

    Skips (fails, where peers are required) when the provider cannot run here. The servers' logs are kept
    (listed at the end of the run) when the start fails, a process survives, an exception leaves the block
    or ``failed()`` says so; else the folder goes. Not pytest's tmp_path_factory: it keeps only the last
    few runs' folders, and logs kept after a failure must outlive the next runs.
    """
    reason = spec.unavailable()
    if reason is not None:
        skip_or_fail(reason)
    root = Path(tempfile.mkdtemp(prefix=f"{prefix}-{spec.id}-"))
    started = time.monotonic()
    try:
        running, launch = start_cluster(spec, root / "work", root / "logs")
    except ProviderUnavailable as exc:
        shutil.rmtree(root, ignore_errors=True)
        skip_or_fail(str(exc))
    except BaseException:
        KEPT_LOGS.append(root / "logs")
        raise
    START_TIMES.setdefault(spec.id, time.monotonic() - started)
    log.info("cluster %s up in %.1f s: %s", spec.id, time.monotonic() - started, running)
    raised = False
    try:
        yield running, launch
    except BaseException:
        raised = True  # a scenario run inside the block failed: its servers' logs are the evidence
        raise
    finally:
        leftovers = launch.stop(discard=True)
        if leftovers or raised or failed():
            KEPT_LOGS.append(root / "logs")
            shutil.rmtree(root / "work", ignore_errors=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    assert not leftovers, f"cluster {spec.id} left processes behind: {leftovers}"


@pytest.fixture(scope="session", params=PROVIDERS, ids=[spec.id for spec in PROVIDERS])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A NameServer with its brokers registered, from the provider named in the test id.

    Skips, with the missing thing as the reason, when the provider cannot run here.
    """
    failures_before = request.session.testsfailed
    with running_cluster(
        request.param, "rmq-cluster", lambda: request.session.testsfailed > failures_before
    ) as (running, _launch):
        yield running


def provider_of(item: pytest.Item) -> str | None:
    """The id of the provider ``item`` runs on through the ``cluster`` fixture, else None."""
    callspec = getattr(item, "callspec", None)
    spec = callspec.params.get("cluster") if callspec is not None else None
    return getattr(spec, "id", None)


@contextlib.contextmanager
def dedicated_cluster(provider_id: str) -> Iterator[tuple[Cluster, Launch, ProviderSpec]]:
    """A cluster of provider ``provider_id`` for one scenario alone, for scenarios that change brokers'
    settings or kill them (the shared ``cluster`` must stay as every other scenario expects it).

    Skips when the provider is not selected (``ROCKETMQ_PROVIDERS``) or cannot run here (fails instead
    where peers are required); stops every process by pid afterwards and fails if one survives.
    """
    found = [spec for spec in provider_specs() if spec.id == provider_id]
    if not found:
        pytest.skip(f"{provider_id} is not among the selected providers ({PROVIDERS_ENV})")
    [spec] = found
    with running_cluster(spec, "rmq-dedicated") as (running, launch):
        yield running, launch, spec


@pytest.fixture
def scenario_budget() -> Iterator[None]:
    """Fails a scenario that took longer than :data:`SCENARIO_BUDGET_S` (the cluster's start not counted)."""
    started = time.monotonic()
    yield
    elapsed = time.monotonic() - started
    assert elapsed < SCENARIO_BUDGET_S, (
        f"scenario took {elapsed:.1f} s, over its {SCENARIO_BUDGET_S:.0f} s budget"
    )


class WorkerRelay:
    """Brings each pytest-xdist worker's start-up times and kept log folders to the controller, which is
    the process that prints the summary (a worker's own summary is never shown)."""

    @pytest.hookimpl(trylast=True)  # after the session fixtures' teardown, which may keep logs
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = getattr(session.config, "workeroutput", None)
        if output is not None:
            output["rmq_start_times"] = dict(START_TIMES)
            output["rmq_kept_logs"] = [str(path) for path in KEPT_LOGS]

    def pytest_testnodedown(self, node: object, error: object) -> None:
        output = getattr(node, "workeroutput", None) or {}
        START_TIMES.update(output.get("rmq_start_times", {}))
        KEPT_LOGS.extend(Path(path) for path in output.get("rmq_kept_logs", []))


def terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Where the logs of failed clusters are, and how long each cluster took to start."""
    if START_TIMES:
        terminalreporter.write_sep("-", "cluster start-up")
        for provider, seconds in START_TIMES.items():
            terminalreporter.write_line(f"{provider}: {seconds:.1f} s")
    if KEPT_LOGS:
        terminalreporter.write_sep("-", "cluster logs kept")
        for path in KEPT_LOGS:
            terminalreporter.write_line(str(path))
