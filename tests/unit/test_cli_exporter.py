"""``rmq exporter`` against the project's broker: the exposition after sends, a group's lag."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from admin import Admin, BlockingAdmin
from admin.errors import AdminError
from admin.snapshot import ClusterSnapshot, GroupTopicProgress
from cli.exporter_metrics import SnapshotCollector
from cli.exporter_run import Exporter
from cli.local_cluster import LocalCluster, LocalClusterSettings
from producer import Producer
from rocketmq_wire.bodies import SubscriptionGroupConfig
from rocketmq_wire.message import Message
from spark_connector.testing import LocalCluster as SyncLocalCluster

TOPIC = "ExporterTopic"
GROUP = "ExporterGroup"


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(LocalClusterSettings(tmp_path / "store")) as cluster:
        yield cluster


async def _send(local: LocalCluster, admin: Admin, count: int) -> dict[int, int]:
    await admin.create_topic(TOPIC, cluster="DefaultCluster", read_queue_nums=2, write_queue_nums=2)

    async def routed() -> bool:
        try:
            await admin.topic_route(TOPIC)
        except AdminError:
            return False
        return True

    await local.wait_for_route(routed)
    per_queue = {0: 0, 1: 0}
    async with Producer("ExporterProducer", local.namesrv_address) as producer:
        for i in range(count):
            result = await producer.send(Message(TOPIC, f"m{i}".encode()))
            per_queue[result.message_queue.queue_id] += 1
    return per_queue


def _samples(text: bytes, name: str) -> list[tuple[dict[str, str], float]]:
    return [
        (dict(s.labels), s.value)
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
        if s.name == name
    ]


async def test_group_diff_is_the_unconsumed_count_with_the_exporters_label_keys(local: LocalCluster) -> None:
    async with Admin(local.namesrv_address) as admin:
        per_queue = await _send(local, admin, 9)
        await admin.update_subscription_group(
            SubscriptionGroupConfig(group_name=GROUP), cluster="DefaultCluster"
        )
        # The group consumed 2 messages of queue 0 and none of queue 1: 7 are left.
        local.broker.consumer_offsets.commit_offset(GROUP, TOPIC, 0, 2)
        local.broker.consumer_offsets.commit_offset(GROUP, TOPIC, 1, 0)
        exporter = Exporter()
        assert generate_latest(exporter.registry) == b""  # nothing read yet: nothing served
        await exporter.refresh(admin)
    text = generate_latest(exporter.registry)

    [(labels, value)] = _samples(text, "rocketmq_group_diff")
    assert set(labels) == {"group", "topic", "countOfOnlineConsumers", "msgModel"}
    assert (labels["group"], labels["topic"], labels["countOfOnlineConsumers"]) == (GROUP, TOPIC, "0")
    assert value == sum(per_queue.values()) - 2

    [(labels, value)] = _samples(text, "rocketmq_producer_offset")
    assert labels == {"cluster": "DefaultCluster", "broker": "broker-a", "topic": TOPIC}
    assert value == 9

    [(labels, value)] = _samples(text, "rocketmq_group_consume_total_offset")
    assert set(labels) == {"cluster", "broker", "topic", "group"}
    assert value == 2

    put_totals = _samples(text, "rocketmq_brokeruntime_msg_put_total_today_now")
    assert [set(labels) for labels, _ in put_totals] == [
        {"cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version"}
    ]
    assert put_totals[0][1] >= 9
    assert "# TYPE rocketmq_group_diff gauge" in text.decode()

    # The broker has not sampled its statistics items yet (it refuses VIEW_BROKER_STATS_DATA with "not
    # exist"): no rate sample rather than a made-up 0.
    assert _samples(text, "rocketmq_producer_tps") == []
    assert _samples(text, "rocketmq_consumer_tps") == []


def test_rates_render_with_the_exporters_label_keys() -> None:
    snapshot = ClusterSnapshot(
        taken_at=0.0,
        brokers=(),
        progress=(),
        failures={},
        elapsed=0.0,
        topic_put_tps={("c", "b", "T"): 2.5},
        group_get_tps={("c", "b", "T", "G"): 1.5},
    )
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: snapshot))
    text = generate_latest(registry)
    assert _samples(text, "rocketmq_producer_tps") == [({"cluster": "c", "broker": "b", "topic": "T"}, 2.5)]
    assert _samples(text, "rocketmq_consumer_tps") == [
        ({"cluster": "c", "broker": "b", "topic": "T", "group": "G"}, 1.5)
    ]


async def test_two_exporters_keep_their_own_registries(local: LocalCluster) -> None:
    async with Admin(local.namesrv_address) as admin:
        first = Exporter()
        await first.refresh(admin)
    second = Exporter()
    assert generate_latest(second.registry) == b""
    assert b"rocketmq_broker_tps" in generate_latest(first.registry)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_rmq_exporter_serves_metrics_over_http_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    with SyncLocalCluster(tmp_path / "store") as local:
        local.create_topic(TOPIC, queues=2)
        local.send([Message(TOPIC, f"m{i}".encode()) for i in range(5)])
        with BlockingAdmin(local.namesrv_address) as admin:
            admin.update_subscription_group(
                SubscriptionGroupConfig(group_name=GROUP), cluster="DefaultCluster"
            )
            admin.update_consumer_offset(GROUP, TOPIC, 0, 0)
            admin.update_consumer_offset(GROUP, TOPIC, 1, 0)
        port = _free_port()
        rmq = Path(sys.executable).with_name("rmq")
        process = subprocess.Popen(
            [str(rmq), "exporter", "-n", local.namesrv_address, "--host", "127.0.0.1", "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            body = b""
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and b"rocketmq_group_diff{" not in body:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
                        body = answer.read()
                except OSError:
                    time.sleep(0.2)
            [(labels, value)] = _samples(body, "rocketmq_group_diff")
            assert (labels["group"], labels["topic"], value) == (GROUP, TOPIC, 5)
        finally:
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=20)
        assert process.returncode == 0, stderr.decode()


def test_rmq_exporter_without_a_namesrv_is_one_readable_line() -> None:
    rmq = Path(sys.executable).with_name("rmq")
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    done = subprocess.run([str(rmq), "exporter"], capture_output=True, text=True, env=env, timeout=30)
    assert done.returncode != 0
    assert done.stderr.strip().count("\n") == 0 and "NameServer" in done.stderr, done.stderr


def test_retry_and_dead_letter_lag_go_to_their_own_families() -> None:
    def progress(topic: str, lag: int) -> GroupTopicProgress:
        return GroupTopicProgress("c", "b", "G", topic, 10, 10 - lag, 0.0, 0)

    snapshot = ClusterSnapshot(
        taken_at=0.0,
        brokers=(),
        progress=(progress("T", 4), progress("%RETRY%G", 3), progress("%DLQ%G", 2)),
        failures={},
        elapsed=0.0,
        members={"G": (2, "CLUSTERING")},
    )
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: snapshot))
    text = generate_latest(registry)
    online = {"countOfOnlineConsumers": "2", "msgModel": "CLUSTERING", "group": "G"}
    assert _samples(text, "rocketmq_group_diff") == [({**online, "topic": "T"}, 4)]
    assert _samples(text, "rocketmq_group_retrydiff") == [({**online, "topic": "%RETRY%G"}, 3)]
    assert _samples(text, "rocketmq_group_dlqdiff") == [({**online, "topic": "%DLQ%G"}, 2)]
