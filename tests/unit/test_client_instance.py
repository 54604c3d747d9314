"""The client instance (``producer.instance``): one per event loop and client id, shared as Java's
``MQClientInstance`` is by the producers and consumers of a client id.

Producers run against the producer fakes (which record the connection every request came on), consumers
against the consumer fakes (which can ask a client directly, as a broker relays requests), and a producer
and a push consumer together against the project's NameServer and Broker in-process.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from admin import Admin, TopicNotFoundError
from cli.local_cluster import LocalCluster, LocalClusterSettings
from client.heartbeat import heartbeat_body
from client.instance import instances
from consumer import ConsumerConfig, ConsumerStateError, ConsumeStatus, PullConsumer, PushConsumer
from producer import (
    ClientInstance,
    DuplicateGroupError,
    LocalTransactionState,
    Message,
    Producer,
    ProducerConfig,
    SendStatus,
    TransactionProducer,
)
from rocketmq_wire.bodies.heartbeat import HeartbeatData
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.headers.consumer import GetConsumerRunningInfoRequestHeader
from rocketmq_wire.message import MessageExt
from tests.unit.consumer_fakes import FakeCluster
from tests.unit.producer_fakes import Cluster

TOPIC = "SharedTopic"
_names = itertools.count()
WAIT_S = 15.0


def unique_name() -> str:
    return f"shared-{next(_names)}"


def producer_config(instance_name: str) -> ProducerConfig:
    return ProducerConfig(client_ip="127.0.0.1", instance_name=instance_name)


def instance_of(producer: Producer) -> ClientInstance:
    found = producer.client_instance
    assert found is not None
    return found


# -- producers -------------------------------------------------------------------------------------------


async def test_two_producers_with_one_instance_name_share_a_connection_and_one_heartbeat() -> None:
    name = unique_name()
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with (
            cluster.producer("GroupA", config=producer_config(name)) as a,
            cluster.producer("GroupB", config=producer_config(name)) as b,
        ):
            assert instance_of(a) is instance_of(b)
            assert a.client_id == b.client_id == f"127.0.0.1@{name}"
            assert (await a.send(Message(TOPIC, b"a"))).status is SendStatus.SEND_OK
            assert (await b.send(Message(TOPIC, b"b"))).status is SendStatus.SEND_OK
            assert await b.send_heartbeats() == 1
            beat = broker.of(RequestCode.HEART_BEAT)[-1]
            connections = {id(r.conn) for r in broker.received}
    assert len(connections) == 1, "both producers' sends and heartbeats came on one connection"
    assert beat.cmd.body.decode() == (
        f'{{"clientID":"127.0.0.1@{name}","consumerDataSet":[],"producerDataSet":'
        '[{"groupName":"CLIENT_INNER_PRODUCER"},{"groupName":"GroupA"},{"groupName":"GroupB"}]}'
    )


async def test_the_heartbeat_of_an_instance_with_one_producer_is_the_per_producer_heartbeat() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer("Lonely", config=producer_config(unique_name())) as producer:
            await producer.fetch_publish_queues(TOPIC)
            await producer.send_heartbeats()
            body = cluster.brokers["broker-a"].of(RequestCode.HEART_BEAT)[-1].cmd.body
    assert body == heartbeat_body(producer.client_id, ["Lonely"], [], producer.config.version)


async def test_different_instance_names_get_different_instances_and_connections() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with (
            cluster.producer("Same", config=producer_config(unique_name())) as a,
            cluster.producer("Same", config=producer_config(unique_name())) as b,
        ):
            assert instance_of(a) is not instance_of(b)
            assert a.client_id != b.client_id
            await a.send(Message(TOPIC, b"a"))
            await b.send(Message(TOPIC, b"b"))
            connections = {id(r.conn) for r in broker.sends()}
    assert len(connections) == 2


async def test_a_second_producer_of_a_group_on_one_instance_is_refused() -> None:
    name = unique_name()
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer("Twice", config=producer_config(name)) as first:
            second = cluster.producer("Twice", config=producer_config(name))
            with pytest.raises(DuplicateGroupError, match=r"group\[Twice\] has been created before"):
                await second.start()
            assert not second.running
            assert (await first.send(Message(TOPIC, b"still fine"))).status is SendStatus.SEND_OK
            assert [m.group for m in instance_of(first).members] == ["Twice"]


async def test_the_instance_closes_only_when_its_last_member_leaves() -> None:
    name = unique_name()
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        a = cluster.producer("FirstOut", config=producer_config(name))
        b = cluster.producer("LastOut", config=producer_config(name))
        await a.start()
        await b.start()
        instance = instance_of(a)
        await a.send(Message(TOPIC, b"a"))
        await a.shutdown()
        assert not instance.closed
        assert instances()[instance.client_id] is instance
        assert [r.fields for r in broker.of(RequestCode.UNREGISTER_CLIENT)] == [
            {"clientID": instance.client_id, "producerGroup": "FirstOut"}
        ]
        # the one left keeps working, and heartbeats now name only its group
        assert (await b.send(Message(TOPIC, b"b"))).status is SendStatus.SEND_OK
        await b.send_heartbeats()
        data = HeartbeatData.from_json(broker.of(RequestCode.HEART_BEAT)[-1].cmd.body)
        assert [p.group_name for p in data.producer_data_set] == ["CLIENT_INNER_PRODUCER", "LastOut"]
        await b.shutdown()
        assert instance.closed
        assert instance.client_id not in instances()
        assert instance.remoting.connections == {}
        assert [r.fields for r in broker.of(RequestCode.UNREGISTER_CLIENT)][1:] == [
            {"clientID": instance.client_id, "producerGroup": "LastOut"},
            {"clientID": instance.client_id, "producerGroup": "CLIENT_INNER_PRODUCER"},
        ]
        # a producer started afterwards with the same name gets a new instance
        async with cluster.producer("FirstOut", config=producer_config(name)) as again:
            assert instance_of(again) is not instance
            assert (await again.send(Message(TOPIC, b"again"))).status is SendStatus.SEND_OK


async def test_instances_are_per_event_loop() -> None:
    name = unique_name()
    async with Cluster() as cluster:
        cluster.route(TOPIC)

        async def in_another_loop() -> tuple[int, SendStatus]:
            async with cluster.producer("OtherLoop", config=producer_config(name)) as other:
                return id(instance_of(other)), (await other.send(Message(TOPIC, b"x"))).status

        async with cluster.producer("ThisLoop", config=producer_config(name)) as here:
            # a producer of the same client id on another loop (another thread) gets its own instance
            # (connections and timers belong to one loop), and leaves this one alone
            other_id, status = await asyncio.to_thread(asyncio.run, in_another_loop())
            assert other_id != id(instance_of(here))
            assert status is SendStatus.SEND_OK
            assert not instance_of(here).closed
            assert (await here.send(Message(TOPIC, b"here"))).status is SendStatus.SEND_OK


async def test_a_transaction_check_reaches_the_producer_of_the_group_that_sent_the_message() -> None:
    name = unique_name()
    checked: dict[str, list[str]] = {"TxA": [], "TxB": []}

    def checker_of(group: str) -> Any:
        def check(message: MessageExt) -> LocalTransactionState:
            checked[group].append(message.body.decode())
            return LocalTransactionState.COMMIT_MESSAGE

        return check

    def unknown(message: Message, transaction_id: str | None, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.UNKNOWN

    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        a = TransactionProducer(
            "TxA", cluster.namesrv, checker=checker_of("TxA"), config=producer_config(name)
        )
        b = TransactionProducer(
            "TxB", cluster.namesrv, checker=checker_of("TxB"), config=producer_config(name)
        )
        async with a, b:
            await a.send_in_transaction(Message(TOPIC, b"from-a"), executor=unknown)
            await b.send_in_transaction(Message(TOPIC, b"from-b"), executor=unknown)
            await broker.wait_for(RequestCode.HEART_BEAT)
            by_body = {stored.body: stored for stored in broker.stored}
            await broker.check_transaction(a.client_id, by_body[b"from-b"])
            await broker.check_transaction(a.client_id, by_body[b"from-a"])
            ends = await broker.wait_for(RequestCode.END_TRANSACTION, 4)
    assert checked == {"TxA": ["from-a"], "TxB": ["from-b"]}
    answers = [e.fields for e in ends if e.fields.get("fromTransactionCheck") == "true"]
    assert sorted((f["producerGroup"], f["commitOrRollback"]) for f in answers) == [
        ("TxA", "8"),
        ("TxB", "8"),
    ]


# -- consumers -------------------------------------------------------------------------------------------


@pytest.fixture
async def fake() -> AsyncIterator[FakeCluster]:
    async with FakeCluster() as cluster:
        yield cluster


def consumer_config(instance_name: str) -> ConsumerConfig:
    return ConsumerConfig(client_ip="127.0.0.1", instance_name=instance_name, await_termination_ms=500)


async def _ignore(messages: list[MessageExt], context: Any) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


def push_consumer(group: str, namesrv: str, instance_name: str) -> PushConsumer:
    push = PushConsumer(group, namesrv, consume_from="FIRST_OFFSET", config=consumer_config(instance_name))
    push.subscribe("T", "*")
    push.register_listener(_ignore)
    return push


async def running_info_group(fake: FakeCluster, client_id: str, group: str) -> str:
    header = GetConsumerRunningInfoRequestHeader(
        consumer_group=group, client_id=client_id, jstack_enable=False
    )
    response = await fake.broker.ask_client(client_id, RequestCode.GET_CONSUMER_RUNNING_INFO, header)
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert b'"consumerGroup":"' + group.encode() + b'"' in response.body
    return group


async def test_push_and_lite_pull_consumers_share_an_instance_and_answer_for_their_own_group(
    fake: FakeCluster,
) -> None:
    fake.topic("T")
    name = unique_name()
    push = push_consumer("PushGroup", fake.namesrv.address, name)
    pull = PullConsumer("PullGroup", fake.namesrv.address, config=consumer_config(name))
    pull.subscribe("T", "*")
    await push.start()
    await pull.start()
    try:
        client_id = push.client_id
        assert pull.client_id == client_id
        await pull.poll(0.1)
        await fake.broker.wait_until(
            lambda: any(
                {c.group_name for c in beat.consumer_data_set} == {"PullGroup", "PushGroup"}
                for beat in fake.broker.heartbeats
            )
        )
        # the broker's relayed requests reach the member of the group they name
        assert await running_info_group(fake, client_id, "PushGroup") == "PushGroup"
        assert await running_info_group(fake, client_id, "PullGroup") == "PullGroup"
        header = GetConsumerRunningInfoRequestHeader(consumer_group="Nobody", client_id=client_id)
        response = await fake.broker.ask_client(client_id, RequestCode.GET_CONSUMER_RUNNING_INFO, header)
        assert response.code == ResponseCode.SYSTEM_ERROR
        # one of them leaves; the other still answers over the same connection
        await push.shutdown()
        assert await running_info_group(fake, client_id, "PullGroup") == "PullGroup"
    finally:
        await push.shutdown()
        await pull.shutdown()


async def test_a_second_consumer_of_a_group_on_one_instance_is_refused(fake: FakeCluster) -> None:
    fake.topic("T")
    name = unique_name()
    first = push_consumer("OnlyOnce", fake.namesrv.address, name)
    second = push_consumer("OnlyOnce", fake.namesrv.address, name)
    await first.start()
    try:
        with pytest.raises(ConsumerStateError, match=r"group\[OnlyOnce\] has been created before"):
            await second.start()
    finally:
        await second.shutdown()
        await first.shutdown()


# -- a producer and a push consumer, against the project's NameServer and Broker -------------------------


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(LocalClusterSettings(tmp_path / "store")) as cluster:
        yield cluster


async def _create_topic(local: LocalCluster, topic: str) -> None:
    async with Admin(local.namesrv_address) as admin:
        await admin.create_topic(
            topic, cluster="DefaultCluster", read_queue_nums=2, write_queue_nums=2, perm=6
        )

        async def routed() -> bool:
            try:
                await admin.topic_route(topic)
            except TopicNotFoundError:
                return False
            return True

        await local.wait_for_route(routed)


async def test_a_producer_and_a_push_consumer_share_an_instance(local: LocalCluster) -> None:
    await _create_topic(local, TOPIC)
    name = unique_name()
    received: asyncio.Queue[bytes] = asyncio.Queue()

    async def handle(messages: list[MessageExt], context: Any) -> ConsumeStatus:
        for message in messages:
            received.put_nowait(message.body)
        return ConsumeStatus.CONSUME_SUCCESS

    producer = Producer("MixedProducer", local.namesrv_address, config=producer_config(name))
    push = PushConsumer(
        "MixedConsumer", local.namesrv_address, consume_from="FIRST_OFFSET", config=consumer_config(name)
    )
    push.subscribe(TOPIC, "*")
    push.register_listener(handle)
    await producer.start()
    await push.start()
    try:
        instance = instance_of(producer)
        assert push.client_id == producer.client_id == instance.client_id
        assert [(m.kind.value, m.group) for m in instance.members] == [
            ("producer", "MixedProducer"),
            ("consumer", "MixedConsumer"),
        ]
        data = HeartbeatData.from_json(instance.heartbeat_body())
        assert [p.group_name for p in data.producer_data_set] == ["CLIENT_INNER_PRODUCER", "MixedProducer"]
        assert [c.group_name for c in data.consumer_data_set] == ["MixedConsumer"]
        await producer.send(Message(TOPIC, b"one"))
        assert await asyncio.wait_for(received.get(), WAIT_S) == b"one"
        # NameServer and broker, each over one connection for both members
        assert set(instance.remoting.connections) == {local.namesrv_address, local.broker_address}
        await producer.shutdown()
        assert not instance.closed
        async with Producer(
            "OtherProducer", local.namesrv_address, config=producer_config(unique_name())
        ) as other:
            await other.send(Message(TOPIC, b"two"))
        assert await asyncio.wait_for(received.get(), WAIT_S) == b"two"
    finally:
        await producer.shutdown()
        await push.shutdown()
    assert instance.closed
