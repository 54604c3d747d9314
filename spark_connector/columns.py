"""The columns of both directions: what the sink accepts, and what the source produces.

The sink follows the conventions of Spark's Kafka sink: one column per part of a message, ``body``
required, a ``topic`` column used unless the ``topic`` option overrides it. The check runs when Spark asks
the data source for its writer, on the driver, so a misspelt or mistyped column fails the query before any
task sends a message.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_connector.errors import SchemaError
from spark_connector.rows import SINK_COLUMNS

_STRING = StringType()
#: Accepted types per sink column, and how the error message spells them.
_SINK_TYPES: dict[str, tuple[tuple[DataType, ...], str]] = {
    "body": ((BinaryType(), _STRING), "binary or string"),
    "topic": ((_STRING,), "string"),
    "tags": ((_STRING,), "string"),
    "keys": ((_STRING, ArrayType(_STRING, True), ArrayType(_STRING, False)), "string or array<string>"),
    "properties": (
        (MapType(_STRING, _STRING, True), MapType(_STRING, _STRING, False)),
        "map<string,string>",
    ),
    "delay_level": ((ByteType(), ShortType(), IntegerType()), "int (or tinyint, smallint)"),
    "sharding_key": ((_STRING,), "string"),
    "deliver_time": ((TimestampType(), LongType()), "timestamp or bigint (epoch ms)"),
}
assert tuple(_SINK_TYPES) == SINK_COLUMNS


def check_sink_schema(schema: StructType, *, topic_option: str | None) -> list[str]:
    """The sink columns present in ``schema``; raises :class:`SchemaError` naming the offending column."""
    names = [field.name for field in schema.fields]
    for field in schema.fields:
        rule = _SINK_TYPES.get(field.name)
        if rule is None:
            raise SchemaError(
                f"column {field.name!r} is not a RocketMQ sink column; the sink writes "
                f"{', '.join(SINK_COLUMNS)} (body required): drop or rename it"
            )
        accepted, spelled = rule
        if field.dataType not in accepted:
            raise SchemaError(
                f"column {field.name!r} has type {field.dataType.simpleString()}, expected {spelled}"
            )
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise SchemaError(f"column {duplicates[0]!r} appears more than once")
    if "body" not in names:
        raise SchemaError("column 'body' (binary or string) is required: it becomes the message body")
    if topic_option is None and "topic" not in names:
        raise SchemaError("no topic: set the 'topic' option or add a 'topic' column (string)")
    return names


#: What ``spark.read.format("rocketmq")`` returns, one row per message.
SOURCE_SCHEMA = StructType(
    [
        StructField("topic", _STRING, False),
        StructField("queue_id", IntegerType(), False),
        StructField("queue_offset", LongType(), False),
        StructField("body", BinaryType(), False),
        StructField("tags", _STRING, True),
        StructField("keys", ArrayType(_STRING, False), False),
        StructField("properties", MapType(_STRING, _STRING, False), False),
        StructField("born_timestamp", TimestampType(), False),
        StructField("store_timestamp", TimestampType(), False),
        StructField("msg_id", _STRING, False),
        StructField("broker_name", _STRING, False),
    ]
)
