"""Rows to messages: the value checks only a row can fail, and the Arrow and Row input shapes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from spark_connector import RowError
from spark_connector.rows import columns_of_rows, messages_from_columns, outgoing_chunks


def test_every_column_becomes_part_of_the_message() -> None:
    columns: dict[str, list[Any]] = {
        "body": ["text é", b"\xff\x00raw"],
        "topic": ["RowTopic", "Other"],
        "tags": ["TagA", None],
        "keys": [["k1", "k2"], "s1 s2"],
        "properties": [{"origin": "spark"}, [("a", "1"), ("b", "2")]],
        "delay_level": [None, 3],
        "sharding_key": ["customer-7", None],
    }
    first, second = messages_from_columns(columns, 2, topic=None)
    assert first.message.body == "text é".encode()
    assert first.message.topic == "RowTopic"
    assert first.message.tags == "TagA"
    assert first.message.keys == ["k1", "k2"]
    assert first.message.properties == {"origin": "spark"}
    assert (first.sharding_key, first.batchable) == ("customer-7", False)
    assert second.message.body == b"\xff\x00raw"
    assert second.message.tags is None
    assert second.message.keys == ["s1", "s2"], "a string of keys is split on spaces, as Java's KEYS"
    assert second.message.properties == {"a": "1", "b": "2"}
    assert (second.message.delay_level, second.batchable) == (3, False)


def test_a_deliver_time_makes_a_timer_message_sent_alone() -> None:
    aware = dt.datetime(2026, 12, 1, 8, 30, tzinfo=dt.UTC)
    naive_local = dt.datetime(2026, 12, 1, 9, 0)
    columns: dict[str, list[Any]] = {"body": [b"a", b"b", b"c", b"d"]}
    columns["deliver_time"] = [aware, naive_local, 1_900_000_000_000, None]
    first, second, third, plain = messages_from_columns(columns, 4, topic="T")
    assert first.message.deliver_time_ms == 1_796_113_800_000
    assert second.message.deliver_time_ms == int(naive_local.timestamp() * 1000), "naive: local time"
    assert third.message.deliver_time_ms == 1_900_000_000_000
    assert [o.batchable for o in (first, second, third, plain)] == [False, False, False, True]
    assert plain.message.deliver_time_ms is None


def test_topic_option_overrides_the_column() -> None:
    (only,) = messages_from_columns({"body": [b"x"], "topic": ["FromColumn"]}, 1, topic="FromOption")
    assert only.message.topic == "FromOption"
    assert only.batchable


@pytest.mark.parametrize(
    ("columns", "column"),
    [
        ({"body": [b"ok", None]}, "'body'"),
        ({"body": [b"ok", 12]}, "'body'"),
        ({"body": [b"ok", b"x"], "keys": [None, ["has space"]]}, "'keys'"),
        ({"body": [b"ok", b"x"], "keys": [None, ["a", None]]}, "'keys'"),
        ({"body": [b"ok", b"x"], "properties": [None, {"UNIQ_KEY": "forged"}]}, "'properties'"),
        ({"body": [b"ok", b"x"], "properties": [None, {"name": None}]}, "'properties'"),
        ({"body": [b"ok", b"x"], "delay_level": [0, -1]}, "'delay_level'"),
        ({"body": [b"ok", b"x"], "deliver_time": [None, -5]}, "'deliver_time'"),
        ({"body": [b"ok", b"x"], "deliver_time": [None, "soon"]}, "'deliver_time'"),
        ({"body": [b"ok", b"x"], "deliver_time": [None, 5], "delay_level": [None, 2]}, "'deliver_time'"),
    ],
)
def test_bad_values_name_the_column_and_the_row(columns: dict[str, list[Any]], column: str) -> None:
    with pytest.raises(RowError, match=column) as caught:
        messages_from_columns(columns, 2, topic="T", first_row=40)
    assert str(caught.value).startswith("row 41:")


def test_a_row_without_any_topic_is_refused() -> None:
    with pytest.raises(RowError, match="'topic'"):
        messages_from_columns({"body": [b"x"], "topic": [None]}, 1, topic=None)


def test_rows_are_transposed_in_chunks_with_positions_carried_on() -> None:
    rows = [{"body": f"m{i}", "tags": "T"} for i in range(5)]
    assert columns_of_rows(rows[:2]) == ({"body": ["m0", "m1"], "tags": ["T", "T"]}, 2)
    chunks = list(outgoing_chunks(rows, topic="Topic", rows_per_chunk=2))
    assert [len(chunk) for chunk in chunks] == [2, 2, 1]
    assert [o.message.body for chunk in chunks for o in chunk] == [f"m{i}".encode() for i in range(5)]
    bad = [*rows, {"body": None, "tags": None}]
    with pytest.raises(RowError, match=r"^row 5:"):
        list(outgoing_chunks(bad, topic="Topic", rows_per_chunk=2))


def test_spark_rows_by_field_name() -> None:
    pytest.importorskip("pyspark", reason="pyspark not installed: pip install -e '.[spark]'")
    from pyspark.sql import Row

    rows = [Row(body=b"a", keys=["k"]), Row(body=b"b", keys=None)]
    (chunk,) = outgoing_chunks(rows, topic="T")
    assert [(o.message.body, o.message.keys) for o in chunk] == [(b"a", ["k"]), (b"b", [])]


def test_arrow_record_batches_column_by_column() -> None:
    pa = pytest.importorskip("pyarrow", reason="pyarrow not installed: pip install -e '.[spark]'")
    batch = pa.record_batch(
        [
            pa.array([b"\x00\x01", b"two"], pa.binary()),
            pa.array([["a", "b"], None], pa.list_(pa.string())),
            pa.array([[("p", "1")], []], pa.map_(pa.string(), pa.string())),
            pa.array([None, 2], pa.int32()),
        ],
        names=["body", "keys", "properties", "delay_level"],
    )
    chunks = list(outgoing_chunks([batch, batch], topic="T"))
    assert len(chunks) == 2
    first, second = chunks[0]
    assert (first.message.body, first.message.keys, first.message.properties) == (
        b"\x00\x01",
        ["a", "b"],
        {"p": "1"},
    )
    assert (second.message.keys, second.message.properties, second.message.delay_level) == ([], {}, 2)
