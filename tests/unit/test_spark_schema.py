"""The sink's schema check (Spark types only, no JVM): every refusal names the column."""

from __future__ import annotations

from typing import Any

import pytest

types = pytest.importorskip("pyspark.sql.types", reason="pyspark not installed: pip install -e '.[spark]'")

from spark_connector import SchemaError  # noqa: E402
from spark_connector.columns import SOURCE_SCHEMA, check_sink_schema  # noqa: E402


def schema(**columns: Any) -> Any:
    return types.StructType([types.StructField(name, data_type) for name, data_type in columns.items()])


def test_every_sink_column_with_each_accepted_type() -> None:
    full = schema(
        body=types.BinaryType(),
        topic=types.StringType(),
        tags=types.StringType(),
        keys=types.ArrayType(types.StringType()),
        properties=types.MapType(types.StringType(), types.StringType()),
        delay_level=types.IntegerType(),
        sharding_key=types.StringType(),
    )
    assert check_sink_schema(full, topic_option=None) == [
        "body",
        "topic",
        "tags",
        "keys",
        "properties",
        "delay_level",
        "sharding_key",
    ]
    text = schema(body=types.StringType(), keys=types.StringType(), delay_level=types.ShortType())
    assert check_sink_schema(text, topic_option="T") == ["body", "keys", "delay_level"]


@pytest.mark.parametrize(
    ("columns", "topic", "named"),
    [
        ({"body": types.BinaryType(), "value": types.StringType()}, "T", "'value'"),
        ({"tags": types.StringType()}, "T", "'body'"),
        ({"body": types.LongType()}, "T", "'body' has type bigint"),
        ({"body": types.BinaryType(), "keys": types.ArrayType(types.IntegerType())}, "T", "'keys'"),
        (
            {
                "body": types.BinaryType(),
                "properties": types.MapType(types.StringType(), types.IntegerType()),
            },
            "T",
            "'properties'",
        ),
        ({"body": types.BinaryType(), "delay_level": types.StringType()}, "T", "'delay_level'"),
        ({"body": types.BinaryType()}, None, "'topic'"),
    ],
)
def test_refusals_name_the_column(columns: dict[str, object], topic: str | None, named: str) -> None:
    with pytest.raises(SchemaError, match=named):
        check_sink_schema(schema(**columns), topic_option=topic)


def test_source_schema_columns() -> None:
    assert SOURCE_SCHEMA.fieldNames() == [
        "topic",
        "queue_id",
        "queue_offset",
        "body",
        "tags",
        "keys",
        "properties",
        "born_timestamp",
        "store_timestamp",
        "msg_id",
        "broker_name",
    ]


def test_the_data_source_class_without_a_jvm(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import spark_connector
    import spark_connector.source
    from spark_connector import OptionError
    from spark_connector.reader import RocketMQReader
    from spark_connector.writer import RocketMQWriter

    source_cls = spark_connector.RocketMQDataSource  # imported on first use
    assert source_cls.name() == "rocketmq"
    options = {"namesrv": "127.0.0.1:9876", "topic": "T", "batch.sise": "8"}
    source = source_cls(options)
    checked: list[str | None] = []
    monkeypatch.setattr(spark_connector.source, "check_topic_writable", lambda o: checked.append(o.topic))
    body_only = types.StructType([types.StructField("body", types.BinaryType())])
    with caplog.at_level("WARNING", logger="spark_connector"):
        writer = source.writer(body_only, overwrite=False)
    assert isinstance(writer, RocketMQWriter)
    assert writer.options.topic == "T"
    assert "batch.sise" in caplog.text, "a misspelt option is reported"
    assert checked == ["T"], "the topic is checked on the driver, after the schema"
    with pytest.raises(OptionError, match="overwrite"):
        source.writer(body_only, overwrite=True)
    assert isinstance(source.reader(SOURCE_SCHEMA), RocketMQReader)
    with pytest.raises(SchemaError, match="columns are fixed"):
        source.reader(body_only)
