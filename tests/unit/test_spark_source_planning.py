"""The source's Kafka-like options and the stream reader's planning, without Spark's JVM or a broker: the
brokers' answers are a :class:`~spark_connector.reader.Snapshot` given to the reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spark_connector import OptionError, parse_source_options
from spark_connector.errors import DataLossError
from spark_connector.offsets import topic_offsets_from_json, topic_offsets_to_json
from spark_connector.options import DEFAULT_MAX_TRIGGER_DELAY_MS, SourceOptions
from spark_connector.progress import read_batch_metrics
from spark_connector.pull import QueueAddress
from spark_connector.timestamps import parse_timestamp_spec

pytest.importorskip("pyspark")

from spark_connector.reader import QueueRange, RocketMQStreamReader, Snapshot

NS = {"namesrv": "h:1"}


@pytest.mark.parametrize(
    "given",
    [{}, {"topic": "A", "topics": "A,B"}, {"topics": "A", "topicPattern": "A.*"}, {"topic": " "}],
)
def test_exactly_one_way_of_naming_topics(given: dict[str, str]) -> None:
    with pytest.raises(OptionError, match=r"exactly one of the options 'topic'.*'topics'.*'topicPattern'"):
        parse_source_options(NS | given)


def test_topics_and_pattern_are_parsed_and_checked() -> None:
    listed = parse_source_options(NS | {"topics": " Orders, Payments ,"})
    assert (listed.topic, listed.topics, listed.named_topics) == (
        None,
        ("Orders", "Payments"),
        ("Orders", "Payments"),
    )
    pattern = parse_source_options(NS | {"TopicPattern": "Orders-.*"})
    assert (pattern.topic_pattern, pattern.named_topics) == ("Orders-.*", ())
    with pytest.raises(OptionError, match="'topicPattern' is not a regular expression"):
        parse_source_options(NS | {"topicPattern": "Orders-("})
    with pytest.raises(OptionError, match="distinct"):
        parse_source_options(NS | {"topics": "A,A"})
    with pytest.raises(OptionError, match="'topics': topic 'bad topic'"):
        parse_source_options(NS | {"topics": "A,bad topic"})


def test_filters_one_at_a_time() -> None:
    tags = parse_source_options(NS | {"topic": "T", "filter.tags": " TagA || TagB "})
    assert (tags.filter_tags, tags.filter_sql) == ("TagA || TagB", None)
    with pytest.raises(OptionError, match=r"'filter.sql' and 'filter.tags' go one at a time"):
        parse_source_options(NS | {"topic": "T", "filter.tags": "A", "filter.sql": "a > 1"})
    with pytest.raises(OptionError, match=r"'filter.tags' is empty"):
        parse_source_options(NS | {"topic": "T", "filter.tags": "  "})


def test_fail_on_data_loss_and_trigger_sizes() -> None:
    defaults = parse_source_options(NS | {"topic": "T"})
    assert defaults.fail_on_data_loss is True
    assert (defaults.min_messages_per_trigger, defaults.max_trigger_delay_ms) == (
        None,
        DEFAULT_MAX_TRIGGER_DELAY_MS,
    )
    options = parse_source_options(
        NS
        | {"topic": "T", "FailOnDataLoss": "FALSE", "minMessagesPerTrigger": "50", "maxTriggerDelay": "30s"}
    )
    assert (options.fail_on_data_loss, options.min_messages_per_trigger, options.max_trigger_delay_ms) == (
        False,
        50,
        30_000,
    )
    for delay, ms in (("250ms", 250), ("2m", 120_000), ("1h", 3_600_000), ("900", 900)):
        parsed = parse_source_options(
            NS | {"topic": "T", "minMessagesPerTrigger": "1", "maxTriggerDelay": delay}
        )
        assert parsed.max_trigger_delay_ms == ms
    with pytest.raises(OptionError, match="'failOnDataLoss' must be true or false"):
        parse_source_options(NS | {"topic": "T", "failOnDataLoss": "yes"})
    with pytest.raises(OptionError, match="'maxTriggerDelay' must be a duration"):
        parse_source_options(NS | {"topic": "T", "minMessagesPerTrigger": "1", "maxTriggerDelay": "soon"})
    with pytest.raises(OptionError, match="set that too"):
        parse_source_options(NS | {"topic": "T", "maxTriggerDelay": "1m"})


def test_timestamp_specs_global_per_topic_and_per_queue() -> None:
    everywhere = parse_timestamp_spec("1700000000000", "startingOffsetsByTimestamp", None)
    assert everywhere.for_queue(("X", "broker-a", 3)) == 1700000000000
    mixed = parse_timestamp_spec(
        json.dumps({"A": 5, "B": {"broker-a": {"1": 7}}}), "startingOffsetsByTimestamp", None
    )
    assert mixed.for_queue(("A", "broker-b", 0)) == 5
    assert mixed.for_queue(("B", "broker-a", 1)) == 7
    assert mixed.for_queue(("B", "broker-a", 0)) is None, "left to startingOffsets"
    short = parse_timestamp_spec(json.dumps({"broker-a": {"0": 9}}), "endingOffsetsByTimestamp", "T")
    assert short.for_queue(("T", "broker-a", 0)) == 9
    options = parse_source_options(NS | {"topics": "A,B", "endingOffsetsByTimestamp": json.dumps({"A": 1})})
    assert options.ending_timestamps is not None and options.ending_timestamps.for_queue(("A", "b", 0)) == 1
    for bad, match in (
        ("soon", "epoch milliseconds or JSON"),
        ("-1", "epoch milliseconds"),
        ('{"A": "x"}', "A"),
    ):
        with pytest.raises(OptionError, match=match):
            parse_timestamp_spec(bad, "startingOffsetsByTimestamp", None)
    with pytest.raises(OptionError, match="names topic 'Other'"):
        parse_timestamp_spec('{"Other": 1}', "startingOffsetsByTimestamp", "T")


def test_offsets_json_by_topic_and_the_single_topic_form() -> None:
    offsets = {("B", "broker-a", 0): 4, ("A", "broker-b", 1): 2, ("A", "broker-a", 10): 9}
    as_json = topic_offsets_to_json(offsets, None)
    assert (
        json.dumps(as_json)
        == '{"A": {"broker-a": {"10": 9}, "broker-b": {"1": 2}}, "B": {"broker-a": {"0": 4}}}'
    )
    assert topic_offsets_from_json(as_json, "x") == offsets
    single = {("T", "broker-a", 0): 3}
    assert topic_offsets_to_json(single, "T") == {"broker-a": {"0": 3}}, (
        "the checkpoint form of older queries"
    )
    assert topic_offsets_from_json({"broker-a": {"0": 3}}, "x", "T") == single
    assert topic_offsets_from_json({"T": {"broker-a": {"0": 3}}}, "x", "T") == single
    with pytest.raises(OptionError, match="names the topic"):
        topic_offsets_from_json({"broker-a": {"0": 3}}, "startingOffsets", None)
    spec = parse_source_options(
        NS | {"topics": "A,B", "startingOffsets": json.dumps({"A": {"b": {"0": -1}}})}
    )
    assert spec.starting_offsets == {("A", "b", 0): -1}


class Planned(RocketMQStreamReader):
    """The stream reader with the brokers' answers given by the test."""

    def __init__(self, options: SourceOptions, snap: Snapshot) -> None:
        super().__init__(options)
        self.snap = snap
        self.asked: list[list[str] | None] = []

    def _snapshot(self, topics: list[str] | None = None, **kwargs: Any) -> Snapshot:
        self.asked.append(topics)
        return self.snap


