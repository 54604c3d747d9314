"""The guard of runs against an installed distribution (tests/installed_package.py) catches a work tree."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.installed_package import INSTALLED_ENV, require_installed_package


def test_off_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INSTALLED_ENV, raising=False)
    assert require_installed_package() is None


def test_a_package_found_outside_site_packages_stops_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A ``rocketmq_wire/`` first on ``sys.path`` stands in for a checkout shadowing the wheel."""
    shadow = tmp_path / "rocketmq_wire"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("")
    monkeypatch.setenv(INSTALLED_ENV, "1")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "rocketmq_wire")  # else the imported module's spec is answered
    with pytest.raises(pytest.UsageError, match="package 'rocketmq_wire' comes from ") as refused:
        require_installed_package()
    assert str(shadow.resolve() / "__init__.py") in str(refused.value)
