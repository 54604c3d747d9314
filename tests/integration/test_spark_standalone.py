"""The connector on a real Spark cluster: a standalone master and two workers (each its own JVM, each with
its own executor JVM and Python workers), against the project's servers and Apache 5.5.0.

Batch write and read on both; on the project's servers, a streaming query from one topic to another that
loses a worker to ``kill -9`` while input is still arriving: Spark reschedules the lost tasks on the other
executor, and the output topic must hold every input message at least once (duplicates are counted and
printed: the sink's promise is at-least-once, ``docs/spark.md``).

One cluster and one driver for the module (JVM starts are the cost). All of the module goes to the xdist
group of the Apache 5.5.0 cluster (``XDIST_GROUP``), so Apache's servers are not started a second time for
it. In that group pytest runs the test on the shared 5.5.0 cluster beside that cluster's other tests, and
this module's other tests later, so the standalone cluster is a session fixture: as a module fixture it
was torn down in between and started again (70 to 85 s of CI). The project's servers are a dedicated
cluster of the module's own, not the shared ``cluster`` fixture's: a session fixture switched to another
parameter tears its current cluster down first, so the shared 5.5.0 cluster would have been stopped and
started again for the matrix (a minute of CI on a loaded machine).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from admin import Admin
from producer import Message, Producer
from spark_connector.testing import spark_unavailable_reason
from tests.integration.clusters.fixture import PROVIDERS, dedicated_cluster, skip_or_fail
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.processes import is_gone
from tests.integration.clusters.readback import read_topic
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.spark_standalone import (
    SparkDriver,
    StandaloneCluster,
    spark_driver,
    standalone_cluster,
)
from tests.integration.spark_standalone_driver import LOST_EXECUTOR_MARK, LOST_TASK_MARK

pytestmark = [pytest.mark.integration]

log = logging.getLogger("tests.spark_standalone")

XDIST_GROUP = "cluster:binaries-5.5.0"
APACHE_SETUPS = [s for s in PROVIDERS if s.id == "binaries-5.5.0"]

BATCH_ROWS = 400
#: The streaming run: input sent at a steady pace (and this many after the kill), read at most this many
#: per micro-batch.
SEND_PER_SECOND = 60
SENT_AFTER_KILL = 150
PER_TRIGGER = 200
#: Micro-batches with input that must be committed before the kill.
BATCHES_BEFORE_KILL = 2
RECOVERY_TIMEOUT_S = 90.0


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StandaloneCluster, SparkDriver]]:
    missing = spark_unavailable_reason()
    if missing is not None:
        skip_or_fail(missing)
    root = tmp_path_factory.mktemp("spark-standalone")
    with standalone_cluster(root) as cluster, spark_driver(cluster, root) as driver:
        yield cluster, driver


@pytest.fixture(scope="module")
def project_servers() -> Iterator[Cluster]:
    """The project's NameServer and Broker, for this module alone (see the module's docstring)."""
    with dedicated_cluster("python") as (cluster, _launch, _spec):
        yield cluster


@pytest.mark.parametrize("cluster", APACHE_SETUPS, ids=[s.id for s in APACHE_SETUPS], indirect=True)
def test_batch_write_and_read_on_apaches_servers(
    cluster: Cluster, standalone: tuple[StandaloneCluster, SparkDriver]
) -> None:
    _batch_write_and_read(cluster, standalone)


def test_batch_write_and_read_on_the_projects_servers(
    project_servers: Cluster, standalone: tuple[StandaloneCluster, SparkDriver]
) -> None:
    _batch_write_and_read(project_servers, standalone)


def _batch_write_and_read(cluster: Cluster, standalone: tuple[StandaloneCluster, SparkDriver]) -> None:
    """Tasks run in Python workers under the workers' executor JVMs (every live worker's), none under the
    driver; a write of generated rows reaches the brokers whole (read back by the project's consumer) and
    a read through the source returns exactly those rows, one partition per queue."""
    spark_cluster, driver = standalone
    chains = driver.call("probe")["chains"]
    live = [w for w in spark_cluster.workers if w.running()]  # the kill -9 scenario may have run first
    worker_pids = {w.pid for w in live}
    driver_pids = {p.pid for p in driver.process.running()}
    assert all(worker_pids.intersection(chain) for chain in chains), (chains, worker_pids)
    assert not any(driver_pids.intersection(chain) for chain in chains), (chains, driver_pids)
    assert {pid for chain in chains for pid in chain} >= worker_pids, "tasks ran on every live worker"
    for worker in live:
        assert spark_cluster.executor_pids(worker), f"no executor JVM in {worker.name}'s group"

    topic = asyncio.run(create_on_every_broker(cluster, "SparkStandalone", 4))
    driver.call("write", namesrv=cluster.namesrv, topic=topic, count=BATCH_ROWS, prefix="row", partitions=4)
    expected = sorted(f"row-{i}" for i in range(BATCH_ROWS))
    stored = asyncio.run(read_topic(cluster.namesrv, topic, BATCH_ROWS))
    assert sorted(m.body.decode() for m in stored) == expected

    read = driver.call("read", namesrv=cluster.namesrv, topic=topic)
    assert sorted(read["bodies"]) == expected
    assert read["tags"] == ["standalone"]
    assert read["partitions"] == 4 * len(cluster.brokers)


class Feeder:
    """Sends numbered messages to ``topic`` at a steady pace from a thread of its own until stopped, so that
    input keeps arriving while the test kills a worker."""

    def __init__(self, namesrv: str, topic: str, per_second: float) -> None:
        self.namesrv, self.topic, self.per_second = namesrv, topic, per_second
        self.sent = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stream-feeder", daemon=True)

    def start(self) -> Feeder:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            asyncio.run(self._send())
        except BaseException as exc:
            self.error = exc

    async def _send(self) -> None:
        started = time.monotonic()
        async with Producer(unique_name("SparkStandaloneFeed"), self.namesrv) as producer:
            while not self._stop.is_set():
                await producer.send(Message(self.topic, f"in-{self.sent}".encode(), tags="feed"))
                self.sent += 1
                ahead = started + self.sent / self.per_second - time.monotonic()
                if ahead > 0:
                    await asyncio.sleep(ahead)

    def stop(self, timeout_s: float = 30.0) -> int:
        """Stops sending; how many were sent (``in-0`` to ``in-<n-1>``)."""
        self._stop.set()
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), "the feeder did not stop"
        if self.error is not None:
            raise self.error
        return self.sent


def _committed(status: dict[str, object]) -> list[tuple[int, int]]:
    """(batch id, input rows) of the micro-batches that read something."""
    batches = status["batches"]
    assert isinstance(batches, list)
    return [(int(b), int(n)) for b, n in batches if n]


async def _two_topics(cluster: Cluster) -> list[str]:
    return list(
        await asyncio.gather(*(create_on_every_broker(cluster, p, 4) for p in ("SparkIn", "SparkOut")))
    )


async def _stored(namesrv: str, topic: str) -> int:
    async with Admin(namesrv) as admin:
        return (await admin.topic_status(topic)).total_messages


def test_streaming_query_survives_kill_9_of_a_worker(
    project_servers: Cluster, standalone: tuple[StandaloneCluster, SparkDriver], tmp_path: Path
) -> None:
    """A query reading one topic and writing a transform of each row to another, with a checkpoint, while
    input arrives at a steady pace: once it has committed micro-batches, one worker (its JVM, its executor
    JVM and their Python workers) gets ``kill -9`` while a micro-batch's tasks run. The query must go on
    (Spark runs the lost tasks on the other executor; a query that gives up is restarted from its
    checkpoint) until the output topic holds every input at least once; duplicates are counted and
    printed, as the sink promises no more than at-least-once."""
    cluster = project_servers
    spark_cluster, driver = standalone
    source, sink = asyncio.run(_two_topics(cluster))
    feeder = Feeder(cluster.namesrv, source, SEND_PER_SECOND).start()
    start: dict[str, Any] = {
        "namesrv": cluster.namesrv,
        "source": source,
        "sink": sink,
        "checkpoint": str(tmp_path / "checkpoint"),
        "per_trigger": PER_TRIGGER,
    }
    driver.call("stream_start", **start)
    deadline = time.monotonic() + RECOVERY_TIMEOUT_S
    while len(_committed(driver.call("stream_status"))) < BATCHES_BEFORE_KILL:
        assert time.monotonic() < deadline, "the query committed no micro-batch in time"
        time.sleep(0.2)
    # Kill while both executors run a task: the killed one's task is lost half done.
    while driver.call("stream_status")["busy_executors"] < len(spark_cluster.workers):
        assert time.monotonic() < deadline, "no micro-batch ran after the first ones"
        time.sleep(0.02)
    before = _committed(driver.call("stream_status"))
    sent_at_kill = feeder.sent
    killed = spark_cluster.kill_worker(0)
    assert all(is_gone(p) for p in killed)
    while feeder.sent < sent_at_kill + SENT_AFTER_KILL:  # input goes on arriving
        time.sleep(0.1)
    sent = feeder.stop()

    restarts = 0
    inputs = {f"in-{i}" for i in range(sent)}
    deadline = time.monotonic() + RECOVERY_TIMEOUT_S
    while True:
        status = driver.call("stream_status")
        if not status["active"]:  # the query gave up: restart it from its checkpoint
            log.warning(
                "query ended after the kill (%s); restarting from the checkpoint", status["exception"]
            )
            restarts += 1
            assert restarts <= 2, f"the query failed again after a restart: {status['exception']}"
            driver.call("stream_start", **start)
        stored = asyncio.run(_stored(cluster.namesrv, sink))
        if stored >= sent:
            outputs = asyncio.run(read_topic(cluster.namesrv, sink, stored))
            if {m.body.decode().removeprefix("out-") for m in outputs} >= inputs:
                break
        assert time.monotonic() < deadline, (
            f"the output holds {stored} messages, not all {sent} inputs, in time"
        )
        time.sleep(0.5)
    final = driver.call("stream_stop")
    after = [b for b in _committed(final) if b[0] > before[-1][0]]

    outputs = asyncio.run(read_topic(cluster.namesrv, sink, asyncio.run(_stored(cluster.namesrv, sink))))
    driver_log = driver.process.log_text()
    lost_tasks = driver_log.count(LOST_TASK_MARK)
    bodies = collections.Counter(m.body.decode() for m in outputs)
    duplicates = {body: n for body, n in bodies.items() if n > 1}
    report = (
        f"kill -9 run: input {sent}, output {sum(bodies.values())}, distinct {len(bodies)}, "
        f"duplicated messages {len(duplicates)} ({sum(bodies.values()) - len(bodies)} extra copies); "
        f"killed at {sent_at_kill} sent, after {len(before)} batches, taking {lost_tasks} running task(s); "
        f"{len(after)} batches after the kill, "
        f"{restarts} restart(s) from the checkpoint"
    )
    print(report)
    log.warning(report)
    assert set(bodies) == {f"out-in-{i}" for i in range(sent)}, "no loss, nothing else"
    assert after, "the query went on committing micro-batches after the kill"
    # Whether the kill caught a task still running is a race (tasks last a fraction of a second); that
    # Spark saw the executor go is not.
    assert driver_log.count(LOST_EXECUTOR_MARK) == 1, "the driver lost exactly the killed executor"
    assert spark_cluster.workers[1].running(), "the other worker lives on"
