"""Apache RocketMQ as a Spark data source (PySpark 4's Python Data Source API), for batch and streaming.

Write a DataFrame whose columns are the parts of a message, read a topic back as a DataFrame::

    from spark_connector import register

    register(spark)  # or spark.dataSource.register(RocketMQDataSource)
    (df.selectExpr("CAST(id AS STRING) AS body", "'created' AS tags")
       .write.format("rocketmq").option("namesrv", "ns:9876").option("topic", "Orders")
       .mode("append").save())
    orders = spark.read.format("rocketmq").option("namesrv", "ns:9876").option("topic", "Orders").load()

Columns, options and delivery guarantees are described in ``docs/spark.md``. Modules: ``options`` and
``offsets`` and ``timestamps`` (settings, checked on the driver), ``columns`` (both schemas), ``rows`` and
``sender`` (a task's rows to pipelined sends), ``summary`` (commit figures), ``topic_check`` (the sink's
topic, before a write), ``pull`` and ``records`` (reading queues), ``progress`` (the source's figures per
micro-batch), ``writer``/``reader``/``source`` (the Spark classes), ``testing`` (a local NameServer and Broker
in a thread).

The Spark classes need ``pyspark`` (the ``spark`` extra); they are imported when first used, so the
option, row and summary helpers work without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spark_connector.errors import (
    ConnectorError,
    DataLossError,
    OptionError,
    RowError,
    SchemaError,
    SinkSendError,
    SourceReadError,
)
from spark_connector.options import SinkOptions, SourceOptions, parse_sink_options, parse_source_options
from spark_connector.summary import CommitSummary, PartitionReport, read_summaries

if TYPE_CHECKING:
    from spark_connector.source import RocketMQDataSource, register

_NEEDS_PYSPARK = {"RocketMQDataSource": "spark_connector.source", "register": "spark_connector.source"}

__all__ = [
    "CommitSummary",
    "ConnectorError",
    "DataLossError",
    "OptionError",
    "PartitionReport",
    "RocketMQDataSource",
    "RowError",
    "SchemaError",
    "SinkOptions",
    "SinkSendError",
    "SourceOptions",
    "SourceReadError",
    "parse_sink_options",
    "parse_source_options",
    "read_summaries",
    "register",
]


def __getattr__(name: str) -> Any:
    module_name = _NEEDS_PYSPARK.get(name)
    if module_name is None:
        raise AttributeError(f"module 'spark_connector' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