def snap(lows: dict[tuple[str, int], int], highs: dict[tuple[str, int], int], broker: str = "b") -> Snapshot:
    queues = [QueueAddress(broker, q, "127.0.0.1:1", topic) for topic, q in sorted(highs)]
    return Snapshot(
        queues,
        {(t, broker, q): v for (t, q), v in lows.items()},
        {(t, broker, q): v for (t, q), v in highs.items()},
    )


def test_min_messages_holds_a_batch_back_until_enough_or_the_delay() -> None:
    options = parse_source_options(
        NS | {"topics": "A,B", "minMessagesPerTrigger": "10", "maxTriggerDelay": "1h"}
    )
    start = {"A": {"b": {"0": 0}}, "B": {"b": {"0": 0}}}
    reader = Planned(options, snap({("A", 0): 0, ("B", 0): 0}, {("A", 0): 4, ("B", 0): 5}))
    assert reader.latestOffset(start, None) == start, "9 waiting, fewer than 10: no batch"
    reader.snap = snap({("A", 0): 0, ("B", 0): 0}, {("A", 0): 4, ("B", 0): 6})
    assert reader.latestOffset(start, None) == {"A": {"b": {"0": 4}}, "B": {"b": {"0": 6}}}
    impatient = parse_source_options(
        NS | {"topic": "A", "minMessagesPerTrigger": "10", "maxTriggerDelay": "0ms"}
    )
    few = Planned(impatient, snap({("A", 0): 0}, {("A", 0): 2}))
    assert few.latestOffset({"b": {"0": 0}}, None) == {"b": {"0": 2}}, "the delay has passed: what there is"


def test_a_pattern_drops_deleted_topics_and_starts_new_ones_at_their_earliest() -> None:
    options = parse_source_options(NS | {"topicPattern": "T.*", "maxMessagesPerTrigger": "100"})
    reader = Planned(options, snap({("T2", 0): 5}, {("T2", 0): 8}))
    start = {"T1": {"b": {"0": 3}}}  # T1 was deleted since the last batch; T2 is new
    latest = reader.latestOffset(start, None)
    assert latest == {"T2": {"b": {"0": 8}}}
    ranges = reader.partitions(start, latest)
    assert ranges == [QueueRange("b", 0, "127.0.0.1:1", 5, 8, "T2")]


def test_deleted_offsets_fail_the_query_or_are_skipped_and_counted(tmp_path: Path) -> None:
    broker_view = snap({("T", 0): 40, ("T", 1): 0}, {("T", 0): 60, ("T", 1): 10})
    failing = Planned(parse_source_options(NS | {"topic": "T"}), broker_view)
    with pytest.raises(DataLossError) as caught:
        failing.partitions({"b": {"0": 25, "1": 0}}, {"b": {"0": 50, "1": 10}})
    message = str(caught.value)
    assert (
        "topic 'T', broker b, queue 0" in message and "next offset is 25" in message and "from 40" in message
    )
    assert "15 message(s)" in message and "failOnDataLoss=false" in message
    metrics = tmp_path / "metrics.jsonl"
    skipping = Planned(
        parse_source_options(NS | {"topic": "T", "failOnDataLoss": "false", "metrics.path": str(metrics)}),
        broker_view,
    )
    ranges = skipping.partitions({"b": {"0": 25, "1": 0}}, {"b": {"0": 50, "1": 10}})
    assert ranges == [
        QueueRange("b", 0, "127.0.0.1:1", 40, 50, "T"),
        QueueRange("b", 1, "127.0.0.1:1", 0, 10, "T"),
    ]
    [figures] = read_batch_metrics(metrics)
    assert (figures.messages, figures.skipped, figures.skipped_total, figures.lag) == (20, 15, 15, 10)
    assert figures.topics == ("T",)
