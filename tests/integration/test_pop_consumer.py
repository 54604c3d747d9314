"""The project's POP consumers (:class:`consumer.SimpleConsumer`, and :class:`consumer.PushConsumer` in POP
mode) on Apache's 5.x brokers, sharing a group with Apache's Java push consumer in POP mode; and the clear
refusal a 4.x broker gets.

One group is switched to POP with the project's admin (``Admin.set_consume_mode``, what mqadmin's
``setConsumeMode`` does) and read back (GET_ALL_MESSAGE_REQUEST_MODE). The project's simple consumer
receives first and leaves a few messages unacknowledged; then Apache's push consumer joins, and the
project's push consumer with ``client_rebalance=False`` (assigned POP by the broker, as Java's is), which
refuses its first delivery once. All three pop from the same queues. In the end every message was
acknowledged by one member, none was delivered to two unless its invisible time ran out (left unacked, or
refused), and each of those came back one delivery later. A second group shows the retry limit: a message
never acknowledged is delivered ``max_delivery_attempts`` times, then moved to the group's dead-letter
topic, where Apache's broker has it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from admin import Admin
from consumer import (
    BrokerVersionError,
    ConsumeConcurrentlyContext,
    ConsumeStatus,
    PushConsumer,
    SimpleConsumer,
)
from producer import Message, Producer
from rocketmq_wire.bodies.pop import MessageRequestMode
from rocketmq_wire.message import MessageExt
from rocketmq_wire.topics import dlq_topic
from tests.integration.apache.releases import ApacheRelease, releases
from tests.integration.clusters.fixture import PROVIDERS
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import ReadBackError, read_topic
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.cpp_peer.runner import ReceivedMessage
from tests.integration.java_peer.fixtures import JavaClientFactory

pytestmark = pytest.mark.integration


def _version(release: ApacheRelease | None) -> tuple[int, ...]:
    return tuple(int(part) for part in release.version.split(".")) if release is not None else (0,)


#: Apache's 5.x brokers and the project's (which serves POP as Apache 5.5's does).
POP_SETUPS = [
    s for s in PROVIDERS if s.family == "python" or (s.family == "binaries" and _version(s.release) >= (5,))
]
OLD_SETUPS = [s for s in PROVIDERS if s.family == "binaries" and (4,) <= _version(s.release) < (5,)]

FIRST_BATCH = 20
#: Messages sent at a time once every member is there, until each had a share.
ROUND = 10
#: Java's push consumer runs until killed: it is given a count it never reaches.
EXPECTED_MAX = 10_000
#: What the project's consumer receives before Java's joins, and how many of those it leaves unacknowledged.
RECEIVED_ALONE = 10
LEFT_UNACKED = 3
INVISIBLE_S = 8.0
DEADLINE_S = 120.0


def _release(cluster: Cluster) -> ApacheRelease:
    """The Apache release whose Java client joins: the cluster's own, or the newest 5.x for the project's
    broker (it answers as that release)."""
    spec = next(s for s in PROVIDERS if s.id == cluster.provider)
    if spec.release is None:
        return next(r for r in reversed(releases()) if r.major >= 5)
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
    await _send(cluster.namesrv, topic, 0, FIRST_BATCH)
    push_delivered: list[tuple[bytes, int]] = []
    refused: set[bytes] = set()

    async def push_handler(messages: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeStatus:
        for message in messages:
            push_delivered.append((message.body, message.reconsume_times))
        if not refused and messages[0].reconsume_times == 0:
            refused.add(messages[0].body)  # hidden for the first POP delay level (10 s), then back
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    def push_acked() -> set[bytes]:
        counted: set[bytes] = set()
        for body, times in push_delivered:
            if body not in refused or times >= 1:
                counted.add(body)
        return counted

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
            cluster.namesrv, group, topic, EXPECTED_MAX, extra=extra, timeout=DEADLINE_S + 30
        ) as peer:
            peer.wait_for("ready", timeout=60)

            async def java_acked() -> set[bytes]:
                events.extend(await asyncio.to_thread(lambda: list(peer.events(0.5))))
                return {m.body for m in _java_acknowledged(events)}

            while not await java_acked() and time.monotonic() < deadline:
                pass  # Java's member takes its share of the first batch first
            push = PushConsumer(group, cluster.namesrv, consume_from="FIRST_OFFSET", client_rebalance=False)
            push.subscribe(topic)
            push.register_listener(push_handler)
            async with push:
                while not any(q.queue_id == -1 for q in push.assignment()) and time.monotonic() < deadline:
                    await asyncio.sleep(0.2)
                assert {q.topic for q in push.assignment() if q.queue_id == -1} == {topic}, "assigned as POP"
                # Rounds of messages until the project's push consumer had some too; then all three go on
                # until every message is acknowledged.
                sent = FIRST_BATCH
                while (not push_delivered or sent == FIRST_BATCH) and time.monotonic() < deadline:
                    await _send(cluster.namesrv, topic, sent, ROUND)
                    sent += ROUND
                    await asyncio.sleep(1)
                expected = {f"pop {i}".encode() for i in range(sent)}
                while time.monotonic() < deadline:
                    acked = await java_acked() | set(ours_acked) | push_acked()
                    if acked >= expected:
                        break
                    await take(16)
                await asyncio.sleep(1)  # acks go out after the listeners return: let the last ones go
            result = peer.finish(timeout=0)
    java_messages = _java_acknowledged(result.events)
    java_bodies = [m.body for m in java_messages]
    pushed = push_acked()
    # For the record (pytest -s shows it).
    print(
        f"\n{cluster.provider}: {len(expected)} messages; Java acknowledged {len(java_bodies)}, "
        f"the project's simple consumer {len(ours_acked)}, its push consumer {len(pushed)}"
    )
    assert set(java_bodies) | set(ours_acked) | pushed == expected, "every message acknowledged"
    assert java_bodies and ours_acked and pushed, "every member had a share"
    assert len(java_bodies) == len(set(java_bodies)), "Java's member got no message twice"
    came_back = unacked | refused
    both = {m.body for m in ours_received} & set(java_bodies)
    assert both <= came_back, "only messages whose invisible time ran out were delivered to two members"
    assert {body for body, _ in push_delivered} & set(java_bodies) <= came_back
    assert {body for body, _ in push_delivered} & {m.body for m in ours_received} <= came_back
    assert not set(java_bodies) & set(ours_acked), "no message acknowledged by both"
    assert not pushed & (set(java_bodies) | set(ours_acked)), "no message acknowledged twice"
    deliveries = [(m.body, m.reconsume_times) for m in java_messages] + [
        (m.body, m.reconsume_times) for m in ours_acked.values()
    ]
    deliveries += list(push_delivered)
    for body in came_back:
        assert any(b == body and times >= 1 for b, times in deliveries), f"{body!r} came back as a redelivery"


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
