"""spark_connector.daemon: the connector imported before Spark's daemon forks, and nothing that must not be.

Spark's daemon forks its Python workers and insists that no thread runs when it does; pandas and pyarrow
start threads on import. What the daemon preloads must start none and import neither.
"""

from __future__ import annotations

import json
import runpy
import subprocess
import sys

import pytest

pytest.importorskip("pyspark", reason="pyspark not installed: pip install -e '.[spark]'")

from spark_connector import daemon


def _in_fresh_interpreter(code: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_preloading_starts_no_thread_and_imports_neither_pandas_nor_pyarrow() -> None:
    found = _in_fresh_interpreter(
        "import json, sys, threading\n"
        "from spark_connector import daemon\n"
        "daemon.preload()\n"
        "print(json.dumps({'threads': threading.active_count(),"
        " 'loaded': [m for m in daemon.PRELOADED if m in sys.modules],"
        " 'heavy': [m for m in ('pandas', 'pyarrow', 'numpy') if m in sys.modules]}))\n"
    )
    assert found == {"threads": 1, "loaded": list(daemon.PRELOADED), "heavy": []}


def test_the_daemon_runs_sparks_own_daemon_after_preloading(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, object]] = []
    monkeypatch.setattr(daemon, "preload", lambda: calls.append(("preload", None)))
    monkeypatch.setattr(runpy, "run_module", lambda name, **kw: calls.append(("run", (name, kw["run_name"]))))
    daemon.main()
    assert calls == [("preload", None), ("run", ("pyspark.daemon", "__main__"))]


def test_a_module_that_cannot_be_imported_is_left_to_the_worker(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(daemon, "PRELOADED", ("spark_connector.no_such_module",))
    daemon.preload()
    assert "could not preload spark_connector.no_such_module" in caplog.text
