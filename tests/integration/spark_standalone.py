"""A Spark standalone cluster on loopback, from the installed pyspark package: a master and two workers,
each its own JVM, each worker starting its own executor JVM (and that executor its Python workers) for an
application.

Every `local[N]` session runs executors inside the driver's JVM; only a cluster shows that the data source
pickles to executors in other processes and that a query survives losing one of them. The processes start
through the suite's :class:`~tests.integration.clusters.launch.Launch`, each the leader of its own process
group: an executor JVM a worker starts, and the Python workers it forks, are members of the worker's group,
so stopping (or ``kill -9`` of) a worker by its group takes its executor with it.

Ready when the master's JSON (``/json/`` on its web UI, bound to 127.0.0.1 through ``SPARK_LOCAL_IP``) lists
every worker ALIVE. The driver is not in the test's process: a process holds one SparkContext, and the
suite's pytest workers may already hold their ``local[2]`` one (:mod:`tests.integration.spark_fixtures`);
:class:`SparkDriver` runs :mod:`tests.integration.spark_standalone_driver` as a child that takes commands on
a Unix socket.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
import urllib.request
from collections.abc import Iterator
from multiprocessing import connection
from pathlib import Path
from typing import Any

from tests.integration.clusters.launch import Launch
from tests.integration.clusters.processes import ManagedProcess, ProcessId, StartupError, free_port

log = logging.getLogger("tests.spark_standalone")

#: Master, worker and executor JVMs: C1 alone and the serial collector, as the suite's other JVMs (see
#: :data:`tests.integration.spark_fixtures.DRIVER_JAVA_OPTIONS`), and small heaps (a 2-core machine that
#: runs the rest of the suite beside).
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: Heap of the master's and the workers' own JVMs (they only schedule).
DAEMON_MEMORY = "160m"
#: Spark refuses an executor heap under 450 MiB (1.5 x its 300 MiB reserve); each worker offers just that.
EXECUTOR_MEMORY = "512m"
#: What a session on this cluster needs: executors that fit a worker, small JVMs. Spark's own settings.
SESSION_SETTINGS = {
    "spark.executor.memory": EXECUTOR_MEMORY,
    "spark.driver.memory": "512m",
    "spark.executor.extraJavaOptions": JAVA_OPTIONS,
    "spark.driver.extraJavaOptions": JAVA_OPTIONS,
    "spark.sql.shuffle.partitions": "2",
}
#: How long the master and both workers may take to come up on a loaded machine.
START_TIMEOUT_S = 90.0
#: How long one driver command may take (a session start, a streaming wait).
COMMAND_TIMEOUT_S = 180.0


def spark_home() -> Path:
    """The pyspark package's scripts and jars, without the bundled pyspark sources its executors' Python
    workers would otherwise import (:mod:`spark_connector.spark_home`)."""
    from spark_connector.spark_home import spark_home_for_workers

    return spark_home_for_workers()


class StandaloneCluster:
    """A running master and its workers; :meth:`kill_worker` is ``kill -9`` of one worker's process group."""

    def __init__(self, launch: Launch, master: ManagedProcess, web_port: int, port: int) -> None:
        self.launch = launch
        self.master = master
        self.web_url = f"http://127.0.0.1:{web_port}/json/"
        self.url = f"spark://127.0.0.1:{port}"
        self.workers: list[ManagedProcess] = []

    def state(self) -> dict[str, Any]:
        """The master's view: workers (state, cores used), applications."""
        with urllib.request.urlopen(self.web_url, timeout=5) as answer:
            state: dict[str, Any] = json.load(answer)
        return state

    def alive_workers(self) -> int:
        try:
            return int(self.state().get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0  # the web UI is not up yet

    def executor_pids(self, worker: ManagedProcess) -> list[ProcessId]:
        """The executor JVMs running in ``worker``'s process group."""
        return [p for p in worker.running() if "CoarseGrainedExecutorBackend" in _command_line(p.pid)]

    def kill_worker(self, index: int) -> list[ProcessId]:
        """SIGKILL to worker ``index``'s JVM, its executor JVM and their Python workers, all at once; returns
        what it killed. Whatever survives fails the caller (a killed worker must leave nothing)."""
        worker = self.workers[index]
        killed = worker.running()
        survivors = worker.stop(0)
        assert not survivors, f"processes of worker {index} survived SIGKILL: {survivors}"
        log.info("killed worker %d with -9: %s", index, killed)
        return killed


def wait_for_executors(spark: Any, count: int, timeout_s: float = START_TIMEOUT_S) -> None:
    """Until ``count`` executors registered with ``spark``'s driver: a session is returned before any has,
    and a job started earlier would run on the first one alone."""
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    deadline = time.monotonic() + timeout_s
    while len(tracker.getExecutorInfos()) < count + 1:  # the driver is listed too
        if time.monotonic() > deadline:
            raise StartupError(f"fewer than {count} executors registered in {timeout_s:.0f} s")
        time.sleep(0.2)


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _environment(conf_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_CONF_DIR=str(conf_dir),  # empty: no site configuration slips in
        SPARK_LOCAL_IP="127.0.0.1",  # where the web UIs bind
        SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
        SPARK_DAEMON_JAVA_OPTS=JAVA_OPTIONS,
        # The master's REST submission server would take the fixed port 6066 on every interface.
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        SPARK_NO_DAEMONIZE="1",
        PYSPARK_PYTHON=sys.executable,
    )
    return env


@contextlib.contextmanager
def standalone_cluster(root: Path, workers: int = 2) -> Iterator[StandaloneCluster]:
    """A master and ``workers`` workers of one core and :data:`EXECUTOR_MEMORY` each, logs under
    ``root/logs``; every process stopped by pid at the end (an assertion fails on survivors)."""
    conf_dir = root / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    launch = Launch(root / "work", root / "logs")
    env = _environment(conf_dir)
    spark_class = str(spark_home() / "bin" / "spark-class")
    port, web_port = free_port(), free_port()
    started = time.monotonic()
    try:
        master = launch.process(
            "spark-master",
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web_port)),
            ],
            env=env,
            kill_on_discard=True,
        )
        cluster = StandaloneCluster(launch, master, web_port, port)
        for index in range(workers):
            work_dir = root / "work" / f"worker-{index}"
            work_dir.mkdir(parents=True, exist_ok=True)
            worker_port, worker_web = free_port(), free_port()
            cluster.workers.append(
                launch.process(
                    f"spark-worker-{index}",
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        cluster.url,
                        *("--host", "127.0.0.1", "--port", str(worker_port)),
                        *("--webui-port", str(worker_web), "--work-dir", str(work_dir)),
                        *("--cores", "1", "--memory", EXECUTOR_MEMORY),
                    ],
                    env=env,
                    kill_on_discard=True,
                )
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while cluster.alive_workers() < workers:
            launch.check_alive()
            if time.monotonic() > deadline:
                raise StartupError(f"{workers} workers not registered in time: {master.describe()}")
            time.sleep(0.2)
        log.info("spark standalone %s up in %.1f s", cluster.url, time.monotonic() - started)
    except BaseException:
        launch.stop(discard=True)
        raise
    try:
        yield cluster
    finally:
        leftovers = launch.stop(discard=True)
        assert not leftovers, f"the standalone cluster left processes behind: {leftovers}"


