"""A NameServer and a Broker on loopback, served from a background thread, for Spark tests and benchmarks.

Spark runs the connector in Python worker processes, so the servers must be reachable over TCP while the
test's own thread sits in blocking py4j calls: they run on an event loop of their own in a daemon thread.
Everything the test asks of them goes through :meth:`LocalCluster.call`, which runs a coroutine on that
loop and waits for it. ``close`` stops the servers and the thread; nothing is left behind.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from broker import Broker
from broker.testing import BrokerClient, config_for_tests
from nameserver import NameServer
from producer import Message, MessageQueue, Producer, SendResult
from rocketmq_wire.codes import ResponseCode

logger = logging.getLogger("spark_connector.testing")

T = TypeVar("T")

#: Seconds any single call into the cluster may take before the caller gives up.
CALL_TIMEOUT_S = 60.0


class LocalCluster:
    """One NameServer and one Broker (registered with it) on 127.0.0.1, ports chosen by the OS."""

    def __init__(self, store_dir: Path, *, broker_name: str = "broker-a", **broker_settings: Any) -> None:
        self.store_dir = store_dir
        self.broker_name = broker_name
        self._broker_settings = broker_settings
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="rocketmq-local-cluster", daemon=True)
        self._namesrv: NameServer | None = None
        self._broker: Broker | None = None

    # -- lifecycle --------------------------------------------------------------------------------------

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def start(self) -> LocalCluster:
        self._thread.start()
        try:
            self.call(self._start)
        except BaseException:
            self.close()
            raise
        return self

    async def _start(self) -> None:
        namesrv = NameServer("127.0.0.1", 0)
        await namesrv.start()
        self._namesrv = namesrv
        config = config_for_tests(
            self.store_dir,
            broker_name=self.broker_name,
            namesrv_addr=namesrv.address,
            **self._broker_settings,
        )
        broker = Broker(config)
        await broker.start()
        self._broker = broker
        logger.info("local cluster: NameServer %s, broker %s", namesrv.address, broker.address)

    async def _stop(self) -> None:
        if self._broker is not None:
            await self._broker.close()
        if self._namesrv is not None:
            await self._namesrv.close()

    def close(self) -> None:
        """Stop both servers and the thread; idempotent."""
        if self._thread.is_alive():
            try:
                self.call(self._stop)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(CALL_TIMEOUT_S)
        if not self._loop.is_closed() and not self._loop.is_running():
            self._loop.close()

    # -- access -----------------------------------------------------------------------------------------

    def call(self, work: Callable[[], Awaitable[T]], timeout: float = CALL_TIMEOUT_S) -> T:
        """Run ``work()`` on the cluster's loop and return its result (or raise its exception)."""

        async def run() -> T:
            return await work()

        future: Future[T] = asyncio.run_coroutine_threadsafe(run(), self._loop)
        return future.result(timeout)

    @property
    def namesrv_address(self) -> str:
        assert self._namesrv is not None, "the cluster is not started"
        return self._namesrv.address

    @property
    def broker(self) -> Broker:
        """The broker itself; touch it only through :meth:`call` (it belongs to the cluster's loop)."""
        assert self._broker is not None, "the cluster is not started"
        return self._broker

    @property
    def broker_address(self) -> str:
        return self.broker.address

    def create_topic(self, topic: str, queues: int = 4) -> None:
        """Create ``topic`` with ``queues`` read and write queues and wait until the NameServer routes it."""

        async def create() -> None:
            async with BrokerClient(self.broker.address) as client:
                response = await client.create_topic(topic, queues)
            if response.code != ResponseCode.SUCCESS:
                raise RuntimeError(f"creating topic {topic} failed: {response.code} {response.remark}")
            await self.broker.registration.register_all()

        self.call(create)

    def send(
        self, messages: Sequence[Message], *, queue_ids: Sequence[int] | None = None
    ) -> list[SendResult]:
        """Send ``messages`` one by one through a producer of this cluster (to ``queue_ids[i]`` if given)."""

        async def send_all() -> list[SendResult]:
            results = []
            async with Producer("LocalClusterProducer", self.namesrv_address) as producer:
                for index, message in enumerate(messages):
                    queue = None
                    if queue_ids is not None:
                        queue = MessageQueue(message.topic, self.broker_name, queue_ids[index])
                    results.append(await producer.send(message, queue=queue))
            return results

        return self.call(send_all)

    def queue_max_offsets(self, topic: str) -> dict[int, int]:
        """The next offset of every queue the broker stores for ``topic`` (so the message count per queue)."""

        async def offsets() -> dict[int, int]:
            store = self.broker.store
            queue_ids = store.topics().get(topic, [])
            return {queue_id: store.get_max_offset(topic, queue_id) for queue_id in queue_ids}

        return self.call(offsets)

    def message_count(self, topic: str) -> int:
        return sum(self.queue_max_offsets(topic).values())

    def commit_log_end(self) -> int:
        """Bytes in the broker's commit log: unchanged means no message of any topic was stored."""

        async def end() -> int:
            return self.broker.store.max_physical_offset

        return self.call(end)


