"""The driver of the standalone-cluster tests, in a process of its own (a process holds one SparkContext, and
the pytest worker may hold its ``local[2]`` one): ``python -m tests.integration.spark_standalone_driver
<master url> <socket path>`` listens on the Unix socket, takes one connection, and answers its commands, one
at a time, as dicts (``{"ok": True, ...}`` or ``{"ok": False, "error": <traceback>}``):

* ``start``: the session, once every worker's executor registered, warmed up (Python workers forked);
* ``probe``: the process ancestry of the Python workers that ran a job's tasks;
* ``write`` / ``read``: a batch write of generated rows, a batch read of a topic's bodies;
* ``stream_start`` / ``stream_status`` / ``stream_stop``: a streaming query from one topic to another,
  with a checkpoint, and its committed micro-batches;
* ``quit``: stop the session and exit.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from multiprocessing import connection
from typing import Any

from spark_connector.testing import cluster_spark
from tests.integration.spark_standalone import SESSION_SETTINGS, wait_for_executors

log = logging.getLogger("tests.spark_standalone_driver")


#: What Spark's scheduler logs for each task that was running on an executor when the executor was lost
#: (at INFO), and once for the executor (at ERROR).
LOST_TASK_MARK = "its executor exited for a reason unrelated to the task"
LOST_EXECUTOR_MARK = "Lost executor"


def _ancestry(_: Iterator[Any]) -> Iterator[list[int]]:
    """Runs in a Python worker: its pid and its ancestors' (daemon, executor JVM, worker JVM, ...)."""
    time.sleep(0.3)  # long enough that the scheduler spreads the tasks over both executors
    chain: list[int] = []
    pid = os.getpid()
    while pid > 1:
        chain.append(pid)
        with open(f"/proc/{pid}/stat") as stat:
            pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    yield chain


class Driver:
    """The session and the one streaming query; each public method is a command."""

    def __init__(self, master_url: str) -> None:
        self.master_url = master_url
        self.spark: Any = None
        self.query: Any = None

    def start(self, executors: int) -> dict[str, Any]:
        self.spark = cluster_spark(
            self.master_url,
            "rocketmq-standalone-tests",
            **{
                **SESSION_SETTINGS,
                # A lost executor's tasks are rescheduled without counting as failures; these are for
                # a task a killed executor took down some other way (a broken connection to it).
                "spark.task.maxFailures": "8",
            },
        )
        wait_for_executors(self.spark, executors)
        context = self.spark.sparkContext
        # The scheduler says at INFO which running tasks an executor took with it (LOST_TASK_MARK).
        log4j = context._jvm.org.apache.logging.log4j
        log4j.core.config.Configurator.setLevel("org.apache.spark.scheduler.TaskSetManager", log4j.Level.INFO)
        self.probe()  # forks and primes the Python workers on every executor
        jvm_pid = int(context._jvm.java.lang.ProcessHandle.current().pid())
        return {"driver_pid": os.getpid(), "driver_jvm_pid": jvm_pid}

    def probe(self, tasks: int = 4) -> dict[str, Any]:
        rdd = self.spark.sparkContext.parallelize(range(tasks), tasks)
        return {"chains": rdd.mapPartitions(_ancestry).collect()}

    def write(self, namesrv: str, topic: str, count: int, prefix: str, partitions: int) -> dict[str, Any]:
        frame = self.spark.range(0, count, 1, partitions).selectExpr(
            f"concat('{prefix}-', CAST(id AS STRING)) AS body", "'standalone' AS tags"
        )
        started = time.monotonic()
        frame.write.format("rocketmq").option("namesrv", namesrv).option("topic", topic).mode("append").save()
        return {"seconds": time.monotonic() - started}

    def read(self, namesrv: str, topic: str) -> dict[str, Any]:
        frame = self.spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", topic).load()
        started = time.monotonic()
        rows = frame.select("body", "tags").collect()
        return {
            "bodies": [bytes(row.body).decode() for row in rows],
            "tags": sorted({row.tags for row in rows}),
            "partitions": frame.rdd.getNumPartitions(),
            "seconds": time.monotonic() - started,
        }

    def stream_start(
        self, namesrv: str, source: str, sink: str, checkpoint: str, per_trigger: int
    ) -> dict[str, Any]:
        """Read ``source``, prefix every body with ``out-``, write to ``sink``."""
        stream = (
            self.spark.readStream.format("rocketmq")
            .option("namesrv", namesrv)
            .option("topic", source)
            .option("maxMessagesPerTrigger", str(per_trigger))
            .load()
            .selectExpr("concat('out-', CAST(body AS STRING)) AS body", "tags")
        )
        self.query = (
            stream.writeStream.format("rocketmq")
            .option("namesrv", namesrv)
            .option("topic", sink)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="500 milliseconds")
            .start()
        )
        return {"id": str(self.query.id)}

    def stream_status(self) -> dict[str, Any]:
        query = self.query
        executors = self.spark.sparkContext._jsc.sc().statusTracker()
        exception = query.exception() if not query.isActive else None
        return {
            "active": bool(query.isActive),
            # Executors running a task now (a micro-batch's tasks read and send while they run).
            "busy_executors": sum(1 for e in executors.getExecutorInfos() if e.numRunningTasks() > 0),
            "exception": None if exception is None else str(exception),
            "batches": [[p["batchId"], p["numInputRows"]] for p in query.recentProgress],
        }

    def stream_stop(self) -> dict[str, Any]:
        self.query.stop()
        status = self.stream_status()
        self.query = None
        return status

    def quit(self) -> dict[str, Any]:
        if self.spark is not None:
            self.spark.stop()
        return {}


def serve(master_url: str, socket_path: str) -> None:
    driver = Driver(master_url)
    commands: dict[str, Callable[..., dict[str, Any]]] = {
        name: getattr(driver, name)
        for name in (
            "start",
            "probe",
            "write",
            "read",
            "stream_start",
            "stream_status",
            "stream_stop",
            "quit",
        )
    }
    with connection.Listener(socket_path, family="AF_UNIX") as listener, listener.accept() as peer:
        while True:
            try:
                request: dict[str, Any] = peer.recv()
            except EOFError:
                driver.quit()
                return
            op = request.pop("op")
            try:
                reply = {"ok": True, **commands[op](**request)}
            except Exception:
                log.exception("command %s failed", op)
                reply = {"ok": False, "error": traceback.format_exc()}
            peer.send(reply)
            if op == "quit":
                return


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    serve(sys.argv[1], sys.argv[2])
