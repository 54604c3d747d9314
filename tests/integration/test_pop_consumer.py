"""The project's POP consumer (:class:`consumer.SimpleConsumer`) on Apache's 5.x brokers, sharing a group
with Apache's Java push consumer in POP mode; and the clear refusal a 4.x broker gets.

One group is switched to POP with the project's admin (``Admin.set_consume_mode``, what mqadmin's
``setConsumeMode`` does) and read back (GET_ALL_MESSAGE_REQUEST_MODE). The project's consumer receives first
and leaves a few messages unacknowledged; then Apache's push consumer joins, pops from the same queues, and
the project's consumer goes on. In the end every message was acknowledged, none was delivered to both
members unless the project's consumer had let its invisible time run out, and each of those came back one
delivery later. A second group shows the retry limit: a message never acknowledged is delivered
``max_delivery_attempts`` times, then moved to the group's dead-letter topic, where Apache's broker has it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from admin import Admin
from consumer import BrokerVersionError, SimpleConsumer
from producer import Message, Producer
from rocketmq_wire.bodies.pop import MessageRequestMode
from rocketmq_wire.message import MessageExt
from rocketmq_wire.topics import dlq_topic
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters.fixture import PROVIDERS
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import ReadBackError, read_topic
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.cpp_peer.runner import ReceivedMessage
from tests.integration.java_peer.fixtures import JavaClientFactory

pytestmark = pytest.mark.integration


def _version(release: ApacheRelease | None) -> tuple[int, ...]:
    return tuple(int(part) for part in release.version.split(".")) if release is not None else (0,)


POP_SETUPS = [s for s in PROVIDERS if s.family == "binaries" and _version(s.release) >= (5,)]
OLD_SETUPS = [s for s in PROVIDERS if s.family == "binaries" and (4,) <= _version(s.release) < (5,)]

FIRST_BATCH = 20
SECOND_BATCH = 40
#: What the project's consumer receives before Java's joins, and how many of those it leaves unacknowledged.
RECEIVED_ALONE = 10
LEFT_UNACKED = 3
INVISIBLE_S = 8.0
DEADLINE_S = 120.0


def _release(cluster: Cluster) -> ApacheRelease:
    spec = next(s for s in PROVIDERS if s.id == cluster.provider)
    assert spec.release is not None
    return spec.release


async def _send(namesrv: str, topic: str, first: int, count: int) -> None:
    async with Producer(unique_name("PopPg"), namesrv) as producer:
        for i in range(first, first + count):
            await producer.send(Message(topic, f"pop {i}".encode(), keys=[f"pop-{i}"]))


def _java_acknowledged(events: list[dict[str, Any]]) -> list[ReceivedMessage]:
    return [
        ReceivedMessage.from_event(e)
        for e in events
        if e.get("event") == "message" and e.get("consume_status") == "CONSUME_SUCCESS"
    ]


@pytest.mark.parametrize("cluster", POP_SETUPS, ids=[s.id for s in POP_SETUPS], indirect=True)
async def test_the_projects_pop_consumer_shares_a_group_with_javas(
    cluster: Cluster, java_client: JavaClientFactory
) -> None:
    topic = await create_on_every_broker(cluster, "PopShare", queues=4)
    group = unique_name("PopShareCg")
    async with Admin(cluster.namesrv) as admin:
        written = await admin.set_consume_mode(topic, group, "POP", cluster=cluster.cluster_name)
        assert sorted(written) == sorted(b.addr for b in cluster.brokers)
        for broker in cluster.brokers:
            setting = (await admin.consume_modes(broker.addr))[topic][group]
            assert (setting.mode, setting.topic, setting.consumer_group) == (
                MessageRequestMode.POP,
                topic,
                group,
            )
    expected = {f"pop {i}".encode() for i in range(FIRST_BATCH + SECOND_BATCH)}
    await _send(cluster.namesrv, topic, 0, FIRST_BATCH)

    ours_received: list[MessageExt] = []
    ours_acked: dict[bytes, MessageExt] = {}
    unacked: set[bytes] = set()
    async with SimpleConsumer(
        group, cluster.namesrv, consume_from="FIRST_OFFSET", invisible_duration=INVISIBLE_S, await_duration=2
    ) as consumer:
        consumer.subscribe(topic)

        async def take(wanted: int) -> None:
            got = await consumer.receive(min(wanted, 16))
            ours_received.extend(got)
            done = []
            for message in got:
                if (
                    len(unacked) < LEFT_UNACKED
                    and message.body not in unacked
                    and message.reconsume_times == 0
                ):
                    unacked.add(message.body)  # its invisible time will run out: it comes back
                else:
                    done.append(message)
            if done:
                await consumer.ack(done)
                ours_acked.update((m.body, m) for m in done)

        deadline = time.monotonic() + DEADLINE_S
        while len(ours_received) < RECEIVED_ALONE and time.monotonic() < deadline:
            await take(RECEIVED_ALONE - len(ours_received))
        assert len(ours_received) >= RECEIVED_ALONE and len(unacked) == LEFT_UNACKED

        java = java_client(_release(cluster), "JSON")
        events: list[dict[str, Any]] = []
        extra = ["--server-rebalance", "--from", "first"]
        with java.start_push_consumer(
            cluster.namesrv, group, topic, len(expected), extra=extra, timeout=DEADLINE_S + 30
        ) as peer:
            peer.wait_for("ready", timeout=60)
            await _send(cluster.namesrv, topic, FIRST_BATCH, SECOND_BATCH)
            # Java's member takes its share first, then both go on until every message is acknowledged.
            while time.monotonic() < deadline:
                events += await asyncio.to_thread(lambda: list(peer.events(0.5)))
                java_acked = {m.body for m in _java_acknowledged(events)}
                if java_acked and (java_acked | set(ours_acked)) >= expected:
                    break
                if java_acked:
                    await take(16)
            await asyncio.sleep(1)  # Java acknowledges after its listener returns: let the last ones go out
            result = peer.finish(timeout=0)
    java_messages = _java_acknowledged(result.events)
    java_bodies = [m.body for m in java_messages]
    # For the record (pytest -s shows it).
    print(f"\n{cluster.provider}: Java acknowledged {len(java_bodies)}, the project {len(ours_acked)}")
    assert set(java_bodies) | set(ours_acked) == expected, "every message acknowledged by one member"
    assert java_bodies and ours_acked, "both members had a share"
    assert len(java_bodies) == len(set(java_bodies)), "Java's member got no message twice"
    both = {m.body for m in ours_received} & set(java_bodies)
    assert both <= unacked, "only messages whose invisible time ran out were delivered to both"
    assert not set(java_bodies) & set(ours_acked), "no message acknowledged by both"
    for body in unacked:
        again = ours_acked.get(body) or next(m for m in java_messages if m.body == body)
        assert again.reconsume_times >= 1, f"{body!r} came back as a redelivery"


@pytest.mark.parametrize("cluster", POP_SETUPS, ids=[s.id for s in POP_SETUPS], indirect=True)
async def test_past_its_delivery_limit_a_popped_message_lands_in_the_dead_letter_topic(
    cluster: Cluster,
) -> None:
    topic = await create_on_every_broker(cluster, "PopDlq")
    group = unique_name("PopDlqCg")
    await _send(cluster.namesrv, topic, 0, 1)
    deliveries: list[int] = []
    async with SimpleConsumer(
        group,
        cluster.namesrv,
        consume_from="FIRST_OFFSET",
        invisible_duration=2,
        await_duration=2,
        max_delivery_attempts=2,
    ) as consumer:
        consumer.subscribe(topic)
        deadline = time.monotonic() + DEADLINE_S
        # Never acknowledged: delivered twice, then the third pop moves it to the dead-letter topic.
        while len(deliveries) < 2 and time.monotonic() < deadline:
            deliveries += [m.reconsume_times for m in await consumer.receive(4)]
        assert deliveries == [0, 1]
        stored: list[MessageExt] = []
        while not stored:
            assert await consumer.receive(4) == [], "a message past its limit is not handed out"
            try:
                stored = await read_topic(cluster.namesrv, dlq_topic(group), 1, timeout_s=3)
            except ReadBackError:
                if time.monotonic() >= deadline:
                    raise
    assert [m.body for m in stored] == [b"pop 0"]
    assert stored[0].reconsume_times >= 2


@pytest.mark.parametrize("cluster", OLD_SETUPS, ids=[s.id for s in OLD_SETUPS], indirect=True)
async def test_a_4x_broker_is_not_popped_and_the_consumer_is_told_why(cluster: Cluster) -> None:
    topic = await create_on_every_broker(cluster, "PopOld")
    version = "V" + cluster.version.replace(".", "_")
    async with SimpleConsumer(unique_name("PopOldCg"), cluster.namesrv) as consumer:
        consumer.subscribe(topic)
        with pytest.raises(
            BrokerVersionError, match=rf"POP consumption needs a V5_0_0 or later broker; .* {version}"
        ):
            await consumer.receive()
    async with Admin(cluster.namesrv) as admin:
        from admin import BrokerVersionError as AdminVersionError

        with pytest.raises(AdminVersionError, match=rf"needs a V5_0_0 or later broker; .* {version}"):
            await admin.set_consume_mode(topic, unique_name("PopOldCg"), "POP", cluster=cluster.cluster_name)
