"""The project's Admin on one set-up of each kind: brokers, topics (create, status, delete), consumer
progress.

Brokers apply a topic change at once and tell the NameServer a moment later, so route checks wait for the
state to converge (:func:`~tests.integration.clusters.probe.eventually`) instead of sleeping.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from admin import Admin, ResetMethod, TopicNotFoundError, TopicStatus
from consumer import ConsumeFromWhere, ConsumerConfig, PullConsumer, PushConsumer
from consumer.testing import Received
from producer import Message, Producer
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.message import MessageExt
from tests.integration.clusters.fixture import on_representative_setups
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.probe import eventually
from tests.integration.clusters.topics import create_on_every_broker

#: Admin's requests are the same on every set-up; what varies is how the servers answer (theirs,
#: ours, both kinds in one cluster), which these set-ups cover; the compatibility matrix meets all of them.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("scenario_budget"),
    on_representative_setups(),
]

CONVERGE_S = 10.0


def queue_counts(route: TopicRouteData) -> list[tuple[str | None, int | None, int | None]]:
    return [(q.broker_name, q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas]


async def test_brokers_and_broker_config(cluster: Cluster) -> None:
    async with Admin(cluster.namesrv) as admin:
        masters = await admin.brokers(cluster.cluster_name, masters_only=True)
        info = await admin.cluster_info()
        configs = {master.addr: await admin.broker_config(master.addr) for master in masters}
    assert sorted((m.cluster, m.broker_name, m.broker_id, m.addr) for m in masters) == sorted(
        (cluster.cluster_name, b.name, 0, b.addr) for b in cluster.brokers
    )
    assert set(info.cluster_addr_table[cluster.cluster_name]) == cluster.broker_names
    for broker in cluster.brokers:
        config = configs[broker.addr]
        assert config["brokerName"] == broker.name
        assert config["brokerClusterName"] == cluster.cluster_name
        assert config["listenPort"] == broker.addr.rsplit(":", 1)[1]
        assert config["autoCreateTopicEnable"] == "true"


async def test_create_send_status_delete_topic(cluster: Cluster) -> None:
    topic = unique_name("AdminTopic")
    async with Admin(cluster.namesrv) as admin:
        written = await admin.create_topic(
            topic, cluster=cluster.cluster_name, read_queue_nums=6, write_queue_nums=6
        )
        assert sorted(written) == sorted(cluster.broker_addrs)
        route = await eventually(
            lambda: admin.topic_route(topic),
            lambda r: sorted(queue_counts(r)) == sorted((b.name, 6, 6) for b in cluster.brokers),
            timeout_s=CONVERGE_S,
            what=f"route of {topic} with 6 queues",
            retry_on=(TopicNotFoundError,),
        )
        assert sorted(b.master_addr() or "" for b in route.broker_datas) == sorted(cluster.broker_addrs)
        assert topic in await admin.topic_list()

        async with Producer(unique_name("pg"), cluster.namesrv) as producer:
            for i in range(12):
                await producer.send(Message(topic, f"status {i}".encode()))

        def counted(status: TopicStatus) -> bool:
            return sum(q.max_offset - q.min_offset for q in status.queues) == 12

        status = await eventually(
            lambda: admin.topic_status(topic), counted, timeout_s=CONVERGE_S, what=f"12 messages in {topic}"
        )
        assert sorted(q.queue_id for q in status.queues) == sorted(list(range(6)) * len(cluster.brokers))
        assert {q.broker_name for q in status.queues} == cluster.broker_names

        deleted = await admin.delete_topic(topic, cluster=cluster.cluster_name)
        assert deleted.topic == topic and sorted(deleted.brokers) == sorted(cluster.broker_addrs)
        assert deleted.namesrvs == (cluster.namesrv,)
        with pytest.raises(TopicNotFoundError):
            await admin.topic_route(topic)
        assert topic not in await admin.topic_list()


async def test_consumer_progress_after_a_group_has_read(cluster: Cluster) -> None:
    topic = unique_name("Progress")
    group = unique_name("cg")
    async with Producer(unique_name("pg"), cluster.namesrv) as producer:
        for i in range(10):
            await producer.send(Message(topic, f"progress {i}".encode()))
    read: list[MessageExt] = []
    consumer = PullConsumer(group, cluster.namesrv, consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic)
    async with consumer:

        async def poll_more() -> int:
            read.extend(await consumer.poll(timeout=0.5))
            return len(read)

        await eventually(poll_more, lambda n: n >= 10, timeout_s=20, what=f"group {group} reads 10 messages")
        await consumer.commit()
    async with Admin(cluster.namesrv) as admin:
        progress = await eventually(
            lambda: admin.consumer_progress(group, topic),
            lambda p: p.total_lag == 0 and sum(q.consumer_offset for q in p.queues) == 10,
            timeout_s=CONVERGE_S,
            what=f"group {group} caught up on {topic}",
        )
    assert sorted({m.body for m in read}) == sorted(f"progress {i}".encode() for i in range(10))
    assert progress.group == group
    assert {q.topic for q in progress.queues} == {topic}
    assert sum(q.broker_offset for q in progress.queues) == 10


async def test_a_drained_broker_is_routed_read_only(cluster: Cluster) -> None:
    """``updateBrokerConfig brokerPermission=4`` is how operators drain a broker: every topic of it is routed
    read-only, so producers send elsewhere, and it is routed as before once the permission is back."""
    topic = await create_on_every_broker(cluster, "Drain")
    # The project's broker where there is one (Apache's are drained in the clusters that have only theirs).
    drained = next((b for b in cluster.brokers if b.kind == "python"), cluster.brokers[0])

    def perms(route: TopicRouteData) -> dict[str, int | None]:
        return {str(q.broker_name): q.perm for q in route.queue_datas}

    normal = {b.name: 6 for b in cluster.brokers}
    async with Admin(cluster.namesrv) as admin:
        try:
            await admin.update_broker_config(drained.addr, {"brokerPermission": "4"})
            await eventually(
                lambda: admin.topic_route(topic),
                lambda r: perms(r) == {**normal, drained.name: 4},
                timeout_s=CONVERGE_S,
                what=f"{topic} routed read-only on {drained.name}",
            )
            others = cluster.broker_names - {drained.name}
            if others:
                async with Producer(unique_name("pg"), cluster.namesrv) as producer:
                    sent = [await producer.send(Message(topic, f"drain {i}".encode())) for i in range(8)]
                assert {r.message_queue.broker_name for r in sent} == others
        finally:
            await admin.update_broker_config(drained.addr, {"brokerPermission": "6"})
        await eventually(
            lambda: admin.topic_route(topic),
            lambda r: perms(r) == normal,
            timeout_s=CONVERGE_S,
            what=f"{topic} routed read-write again on {drained.name}",
        )


async def test_an_online_group_reset_by_time_reads_again(cluster: Cluster) -> None:
    """``resetOffsetByTime`` with the group online: every broker works the offsets out and tells the member
    (RESET_CONSUMER_CLIENT_OFFSET), which reads the topic again from the start. An Apache 5.x broker keeps
    the reset to itself instead and answers the member's next pull from the new offset: a pull it holds
    (long polling) puts that off, so the member's pulls are held 1 s, not the 15 s of Java's default
    (every 5.x set-up waited them out, a minute of CI)."""
    topic = await create_on_every_broker(cluster, "Replay")
    group = unique_name("cg")
    async with Admin(cluster.namesrv) as admin:
        route = await admin.topic_route(topic)
        queues = sorted((q.broker_name, i) for q in route.queue_datas for i in range(q.write_queue_nums or 0))
        # Every queue gets messages, so the group commits on each (Apache refuses a reset where it has not).
        bodies = [f"replay {i}".encode() for i in range(2 * len(queues))]
        before = int(time.time() * 1000) - 60_000
        async with Producer(unique_name("pg"), cluster.namesrv) as producer:
            sent = [await producer.send(Message(topic, body)) for body in bodies]
        assert sorted({(r.message_queue.broker_name, r.message_queue.queue_id) for r in sent}) == queues

        received = Received()
        consumer = PushConsumer(
            group,
            cluster.namesrv,
            consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            config=ConsumerConfig(persist_offset_interval_ms=200, broker_suspend_max_ms=1000),
        )
        consumer.subscribe(topic)
        consumer.register_listener(received.handler("member"))
        await consumer.start()
        try:
            await eventually(
                lambda: admin.consumer_progress(group, topic),
                lambda p: (
                    len(received.deliveries) >= len(bodies)
                    and sum(q.consumer_offset for q in p.queues) == len(bodies)
                ),
                timeout_s=CONVERGE_S * 3,
                what=f"group {group} read and committed {topic}",
            )
            rows = await admin.reset_offset_by_time(group, topic, before)
            assert {row.method for row in rows} == {ResetMethod.BROKER}
            assert sorted((row.broker_name, row.queue_id, row.new_offset) for row in rows) == [
                (name, queue_id, 0) for name, queue_id in queues
            ]

            async def read_twice() -> int:
                seen = Counter(received.bodies())
                return sum(1 for body in bodies if seen[body] >= 2)

            await eventually(
                read_twice, lambda n: n == len(bodies), timeout_s=CONVERGE_S * 3, what="a second reading"
            )
        finally:
            await consumer.shutdown()
