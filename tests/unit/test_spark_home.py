"""spark_connector.spark_home: the SPARK_HOME whose Python workers import the installed pyspark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_connector.spark_home import spark_home_for_workers, use_spark_home_for_workers

pyspark = pytest.importorskip("pyspark", reason="pyspark not installed: pip install -e '.[spark]'")
PACKAGE = Path(pyspark.__file__).resolve().parent


def test_the_folder_has_sparks_scripts_and_jars_but_not_the_bundled_sources() -> None:
    home = spark_home_for_workers()
    if not (PACKAGE / "python" / "lib").is_dir():
        assert home == PACKAGE
        return
    assert (home / "bin" / "spark-class").resolve() == (PACKAGE / "bin" / "spark-class").resolve()
    assert (home / "jars").resolve() == (PACKAGE / "jars").resolve()
    assert not (home / "python").exists()
    assert spark_home_for_workers() == home, "made once, found again"


def test_a_worker_path_built_as_spark_builds_it_imports_the_installed_package() -> None:
    """Spark's worker PYTHONPATH starts with $SPARK_HOME/python/lib/pyspark.zip: with this SPARK_HOME that
    entry is missing, and pyspark comes from site-packages, with its bytecode."""

    def imported_from(spark_home: Path) -> str:
        path = os.pathsep.join(str(spark_home / "python" / "lib" / name) for name in ("pyspark.zip",))
        return subprocess.run(
            [sys.executable, "-c", "import pyspark.sql.worker.plan_data_source_read as m; print(m.__file__)"],
            env={**os.environ, "PYTHONPATH": path},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    if (PACKAGE / "python" / "lib" / "pyspark.zip").is_file():
        assert "pyspark.zip" in imported_from(PACKAGE), "the bundled sources win on pyspark's own SPARK_HOME"
    found = imported_from(spark_home_for_workers())
    assert "pyspark.zip" not in found and Path(found).resolve().is_relative_to(PACKAGE), found


def test_a_spark_home_the_user_set_is_left_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    use_spark_home_for_workers()
    assert os.environ["SPARK_HOME"] == str(tmp_path)
    monkeypatch.delenv("SPARK_HOME")
    use_spark_home_for_workers()
    assert os.environ["SPARK_HOME"] == str(spark_home_for_workers())
