"""Heartbeats, unregistration and the client id."""

from __future__ import annotations

import os
import re

from client.identity import client_id
from producer import Message, ProducerConfig
from rocketmq_wire.codes import RequestCode
from tests.unit.producer_fakes import Cluster

TOPIC = "BeatTopic"


async def test_first_route_to_a_broker_brings_a_heartbeat_with_both_groups() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with cluster.producer("BeatGroup") as producer:
            await producer.send(Message(TOPIC, b"x"))
            (beat,) = await broker.wait_for(RequestCode.HEART_BEAT)
    expected = (
        f'{{"clientID":"{producer.client_id}","consumerDataSet":[],'
        '"producerDataSet":[{"groupName":"BeatGroup"},{"groupName":"CLIENT_INNER_PRODUCER"}]}'
    )
    assert beat.cmd.body.decode() == expected
    assert beat.fields == {}
    assert broker.heartbeats[0].client_id == producer.client_id


async def test_heartbeats_repeat_on_the_timer() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with cluster.producer(config=ProducerConfig(heartbeat_interval_ms=20)) as producer:
            await producer.send(Message(TOPIC, b"x"))
            beats = await broker.wait_for(RequestCode.HEART_BEAT, 4)
    assert {b.cmd.body for b in beats} == {beats[0].cmd.body}


async def test_5x_heartbeat_carries_fingerprint_and_without_sub() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer(config=ProducerConfig(version=479)) as producer:
            assert await producer.send_heartbeats() == 0, "no broker known yet"
            await producer.fetch_publish_queues(TOPIC)
            assert await producer.send_heartbeats() == 1
        body = cluster.brokers["broker-a"].of(RequestCode.HEART_BEAT)[-1].cmd.body.decode()
    assert body.endswith(
        '"heartbeatFingerprint":0,"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"},'
        '{"groupName":"TestGroup"}],"withoutSub":false}'
    )


async def test_shutdown_unregisters_both_groups_from_every_broker() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC)
        producer = cluster.producer("LeavingGroup")
        await producer.start()
        await producer.fetch_publish_queues(TOPIC)
        await producer.shutdown()
        for broker in cluster.brokers.values():
            requests = broker.of(RequestCode.UNREGISTER_CLIENT)
            assert [r.fields for r in requests] == [
                {"clientID": producer.client_id, "producerGroup": "LeavingGroup"},
                {"clientID": producer.client_id, "producerGroup": "CLIENT_INNER_PRODUCER"},
            ]


async def test_client_id_is_ip_at_pid_hash_nanos_and_unique_per_producer() -> None:
    async with Cluster() as cluster:
        async with cluster.producer() as first, cluster.producer() as second:
            ids = (first.client_id, second.client_id)
        config = ProducerConfig(client_ip="10.1.2.3", instance_name="inst")
        async with cluster.producer(config=config) as named:
            assert named.client_id == "10.1.2.3@inst"
    pattern = re.compile(rf"^[0-9a-f.:]+@{os.getpid()}#\d+$")
    assert all(pattern.match(i) for i in ids), ids
    assert ids[0] != ids[1]
    assert client_id("1.2.3.4", "x", "unit") == "1.2.3.4@x@unit"
