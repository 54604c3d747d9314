"""The ``spark`` fixture for integration modules that write to real clusters through the connector.

``conftest.py`` offers it to every module. One local session (``local[2]``, workers on this interpreter)
per pytest process (each xdist worker): starting and warming one takes 20-40 s on a busy machine, and a
module-scoped session was started again for every provider, since pytest runs a provider's tests of all
modules before the next provider's. Skipped, with the reason, when pyspark, pyarrow or Java is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from spark_connector.testing import LocalCluster, local_spark, spark_unavailable_reason

#: The driver JVM's options. A test session runs small jobs on a 2-core machine busy with the suite: C1
#: alone and the serial collector cut its CPU by about a third (the sink and source modules: 106 -> 76 s of
#: CPU) without slowing the jobs, whose time goes to the Python workers. The Java peers and mqadmin run so
#: too (``tests/integration/apache/jvm.py``); Apache's brokers do not: their timer service spins under C1.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session, warmed up: Spark's first job with a Python data source starts and primes its Python
    workers (10-20 s on a busy machine), which belongs to set-up rather than to a scenario's budget."""
    missing = spark_unavailable_reason()
    if missing is not None:
        pytest.skip(missing)
    session = local_spark(
        "rocketmq-cluster-tests", config={"spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS}
    )
    try:
        with LocalCluster(tmp_path_factory.mktemp("spark-warm-up") / "store") as local:
            schema = "body string, tags string"
            frame = session.createDataFrame([("warm-up", "w")], schema)
            frame.write.format("rocketmq").option("namesrv", local.namesrv_address).option(
                "topic", "SparkWarmUp"
            ).mode("append").save()
            reader = session.read.format("rocketmq").option("namesrv", local.namesrv_address)
            assert reader.option("topic", "SparkWarmUp").load().count() == 1
        yield session
    finally:
        session.stop()
