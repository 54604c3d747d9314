"""The suite's split between pytest-xdist workers (tests/conftest.py) keeps a provider's cluster on one
worker: run a small suite shaped like ours (a session fixture ``cluster`` with provider params, used from
several modules) in two workers and count the set-ups."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """
import dataclasses, os
import pytest
from tests.conftest import pytest_collection_modifyitems  # the hook under test

@dataclasses.dataclass(frozen=True)
class Spec:
    id: str

SPECS = [Spec("python"), Spec("binaries-4.9.7"), Spec("mixed-apache-5.3.3-and-python-brokers")]

@pytest.fixture(scope="session", params=SPECS, ids=[s.id for s in SPECS])
def cluster(request):
    with open(os.environ["SETUP_LOG"], "a") as log:
        log.write(f"{request.param.id} {os.environ['PYTEST_XDIST_WORKER']}\\n")
    yield request.param
"""

MODULE = """
import time
import pytest

@pytest.mark.parametrize("n", range(3))
def test_on_cluster(cluster, n):
    time.sleep(0.02)

def test_alone():
    time.sleep(0.2)
"""


def _child_env(**extra: str) -> dict[str, str]:
    """This environment without what the outer run gives its own pytest (PYTEST_ADDOPTS may name a junit
    file; xdist marks its workers), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTEST_XDIST"))}
    return {**env, **extra}


def test_each_provider_starts_once_across_two_workers(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST), "utf-8")
    for name in ("test_first.py", "test_second.py", "test_third.py"):
        (tmp_path / name).write_text(textwrap.dedent(MODULE), "utf-8")
    setup_log = tmp_path / "setups.log"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=_child_env(SETUP_LOG=str(setup_log), PYTHONPATH=str(REPO_ROOT)),
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "30 passed" in result.stdout
    setups = collections.Counter(line.split()[0] for line in setup_log.read_text().splitlines())
    assert setups == {"python": 1, "binaries-4.9.7": 1, "mixed-apache-5.3.3-and-python-brokers": 1}


def test_a_module_of_independent_tests_gives_each_its_own_unit() -> None:
    from types import SimpleNamespace

    from tests.conftest import work_unit

    independent = SimpleNamespace(EACH_TEST_ITS_OWN_WORK_UNIT=True)
    shared = SimpleNamespace()
    nodes = ["tests/integration/test_ha.py::test_a[x]", "tests/integration/test_ha.py::test_a[y]"]
    split = {work_unit(SimpleNamespace(nodeid=n, module=independent)) for n in nodes}  # type: ignore[arg-type]
    kept = {work_unit(SimpleNamespace(nodeid=n, module=shared)) for n in nodes}  # type: ignore[arg-type]
    assert split == set(nodes)
    assert kept == {"tests/integration/test_ha.py"}


def test_a_module_naming_its_group_keeps_every_provider_there() -> None:
    """``XDIST_GROUP`` wins over the provider of each test: a module-scoped fixture dearer than a cluster
    (the Spark standalone cluster) starts on one worker only."""
    from types import SimpleNamespace

    from tests.conftest import work_unit

    module = SimpleNamespace(XDIST_GROUP="cluster:binaries-5.5.0")
    items = [
        SimpleNamespace(
            nodeid=f"t.py::test[{p}]",
            module=module,
            callspec=SimpleNamespace(params={"cluster": SimpleNamespace(id=p)}),
        )
        for p in ("python", "binaries-5.5.0")
    ]
    groups = {work_unit(item) for item in items}  # type: ignore[arg-type]
    assert groups == {"cluster:binaries-5.5.0"}
