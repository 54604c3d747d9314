"""A PySpark worker daemon that imports the connector once, before it forks Spark's Python workers.

Spark runs Python code in workers forked from a daemon (``pyspark.daemon``), and each forked worker
imports what its work needs after the fork. For this data source that is the producer, the consumer and
the wire codec: about 0.4 s of CPU per worker on a 2-core machine, paid by every worker a write or a read
forks (the planner's: create the source, plan the read, create the writer, commit; and each task's).

With ``spark.python.daemon.module=spark_connector.daemon`` the daemon imports the connector before it
serves any request, and every worker it forks starts with it loaded. Nothing else changes: Spark's own
daemon then runs as it would. Spark's worker modules are still imported after the fork, as Spark requires
(pandas and pyarrow start threads when imported, and a process must not fork with threads running); the
connector's modules start none and import neither (``tests/unit/test_spark_daemon.py``).
"""

from __future__ import annotations

import importlib
import logging
import runpy

log = logging.getLogger(__name__)

#: What the connector's workers import: the data source and its reader and writer, which pull in the
#: producer, the pull consumer and the wire codec.
PRELOADED = ("spark_connector.source", "spark_connector.writer", "spark_connector.reader")
SPARK_DAEMON = "pyspark.daemon"


def preload() -> None:
    """Imports :data:`PRELOADED`; a failure is left for the worker to meet and report."""
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            log.warning("the Spark daemon could not preload %s: %s", name, exc)


def main() -> None:
    preload()
    runpy.run_module(SPARK_DAEMON, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
