"""A real Prometheus server (Debian's package, ``scripts/install-prometheus.sh``) for one scenario.

It runs with a config and a data folder of the test's own, on a free loopback port, as a process of the
test's :class:`~tests.integration.clusters.launch.Launch` (stopped by pid); the package's own service, if a
machine runs one, is never used or touched. Questions go through its HTTP API, as a dashboard's would.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.integration.clusters.launch import Launch
from tests.integration.clusters.processes import StartupError, free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALLER = REPO_ROOT / "scripts" / "install-prometheus.sh"
#: Seconds from the process start until /-/ready answers 200 (TSDB opened, config loaded).
READY_TIMEOUT_S = 30.0
#: How often it scrapes every target: the scenario waits a few of these for figures to arrive.
SCRAPE_INTERVAL_S = 1


def prometheus_unavailable() -> str | None:
    """None when a ``prometheus`` binary is on PATH (installed by the script when missing), else why not."""
    if shutil.which("prometheus") is None:
        done = subprocess.run(["bash", str(INSTALLER)], capture_output=True, text=True, check=False)
        if shutil.which("prometheus") is None:
            return (
                "prometheus is not installed and scripts/install-prometheus.sh could not install it: "
                f"{done.stderr.strip() or done.stdout.strip()}"
            )
    return None


def scrape_config(jobs: Mapping[str, str]) -> str:
    """A prometheus.yml scraping each job's one ``host:port`` target every :data:`SCRAPE_INTERVAL_S`.

    JSON is YAML, so no YAML writer is needed.
    """
    config = {
        "global": {"scrape_interval": f"{SCRAPE_INTERVAL_S}s", "scrape_timeout": f"{SCRAPE_INTERVAL_S}s"},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": [target]}]} for job, target in jobs.items()
        ],
    }
    return json.dumps(config, indent=2)


class PrometheusServer:
    """A started server: :meth:`query` asks its HTTP API."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"

    def _get(self, path: str, params: Mapping[str, str]) -> Any:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=5) as answer:
            reply = json.loads(answer.read())
        if reply.get("status") != "success":
            raise AssertionError(f"Prometheus answered {reply} to {url}")
        return reply["data"]

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        """An instant query (``/api/v1/query``): each series' labels (``__name__`` included) and value."""
        data = self._get("/api/v1/query", {"query": promql})
        if data["resultType"] != "vector":
            raise AssertionError(f"{promql!r} gave a {data['resultType']}, not a vector")
        return [(dict(row["metric"]), float(row["value"][1])) for row in data["result"]]

    def names(self, job: str) -> set[str]:
        """The metric names Prometheus holds for ``job`` (``/api/v1/label/__name__/values``), without the
        series Prometheus adds to every scrape itself (``up``, ``scrape_*``)."""
        values = self._get("/api/v1/label/__name__/values", {"match[]": f'{{job="{job}"}}'})
        return {name for name in values if name != "up" and not name.startswith("scrape_")}

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False


def start_prometheus(launch: Launch, jobs: Mapping[str, str]) -> PrometheusServer:
    """Prometheus scraping ``jobs`` (job name -> ``host:port`` of a ``/metrics``), ready to answer.

    Blocking (it polls readiness): call it from a thread in async code.
    """
    folder = launch.work_dir / "prometheus"
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "prometheus.yml"
    config.write_text(scrape_config(jobs))
    port = free_port()
    argv = [
        "prometheus",
        f"--config.file={config}",
        f"--storage.tsdb.path={folder / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    process = launch.process("prometheus", argv, cwd=folder, grace_s=10.0)
    server = PrometheusServer(port)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not server.ready():
        if process.exited():
            raise StartupError(f"prometheus exited at start-up: {process.describe()}")
        if time.monotonic() >= deadline:
            raise StartupError(f"prometheus not ready within {READY_TIMEOUT_S:.0f} s: {process.describe()}")
        time.sleep(0.2)
    return server
