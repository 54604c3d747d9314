"""The data source Spark looks up by the name ``rocketmq``.

It only parses options and hands out writers and readers; each of those checks what it needs on the
driver. ``register`` is the one-liner most programs want.
"""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from spark_connector.columns import SOURCE_SCHEMA
from spark_connector.errors import OptionError, SchemaError
from spark_connector.options import (
    SINK_OPTION_NAMES,
    SOURCE_OPTION_NAMES,
    parse_sink_options,
    parse_source_options,
    unknown_options,
)
from spark_connector.reader import RocketMQReader, RocketMQStreamReader
from spark_connector.topic_check import check_topic_writable
from spark_connector.writer import RocketMQStreamWriter, RocketMQWriter

logger = logging.getLogger("spark_connector")

#: Options Spark itself may pass along with the user's (``save(path)``, ``checkpointLocation``...).
_SPARK_OPTIONS = frozenset({"path", "paths", "checkpointlocation", "queryname"})


class RocketMQDataSource(DataSource):
    """Apache RocketMQ as a Spark data source: ``format("rocketmq")`` for batch and streaming, both ways.

    See ``docs/spark.md`` for the options and columns.
    """

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> StructType:
        return SOURCE_SCHEMA

    def _warn_unknown(self, known: frozenset[str], role: str) -> None:
        ignored = [name for name in unknown_options(self.options, known) if name not in _SPARK_OPTIONS]
        if ignored:
            logger.warning("the RocketMQ %s ignores unknown option(s): %s", role, ", ".join(ignored))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise OptionError(
                "save mode 'overwrite' is not supported: messages cannot be removed from a topic; "
                "use mode('append')"
            )
        self._warn_unknown(SINK_OPTION_NAMES, "sink")
        options = parse_sink_options(self.options)
        writer = RocketMQWriter(options, schema)
        check_topic_writable(options)
        return writer

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        self._warn_unknown(SINK_OPTION_NAMES, "sink")
        options = parse_sink_options(self.options)
        writer = RocketMQStreamWriter(options, schema)
        check_topic_writable(options)
        return writer

    def reader(self, schema: StructType) -> DataSourceReader:
        _check_read_schema(schema)
        self._warn_unknown(SOURCE_OPTION_NAMES, "source")
        return RocketMQReader(parse_source_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        _check_read_schema(schema)
        self._warn_unknown(SOURCE_OPTION_NAMES, "source")
        return RocketMQStreamReader(parse_source_options(self.options))


def _check_read_schema(schema: StructType) -> None:
    """Rows are produced in :data:`SOURCE_SCHEMA`'s layout; a schema given with ``.schema(...)`` must match
    it (nullability aside), or the rows would be read into the wrong columns."""
    wanted = [(field.name, field.dataType.simpleString()) for field in SOURCE_SCHEMA.fields]
    given = [(field.name, field.dataType.simpleString()) for field in schema.fields]
    if given != wanted:
        raise SchemaError(
            "the RocketMQ source's columns are fixed: "
            + ", ".join(f"{name} {kind}" for name, kind in wanted)
            + "; select or cast columns after load() instead of passing a schema"
        )


def register(spark: SparkSession) -> None:
    """Make ``format("rocketmq")`` available in ``spark`` (same as ``spark.dataSource.register``)."""
    spark.dataSource.register(RocketMQDataSource)
