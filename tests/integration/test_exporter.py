"""``rmq exporter``'s reading against one cluster of each kind, and both Apache lines: after sends and a
group left with N unconsumed, ``rocketmq_group_diff`` says N with the exporter's label keys, and the broker
runtime families are filled from each master."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from admin import Admin
from cli.exporter_run import Exporter
from producer import Message, Producer
from rocketmq_wire.bodies import SubscriptionGroupConfig
from tests.integration.clusters.fixture import representative_setups
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.probe import eventually
from tests.integration.clusters.topics import create_on_every_broker

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("scenario_budget")]

SETUPS = representative_setups("binaries-5.5.0")

SENT = 6


def _samples(text: bytes, name: str) -> list[tuple[dict[str, str], float]]:
    return [
        (dict(s.labels), s.value)
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
        if s.name == name
    ]


@pytest.mark.parametrize("cluster", SETUPS, ids=[s.id for s in SETUPS], indirect=True)
async def test_group_diff_and_broker_runtime_after_sends(cluster: Cluster) -> None:
    topic = await create_on_every_broker(cluster, "ExporterTopic", queues=2)
    group = unique_name("ExporterGroup")
    async with Admin(cluster.namesrv) as admin:
        await admin.update_subscription_group(
            SubscriptionGroupConfig(group_name=group), cluster=cluster.cluster_name
        )
        async with Producer(unique_name("ExporterProducer"), cluster.namesrv) as producer:
            for i in range(SENT):
                await producer.send(Message(topic, f"exported {i}".encode()))
        status = await admin.topic_status(topic)
        for queue in status.queues:
            await admin.update_consumer_offset(group, topic, queue.queue_id, 0, broker_name=queue.broker_name)

        exporter = Exporter()

        async def exposition() -> bytes:
            await exporter.refresh(admin)
            return generate_latest(exporter.registry)

        def lag_is_sent(text: bytes) -> bool:
            return any(
                labels.get("group") == group and labels.get("topic") == topic and value == SENT
                for labels, value in _samples(text, "rocketmq_group_diff")
            )

        text = await eventually(exposition, lag_is_sent, timeout_s=10.0, what=f"{group} lagging {SENT}")

    [(labels, _)] = [s for s in _samples(text, "rocketmq_group_diff") if s[0]["group"] == group]
    assert set(labels) == {"group", "topic", "countOfOnlineConsumers", "msgModel"}
    assert labels["countOfOnlineConsumers"] == "0"
    offsets = [v for labels, v in _samples(text, "rocketmq_producer_offset") if labels["topic"] == topic]
    assert sum(offsets) == SENT
    runtime = _samples(text, "rocketmq_brokeruntime_msg_put_total_today_now")
    assert {labels["brokerIP"] for labels, _ in runtime} >= set(cluster.broker_addrs)
    assert all(
        set(labels) == {"cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version"}
        for labels, _ in runtime
    )
