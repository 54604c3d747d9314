"""Options and offsets of the Spark connector: parsed on the driver, errors naming the option."""

from __future__ import annotations

import json
import pickle
import ssl
from pathlib import Path

import pytest

from spark_connector import OptionError, parse_sink_options, parse_source_options
from spark_connector.offsets import (
    EARLIEST,
    LATEST,
    cap_offsets,
    offsets_from_json,
    offsets_to_json,
    parse_offset_spec,
    resolve_offsets,
    unknown_queues,
)
from spark_connector.options import (
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_SINK_GROUP,
    SINK_OPTION_NAMES,
    unknown_options,
)


def test_sink_options_with_defaults() -> None:
    options = parse_sink_options({"namesrv": "127.0.0.1:9876; 10.0.0.2:9876", "topic": "Orders"})
    assert options.connection.namesrv == ("127.0.0.1:9876", "10.0.0.2:9876")
    assert options.connection.namesrv_addr == "127.0.0.1:9876;10.0.0.2:9876"
    assert options.topic == "Orders"
    assert options.group == DEFAULT_SINK_GROUP
    assert options.batch_size == 1
    assert options.max_in_flight == DEFAULT_MAX_IN_FLIGHT
    assert options.summary_path is None
    assert options.connection.access_key is None


def test_sink_option_names_are_case_insensitive_and_all_read() -> None:
    options = parse_sink_options(
        {
            "NameSrv": "h:1",
            "Topic": "T",
            "Group": "G1",
            "send.timeout.MS": "500",
            "Batch.Size": "32",
            "max.in.flight": "8",
            "access.key": "ak",
            "secret.key": "sk",
            "namespace": "ns1",
            "summary.path": "/tmp/x.jsonl",
        }
    )
    assert (options.group, options.send_timeout_ms, options.batch_size, options.max_in_flight) == (
        "G1",
        500,
        32,
        8,
    )
    assert (options.connection.access_key, options.connection.secret_key) == ("ak", "sk")
    assert options.connection.namespace == "ns1"
    assert options.summary_path == "/tmp/x.jsonl"
    assert unknown_options({"NAMESRV": "h:1", "pth": "x"}, SINK_OPTION_NAMES) == ["pth"]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({}, "namesrv"),
        ({"namesrv": "   "}, "namesrv"),
        ({"namesrv": "nohost"}, "namesrv"),
        ({"namesrv": "h:notaport"}, "namesrv"),
        ({"namesrv": "h:1", "batch.size": "0"}, "batch.size"),
        ({"namesrv": "h:1", "batch.size": "ten"}, "batch.size"),
        ({"namesrv": "h:1", "max.in.flight": "-3"}, "max.in.flight"),
        ({"namesrv": "h:1", "send.timeout.ms": "1.5"}, "send.timeout.ms"),
        ({"namesrv": "h:1", "access.key": "ak"}, "access.key"),
        ({"namesrv": "h:1", "topic": "bad topic"}, "topic"),
        ({"namesrv": "h:1", "group": "bad group!"}, "group"),
        ({"namesrv": "h:1", "namespace": "a b"}, "namespace"),
        ({"namesrv": "h:1", "tls": "yes please"}, "tls"),
        ({"namesrv": "h:1", "tls": "true", "tls.config.file": "/no/such/tls.properties"}, "tls.config.file"),
    ],
)
def test_bad_sink_options_name_the_option(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=f"'{named}'"):
        parse_sink_options(options)


