"""The suite run against an installed distribution (``scripts/check-dist.sh``) must prove it is one.

A copy of ``tests/`` run next to a checkout, or a stray ``PYTHONPATH``, would import the work tree's
packages and pass while the wheel under test is broken (a module or a data file missing from it). With
``RMQ_TEST_INSTALLED`` set, the run stops before collecting anything unless every package the distribution
ships is found in this interpreter's site-packages.
"""

from __future__ import annotations

import importlib.util
import os
import sysconfig
from pathlib import Path

import pytest

INSTALLED_ENV = "RMQ_TEST_INSTALLED"
#: The distribution's top-level packages (pyproject.toml's package list), looked up without importing them.
PACKAGES = (
    "rocketmq_wire",
    "client",
    "producer",
    "consumer",
    "admin",
    "nameserver",
    "broker",
    "spark_connector",
    "cli",
    "rocketmq_testing",
)


def require_installed_package() -> str | None:
    """Where the packages come from (for the report header) when ``RMQ_TEST_INSTALLED`` is set, else
    ``None``; raises :class:`pytest.UsageError` naming the first package imported from elsewhere."""
    if not installed_run():
        return None
    roots = {Path(sysconfig.get_path(kind)).resolve() for kind in ("purelib", "platlib")}
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin).resolve() if spec is not None and spec.origin else None
        if origin is None or not any(origin.is_relative_to(root) for root in roots):
            raise pytest.UsageError(
                f"{INSTALLED_ENV} is set but package {name!r} comes from {origin or 'nowhere'}, "
                f"not from this interpreter's site-packages ({', '.join(map(str, sorted(roots)))})"
            )
    return f"packages under test: installed in {', '.join(map(str, sorted(roots)))}"


def installed_run() -> bool:
    """Whether this run is against an installed distribution (``RMQ_TEST_INSTALLED``)."""
    return os.environ.get(INSTALLED_ENV, "") not in ("", "0")


def needs_work_tree(what: str) -> pytest.MarkDecorator:
    """Skips a test of the work tree itself (``what``: docs, benchmarks, the C source) in an installed run,
    which copies only ``tests/``; in the checkout's own runs the test always runs."""
    return pytest.mark.skipif(
        installed_run(),
        reason=f"checks {what} in the work tree; this run is against the installed package ({INSTALLED_ENV})",
    )