def local_spark(
    app_name: str = "rocketmq-connector", *, cores: int = 2, config: Mapping[str, str] | None = None
) -> Any:
    """A ``local[cores]`` SparkSession whose Python workers run this interpreter, with the data source
    registered, and loaded before Spark forks its workers (:mod:`spark_connector.daemon`). Workers started
    with another ``python3`` would lack this project and ``pyarrow``; Spark's planner workers read the
    interpreter from the environment only, hence ``PYSPARK_PYTHON`` is set here. ``config``: more Spark
    settings, given when the session starts (``spark.driver.extraJavaOptions`` must be, in local mode).
    """
    settings = {"spark.sql.shuffle.partitions": str(cores), **(config or {})}
    return _session(f"local[{cores}]", app_name, settings)


def cluster_spark(master_url: str, app_name: str = "rocketmq-connector", **config: str) -> Any:
    """A SparkSession on a cluster manager (``spark://host:port`` of a standalone master) whose executors,
    in other processes and possibly on other hosts, run the connector: their Python workers start this
    interpreter (``spark.pyspark.python``: on another host the same path must hold an interpreter with the
    project and pyarrow installed) with the project's folder on ``PYTHONPATH`` (for a checkout that is not
    installed there), and preload it (:mod:`spark_connector.daemon`). ``config``: more Spark settings
    (``spark.executor.memory``, ``spark.cores.max``, ...), as keyword names cannot hold dots, a mapping
    unpacked: ``cluster_spark(url, **{"spark.executor.memory": "512m"})``.
    """
    import os

    project_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    settings = {"spark.executorEnv.PYTHONPATH": project_root, "spark.ui.showConsoleProgress": "false"}
    return _session(master_url, app_name, {**settings, **config})


def _session(master: str, app_name: str, config: Mapping[str, str]) -> Any:
    """The settings both kinds of session need: Python workers on this interpreter, importing pyspark with
    its bytecode (:mod:`spark_connector.spark_home`), the connector preloaded and registered, the driver on
    loopback (tests and benchmarks never reach it from elsewhere), no UI."""
    import os
    import sys

    from pyspark.sql import SparkSession

    from spark_connector.source import register
    from spark_connector.spark_home import use_spark_home_for_workers

    use_spark_home_for_workers()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.master(master).appName(app_name)
    defaults = {
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.ui.enabled": "false",
        "spark.python.daemon.module": "spark_connector.daemon",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
    }
    for key, value in {**defaults, **config}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


def spark_unavailable_reason() -> str | None:
    """None when a local Spark session can start here, else exactly what is missing (for test skips)."""
    import importlib.util
    import os
    import shutil

    if importlib.util.find_spec("pyspark") is None:
        return "pyspark not installed: pip install -e '.[spark]'"
    if importlib.util.find_spec("pyarrow") is None:
        return "pyarrow not installed (Spark's Python data sources need it): pip install -e '.[spark]'"
    java_home = os.environ.get("JAVA_HOME")
    home_java = bool(java_home) and os.path.exists(os.path.join(java_home or "", "bin", "java"))
    if shutil.which("java") is None and not home_java:
        return "java not on PATH and JAVA_HOME not set (Spark 4 needs Java 17 or later)"
    return None
