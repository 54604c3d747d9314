"""Every benchmark runs as its docstring says (``python -m benchmarks.<name>``): its ``--help`` works.

A benchmark is run by hand, rarely, so an import that broke since its last run shows only when someone
needs its figures; this catches it. Run as modules from the repository root, ``benchmarks/producer.py`` can
no longer stand in for the ``producer`` package, as it did when run by its path.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.installed_package import needs_work_tree

pytestmark = needs_work_tree("benchmarks/")

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_benchmark_shows_its_help(name: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("usage:"), run.stdout[:500]


def test_each_docstring_says_how_to_run_it() -> None:
    for name in SCRIPTS:
        text = (REPO / "benchmarks" / f"{name}.py").read_text(encoding="utf-8")
        assert f"-m benchmarks.{name}" in text, f"benchmarks/{name}.py does not say how it is run"


def test_the_servers_timer_and_pop_rows_measure_the_projects_broker() -> None:
    """The rows that need a 5.x broker, at a tiny N on the project's servers only (no JVM): each prints a
    positive figure in the table, and no round fell short (a shortfall raises, so the run would fail)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    options = ["--sides", "project", "--loads", "timer,pop", "--messages", "64", "--repeat", "1"]
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.servers", *options, "--timer-lead", "1"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    table = run.stdout[run.stdout.index("figure ") :]
    figures = {
        found[1]: float(found[2].replace(",", ""))
        for line in table.splitlines()[1:]
        if (found := re.match(r"(.+?)\s+(?:msg/s|ms/k)\s+([\d,.]+)", line))
    }
    assert set(figures) == {
        "timer 100 B, x64: in",
        "timer 100 B, x64: delivered",
        "timer 100 B, x64: broker CPU",
        "pop 100 B, simple receive 32+ack x8",
        "pop 100 B, simple receive 32+ack x8: broker CPU",
    }, table
    assert all(value > 0 for value in figures.values()), table