class DriverError(AssertionError):
    """The driver answered a command with an error, died, or took too long; the message has its log tail."""


class SparkDriver:
    """The driver of one application on the cluster: a child process (with its JVM, in its own process
    group, stopped by pid with the cluster's launch) asked through a Unix socket, one command at a time."""

    def __init__(self, cluster: StandaloneCluster, socket_path: Path) -> None:
        self.process = cluster.launch.process(
            "spark-driver",
            [
                sys.executable,
                "-m",
                "tests.integration.spark_standalone_driver",
                cluster.url,
                str(socket_path),
            ],
            env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"),
            cwd=Path(__file__).resolve().parents[2],
            grace_s=20.0,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not socket_path.exists():
            if self.process.exited() or time.monotonic() > deadline:
                raise StartupError(f"the driver did not listen: {self.process.describe()}")
            time.sleep(0.05)
        self._connection = connection.Client(str(socket_path), family="AF_UNIX")

    def call(self, op: str, timeout_s: float = COMMAND_TIMEOUT_S, **arguments: Any) -> dict[str, Any]:
        """Send one command and wait for its answer."""
        self._connection.send({"op": op, **arguments})
        deadline = time.monotonic() + timeout_s
        while not self._connection.poll(0.2):
            if self.process.exited() or time.monotonic() > deadline:
                raise DriverError(f"no answer to {op!r} in {timeout_s:.0f} s: {self.process.describe()}")
        reply: dict[str, Any] = self._connection.recv()
        if not reply.get("ok"):
            raise DriverError(f"{op!r} failed in the driver: {reply.get('error')}")
        return reply

    def close(self) -> None:
        """Stop the session (its executors end with the application) and let the process exit."""
        with contextlib.suppress(OSError, EOFError, DriverError):
            self.call("quit", timeout_s=30)
        self._connection.close()


@contextlib.contextmanager
def spark_driver(cluster: StandaloneCluster, socket_dir: Path) -> Iterator[SparkDriver]:
    """A driver whose session is up with an executor on every worker (the session's start is set-up, not
    a test's). Its process is stopped with the cluster's launch, by pid, whatever happens here."""
    driver = SparkDriver(cluster, socket_dir / "spark-driver.sock")
    try:
        driver.call("start", executors=len(cluster.workers))
        yield driver
    finally:
        driver.close()
