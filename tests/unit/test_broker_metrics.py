"""The broker's /metrics: Apache's names, types and labels, and figures that follow sends and pulls."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker.broker import Broker
from broker.testing import BrokerClient, running_broker
from rocketmq_wire import ResponseCode

TOPIC = "MetricsTopic"
GROUP = "metrics-group"
METRICS = {"metrics_exporter_type": "PROM", "metrics_prom_exporter_port": 0}
COMMON = {"cluster", "node_id", "node_type", "otel_scope_name"}


async def scrape(
    broker: Broker,
) -> tuple[str, dict[str, tuple[str, list[tuple[str, dict[str, str], float]]]]]:
    """The exposition text and, per family, its type and samples."""
    assert broker.metrics is not None
    url = f"http://127.0.0.1:{broker.metrics.port}/metrics"
    text = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read().decode())
    families = {
        family.name: (family.type, [(s.name, s.labels, s.value) for s in family.samples])
        for family in text_string_to_metric_families(text)
    }
    return text, families


def value(
    families: dict[str, tuple[str, list[tuple[str, dict[str, str], float]]]], sample: str, **labels: str
) -> float:
    found = [
        v
        for family in families.values()
        for name, have, v in family[1]
        if name == sample and all(have.get(k) == want for k, want in labels.items())
    ]
    assert len(found) == 1, f"{sample} {labels}: {found}"
    return found[0]


async def test_metrics_are_off_by_default(tmp_path: Path) -> None:
    async with running_broker(tmp_path / "store") as broker:
        assert broker.metrics is None


async def test_sends_and_pulls_move_apache_named_metrics(tmp_path: Path) -> None:
    async with running_broker(tmp_path / "store", **METRICS) as broker:
        async with BrokerClient(broker.address) as client:
            assert (await client.create_topic(TOPIC, queues=1)).code == ResponseCode.SUCCESS
            _, before = await scrape(broker)
            assert not [
                s for s in before.get("rocketmq_messages_in", ("", []))[1] if s[1].get("topic") == TOPIC
            ]
            for index in range(5):
                answer = await client.send(TOPIC, b"body-%d" % index)
                assert answer.code == ResponseCode.SUCCESS
            broker.parts.metadata.offsets.commit_offset(GROUP, TOPIC, 0, 0)
            text, after = await scrape(broker)
            assert "# TYPE rocketmq_messages_in_total counter" in text
            assert value(after, "rocketmq_messages_in_total", topic=TOPIC, message_type="normal") == 5
            assert value(after, "rocketmq_throughput_in_total", topic=TOPIC) > 5 * len(b"body-0")
            assert value(after, "rocketmq_message_size_count", topic=TOPIC) == 5
            assert value(after, "rocketmq_message_size_bucket", topic=TOPIC, le="1024.0") == 5
            assert value(after, "rocketmq_consumer_lag_messages", consumer_group=GROUP, topic=TOPIC) == 5
            assert value(after, "rocketmq_consumer_ready_messages", consumer_group=GROUP, topic=TOPIC) == 5
            assert value(after, "rocketmq_consumer_lag_latency_milliseconds", consumer_group=GROUP) >= 0

            pulled = await client.pull(GROUP, TOPIC, 0, 0, max_nums=2)
            assert pulled.code == ResponseCode.SUCCESS
            _, later = await scrape(broker)
            assert value(later, "rocketmq_messages_out_total", consumer_group=GROUP, topic=TOPIC) == 2
            assert value(later, "rocketmq_consumer_inflight_messages", consumer_group=GROUP) == 2
            assert value(later, "rocketmq_consumer_ready_messages", consumer_group=GROUP) == 3
            assert value(later, "rocketmq_consumer_lag_messages", consumer_group=GROUP) == 5
            broker.parts.metadata.offsets.commit_offset(GROUP, TOPIC, 0, 2)
            _, committed = await scrape(broker)
            assert value(committed, "rocketmq_consumer_lag_messages", consumer_group=GROUP) == 3
            assert value(committed, "rocketmq_consumer_inflight_messages", consumer_group=GROUP) == 0

            # Apache's types, and every series carries the common labels, as its exporter writes them.
            assert later["rocketmq_message_size"][0] == "histogram"
            assert later["rocketmq_consumer_lag_messages"][0] == "gauge"
            assert value(later, "rocketmq_broker_permission") == 6
            assert value(later, "target_info") == 1
            for name, (_, samples) in later.items():
                if name != "target_info":
                    assert all(COMMON <= set(labels) for _, labels, _ in samples), name
            assert value(later, "rocketmq_broker_permission", otel_scope_name="broker-meter") == 6


async def test_two_brokers_in_one_process_export_their_own(tmp_path: Path) -> None:
    async with (
        running_broker(tmp_path / "a", broker_name="broker-a", **METRICS) as first,
        running_broker(tmp_path / "b", broker_name="broker-b", **METRICS) as second,
    ):
        async with BrokerClient(first.address) as client:
            await client.create_topic(TOPIC, queues=1)
            assert (await client.send(TOPIC, b"x")).code == ResponseCode.SUCCESS
        _, a = await scrape(first)
        _, b = await scrape(second)
        assert value(a, "rocketmq_messages_in_total", topic=TOPIC, node_id="broker-a") == 1
        assert not [s for s in b.get("rocketmq_messages_in", ("", []))[1] if s[1].get("topic") == TOPIC]
        assert value(b, "rocketmq_broker_permission", node_id="broker-b") == 6


async def test_nameserver_exports_live_brokers(tmp_path: Path) -> None:
    from nameserver import NameServer, NamesrvConfig

    config = NamesrvConfig(metrics_exporter_type="PROM", metrics_prom_exporter_port=0)
    async with NameServer("127.0.0.1", 0, config=config) as namesrv:
        assert namesrv.metrics is not None
        url = f"http://127.0.0.1:{namesrv.metrics.port}/metrics"
        read = lambda: urllib.request.urlopen(url, timeout=5).read().decode()  # noqa: E731
        before = await asyncio.to_thread(read)
        assert "rocketmq_brokers{" not in before
        async with running_broker(tmp_path / "store", namesrv_addr=namesrv.address, broker_cluster_name="C1"):
            during = await asyncio.to_thread(read)
        families = {f.name: f for f in text_string_to_metric_families(during)}
        [sample] = families["rocketmq_brokers"].samples
        assert sample.labels["cluster"] == "C1" and sample.labels["node_type"] == "namesrv"
        assert sample.value == 1


def test_unknown_exporter_type_is_refused(tmp_path: Path) -> None:
    from broker.testing import config_for_tests

    config = config_for_tests(tmp_path, metrics_exporter_type="GRAFANA")
    with pytest.raises(ValueError, match="metricsExporterType"):
        config.validate()
    config_for_tests(tmp_path, metrics_exporter_type="2").validate()  # Apache also takes the ordinal


async def test_sends_past_the_retry_limit_count_as_sent_to_dlq(tmp_path: Path) -> None:
    retry_topic = f"%RETRY%{GROUP}"
    async with running_broker(tmp_path / "store", **METRICS) as broker:
        async with BrokerClient(broker.address) as client:
            await client.create_topic(retry_topic, queues=1)
            for times in (0, 3, 3):
                answer = await client.send(retry_topic, b"x", reconsume_times=times, max_reconsume_times=2)
                assert answer.code == ResponseCode.SUCCESS
        _, families = await scrape(broker)
        dead = value(families, "rocketmq_send_to_dlq_messages_total", topic=retry_topic)
        assert dead == 2
        assert "test-producer" == next(
            labels["consumer_group"]
            for name, labels, _ in families["rocketmq_send_to_dlq_messages"][1]
            if name == "rocketmq_send_to_dlq_messages_total"
        )