def test_source_options() -> None:
    options = parse_source_options(
        {
            "namesrv": "h:1",
            "topic": "T",
            "startingOffsets": '{"broker-a": {"0": 12, "1": -2}}',
            "endingOffsets": "latest",
            "maxMessagesPerTrigger": "100",
            "pull.batch.size": "64",
            "Filter.SQL": " a > 5 AND region = 'eu'",
        }
    )
    assert options.filter_sql == " a > 5 AND region = 'eu'"  # as written: Java keeps the expression
    assert options.starting_offsets == {("T", "broker-a", 0): 12, ("T", "broker-a", 1): EARLIEST}
    assert options.ending_offsets == "latest"
    assert options.max_messages_per_trigger == 100
    assert options.pull_batch_size == 64
    defaults = parse_source_options({"namesrv": "h:1", "topic": "T"})
    assert (defaults.starting_offsets, defaults.ending_offsets) == ("earliest", "latest")
    assert defaults.max_messages_per_trigger is None
    assert defaults.filter_sql is None


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"namesrv": "h:1"}, "topic"),
        ({"namesrv": "h:1", "topic": "T", "startingOffsets": "first"}, "startingOffsets"),
        ({"namesrv": "h:1", "topic": "T", "endingOffsets": '{"b": {"0": -7}}'}, "endingOffsets"),
        ({"namesrv": "h:1", "topic": "T", "startingOffsets": '{"b": {"x": 1}}'}, "startingOffsets"),
        ({"namesrv": "h:1", "topic": "T", "startingOffsets": '{"b": {"0": "1"}}'}, "startingOffsets"),
        ({"namesrv": "h:1", "topic": "T", "startingOffsets": "[1]"}, "startingOffsets"),
        ({"namesrv": "h:1", "topic": "T", "maxMessagesPerTrigger": "0"}, "maxMessagesPerTrigger"),
        ({"namesrv": "h:1", "topic": "T", "filter.sql": "  "}, "filter.sql"),
    ],
)
def test_bad_source_options_name_the_option(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=named):
        parse_source_options(options)


def test_offsets_json_round_trip_is_sorted_and_stable() -> None:
    offsets = {("broker-b", 1): 5, ("broker-a", 10): 7, ("broker-a", 2): 3}
    as_json = offsets_to_json(offsets)
    assert json.dumps(as_json) == '{"broker-a": {"2": 3, "10": 7}, "broker-b": {"1": 5}}'
    assert offsets_from_json(json.loads(json.dumps(as_json))) == offsets
    in_topic = {("T", broker, queue): offset for (broker, queue), offset in offsets.items()}
    assert parse_offset_spec(json.dumps(as_json), "startingOffsets", "T") == in_topic


def test_resolve_offsets_named_explicit_and_defaults() -> None:
    queues = [("a", 0), ("a", 1), ("a", 2)]
    lows = {("a", 0): 2, ("a", 1): 0, ("a", 2): 5}
    highs = {("a", 0): 10, ("a", 1): 4, ("a", 2): 9}
    assert resolve_offsets("earliest", queues, lows, highs, default="latest") == lows
    assert resolve_offsets("latest", queues, lows, highs, default="earliest") == highs
    spec = {("a", 0): 1, ("a", 1): LATEST}  # 1 is below the queue's first offset: clamped up to 2
    assert resolve_offsets(spec, queues, lows, highs, default="earliest") == {
        ("a", 0): 2,
        ("a", 1): 4,
        ("a", 2): 5,
    }
    assert resolve_offsets({("a", 2): 100}, queues, lows, highs, default="latest")[("a", 2)] == 9
    assert unknown_queues({("a", 7): 1, ("a", 0): 1}, queues) == [("a", 7)]
    assert unknown_queues("earliest", queues) == []


def test_cap_offsets_spends_the_budget_in_proportion() -> None:
    start = {("a", 0): 0, ("a", 1): 10}
    latest = {("a", 0): 100, ("a", 1): 20, ("a", 2): 5}  # queue 2 is new: read from 0
    capped = cap_offsets(start, latest, 23)
    advanced = {queue: capped[queue] - start.get(queue, 0) for queue in latest}
    assert sum(advanced.values()) == 23
    assert advanced[("a", 0)] > advanced[("a", 1)] >= advanced[("a", 2)] >= 0
    assert all(capped[q] <= latest[q] for q in latest)
    assert cap_offsets(start, latest, 1000) == latest
    assert sum(cap_offsets(start, latest, 1)[q] - start.get(q, 0) for q in latest) == 1


def test_tls_options_give_each_side_its_own_context(tmp_path: Path) -> None:
    """An SSLContext cannot travel to executors: the options can, and each side builds the context."""
    plain = parse_sink_options({"namesrv": "h:1"})
    assert plain.connection.ssl_context() is None
    properties = tmp_path / "tls.properties"
    properties.write_text("tls.test.mode.enable=false\ntls.client.authServer=true\n")
    options = parse_source_options(
        {"namesrv": "h:1", "topic": "T", "TLS": "True", "tls.config.file": str(properties)}
    )
    copied = pickle.loads(pickle.dumps(options))
    context = copied.connection.ssl_context()
    assert context is not None and context.verify_mode is ssl.CERT_REQUIRED  # authServer, from the file
    trusting = parse_sink_options({"namesrv": "h:1", "tls": "true"}).connection.ssl_context()
    assert trusting is not None and trusting.verify_mode is ssl.CERT_NONE  # Apache's test mode
