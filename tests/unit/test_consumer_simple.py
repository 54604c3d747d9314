"""The POP consumers against a fake 5.x broker. The simple consumer: receive, ack, batch ack, change of
invisible time, redelivery through the group's POP retry topic, the dead-letter move, long polling, refusals.
The push consumer with ``client_rebalance=False``: it pops what the broker assigns as POP, pulls what it
assigns as PULL, hides refused messages for the next POP delay level; orderly ones keep sharing in the client;
a 4.x broker is refused at start."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from consumer import (
    BrokerVersionError,
    ConsumeConcurrentlyContext,
    ConsumerConfig,
    ConsumeStatus,
    FilterRefusedError,
    MessageQueue,
    PushConsumer,
    SimpleConsumer,
)
from consumer.pop_requests import batch_ack_request, receipt_handle
from rocketmq_wire.bodies.pop import BatchAckMessageRequestBody, MessageRequestMode
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.message import MessageExt
from rocketmq_wire.message import const as props
from rocketmq_wire.pop_extra import ExtraInfo, pop_retry_topic
from tests.unit.pop_fakes import FakePopCluster

TOPIC = "PopTopic"
GROUP = "PopGroup"


def _consumer(cluster: FakePopCluster, **kwargs: object) -> SimpleConsumer:
    options: dict[str, object] = {"consume_from": "FIRST_OFFSET", "await_duration": 0.2} | kwargs
    consumer = SimpleConsumer(GROUP, cluster.namesrv.address, **options)  # type: ignore[arg-type]
    consumer.subscribe(TOPIC)
    return consumer


def _bodies(messages: list[MessageExt]) -> set[bytes]:
    return {m.body for m in messages}


async def _receive_all(consumer: SimpleConsumer, count: int, **kwargs: object) -> list[MessageExt]:
    got: list[MessageExt] = []
    async with asyncio.timeout(10):
        while len(got) < count:
            got += await consumer.receive(32, **kwargs)  # type: ignore[arg-type]
    return got


async def test_received_messages_carry_a_handle_and_once_acked_never_come_back() -> None:
    async with FakePopCluster() as cluster:
        cluster.topic(TOPIC, queues=2)
        cluster.broker.add_messages(TOPIC, 0, [b"a0", b"a1"])
        cluster.broker.add_messages(TOPIC, 1, [b"b0"])
        async with _consumer(cluster, invisible_duration=0.3) as consumer:
            got = await _receive_all(consumer, 3)
            assert _bodies(got) == {b"a0", b"a1", b"b0"}
            for message in got:
                handle = receipt_handle(message)
                assert (handle.queue_id, handle.queue_offset) == (message.queue_id, message.queue_offset)
                assert handle.broker_name == "broker-a" and handle.retry == "0"
                assert message.topic == TOPIC and props.FIRST_POP_TIME in message.properties
            await consumer.ack(got)
            assert cluster.broker.batch_acks == 1  # one BATCH_ACK_MESSAGE: a 5.3.3 broker has it
            assert sorted(cluster.broker.acks) == [(TOPIC, 0, 0), (TOPIC, 0, 1), (TOPIC, 1, 0)]
            await asyncio.sleep(0.4)  # past the invisible time: nothing may reappear
            assert await consumer.receive(32, await_duration=0) == []
        header = cluster.broker.pop_headers[0]
        assert (header.consumer_group, header.topic, header.queue_id, header.init_mode) == (
            GROUP,
            TOPIC,
            -1,
            0,
        )
        assert (header.invisible_time, header.bname, header.exp_type, header.exp) == (
            300,
            "broker-a",
            "TAG",
            "*",
        )


async def test_a_5_0_broker_gets_one_ack_per_message() -> None:
    async with FakePopCluster(MQVersion.value_of("V5_0_0")) as cluster:
        cluster.topic(TOPIC)
        cluster.broker.add_messages(TOPIC, 0, [b"x", b"y"])
        async with _consumer(cluster) as consumer:
            await consumer.ack(await _receive_all(consumer, 2))
        assert cluster.broker.batch_acks == 0 and len(cluster.broker.acks) == 2


async def test_an_unacknowledged_message_comes_back_under_its_topic_one_delivery_later() -> None:
    async with FakePopCluster() as cluster:
        cluster.topic(TOPIC)
        cluster.broker.add_messages(TOPIC, 0, [b"late"])
        async with _consumer(cluster, invisible_duration=0.2) as consumer:
            (first,) = await _receive_all(consumer, 1)
            assert first.reconsume_times == 0
            (again,) = await _receive_all(consumer, 1, await_duration=1.0)
            assert (again.body, again.topic, again.reconsume_times) == (b"late", TOPIC, 1)
            assert receipt_handle(again).retry == "1"  # popped from the group's POP retry topic
            await consumer.ack(again)
        assert cluster.broker.acks == [(pop_retry_topic(TOPIC, GROUP), 0, 0)]


async def test_changing_the_invisible_time_renews_the_handle() -> None:
    async with FakePopCluster() as cluster:
        cluster.topic(TOPIC)
        cluster.broker.add_messages(TOPIC, 0, [b"slow", b"retry-now"])
        async with _consumer(cluster, invisible_duration=0.3) as consumer:
            slow, now = sorted(await _receive_all(consumer, 2), key=lambda m: m.queue_offset)
            old = receipt_handle(slow)
            await consumer.change_invisible_duration(slow, 5)
            renewed = receipt_handle(slow)
            assert renewed.invisible_time == 5000 and renewed.pop_time >= old.pop_time
            assert renewed.queue_offset == old.queue_offset == renewed.ck_queue_offset
            await consumer.change_invisible_duration(now, 0)  # give it back at once
            (back,) = await _receive_all(consumer, 1, await_duration=1.0, invisible_duration=5)
            assert (back.body, back.reconsume_times) == (b"retry-now", 1)
            await asyncio.sleep(0.4)  # the first time is over; the new one is not
            assert await consumer.receive(32, await_duration=0) == []
            await consumer.ack([slow, back])
        assert len(cluster.broker.acks) == 2


async def test_past_the_delivery_limit_a_message_goes_to_the_dead_letter_topic() -> None:
    async with FakePopCluster() as cluster:
        cluster.topic(TOPIC)
        (stored,) = cluster.broker.add_messages(TOPIC, 0, [b"poison"])
        async with _consumer(cluster, invisible_duration=0.1, max_delivery_attempts=2) as consumer:
            for attempt in range(2):
                (message,) = await _receive_all(consumer, 1, await_duration=1.0)
                assert message.reconsume_times == attempt  # not acknowledged: delivered again
            # The third delivery is not handed out: the receive moves it to the dead-letter topic.
            async with asyncio.timeout(5):
                while not cluster.broker.sent_back:
                    assert await consumer.receive(32, await_duration=0.3) == []
            await asyncio.sleep(0.2)
            assert await consumer.receive(32, await_duration=0) == []  # acknowledged: gone
        (sent,) = cluster.broker.sent_back
        header = sent.header
        assert (header.delay_level, header.max_reconsume_times, header.group) == (-1, 0, GROUP)
        assert header.origin_topic == pop_retry_topic(TOPIC, GROUP)  # where the broker has it now
        assert header.offset == stored.commit_log_offset and header.origin_msg_id == stored.client_msg_id
        assert cluster.broker.acks == [(pop_retry_topic(TOPIC, GROUP), 0, 1)]


async def test_a_receive_waits_for_a_message_that_arrives_meanwhile() -> None:
    async with FakePopCluster() as cluster:
        cluster.topic(TOPIC)
        cluster.broker.add_messages(TOPIC, 0, [])
        async with _consumer(cluster) as consumer:
            loop = asyncio.get_running_loop()
            loop.call_later(0.3, cluster.broker.add_messages, TOPIC, 0, [b"arrived"])
            got = await consumer.receive(4, await_duration=1.5)
            assert _bodies(got) == {b"arrived"}
        header = cluster.broker.pop_headers[-1]
        assert header.poll_time == 1500 and header.born_time and header.born_time > 0


async def test_a_4x_broker_is_refused_before_anything_is_popped() -> None:
    async with FakePopCluster(MQVersion.value_of("V4_9_7")) as cluster:
        cluster.topic(TOPIC)
        async with _consumer(cluster) as consumer:
            with pytest.raises(
                BrokerVersionError, match=r"POP consumption needs a V5_0_0 or later broker.*V4_9_7"
            ):
                await consumer.receive()
        assert cluster.broker.pop_headers == []


async def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="FIRST_OFFSET"):
        SimpleConsumer(GROUP, "127.0.0.1:9876", consume_from="TIMESTAMP")
    with pytest.raises(ValueError, match="max_delivery_attempts"):
        SimpleConsumer(GROUP, "127.0.0.1:9876", max_delivery_attempts=0)
    with pytest.raises(ValueError, match="invisible_duration"):
        SimpleConsumer(GROUP, "127.0.0.1:9876", invisible_duration=0)
    async with FakePopCluster() as cluster:
        cluster.topic(TOPIC)
        async with _consumer(cluster) as consumer:
            with pytest.raises(ValueError, match="between 1 and 32"):
                await consumer.receive(33)
            with pytest.raises(ValueError, match="was not popped"):
                await consumer.ack(MessageExt(topic=TOPIC))


def test_a_batch_ack_has_one_entry_per_checkpoint_and_a_bit_per_message() -> None:
    def handle(start: int, pop_time: int, queue_id: int, offset: int, retry: str = "0") -> ExtraInfo:
        return ExtraInfo(start, pop_time, 30_000, 2, retry, "broker-a", queue_id, offset)

    handles = [handle(10, 1, 0, 10), handle(10, 1, 0, 13), handle(10, 2, 0, 11), handle(4, 1, 3, 4, "1")]
    cmd = batch_ack_request(handles, group=GROUP, topic=TOPIC)
    body = BatchAckMessageRequestBody.from_json(cmd.body)
    assert body.broker_name == "broker-a"
    assert [(a.retry, a.queue_id, a.start_offset, a.pop_time, a.bits) for a in body.acks or []] == [
        ("0", 0, 10, 1, (0, 3)),
        ("0", 0, 10, 2, (1,)),
        ("1", 3, 4, 1, (0,)),
    ]
    assert all((a.consumer_group, a.topic, a.revive_queue_id) == (GROUP, TOPIC, 2) for a in body.acks or [])


# -- the push consumer in POP mode ---------------------------------------------------------------------------


def _push(cluster: FakePopCluster, handler: Any, *, orderly: bool = False) -> PushConsumer:
    consumer = PushConsumer(
        GROUP,
        cluster.namesrv.address,
        consume_from="FIRST_OFFSET",
        client_rebalance=False,
        config=ConsumerConfig(pop_invisible_time_ms=5_000, rebalance_interval_ms=500),
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(handler, orderly=orderly)
    return consumer


async def test_a_push_consumer_pops_where_the_broker_assigns_pop_and_retries_by_hiding() -> None:
    async with FakePopCluster(invisible_scale=0.01) as cluster:
        cluster.topic(TOPIC, queues=2)
        cluster.broker.modes[TOPIC] = MessageRequestMode.POP
        cluster.broker.add_messages(TOPIC, 0, [b"m0", b"refused"])
        cluster.broker.add_messages(TOPIC, 1, [b"m1"])
        seen: list[tuple[bytes, int]] = []
        done = asyncio.Event()

        async def handle(messages: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeStatus:
            (message,) = messages
            seen.append((message.body, message.reconsume_times))
            if message.body == b"refused" and message.reconsume_times == 0:
                return ConsumeStatus.RECONSUME_LATER
            if len(seen) == 4:
                done.set()
            return ConsumeStatus.CONSUME_SUCCESS

        async with _push(cluster, handle) as consumer:
            async with asyncio.timeout(10):
                await done.wait()
            assert MessageQueue(TOPIC, "broker-a", -1) in consumer.assignment()
        assert sorted(seen) == [(b"m0", 0), (b"m1", 0), (b"refused", 0), (b"refused", 1)]
        # The refusal hid the message for the first POP delay level, 10 s (the fake shortened it).
        (change,) = cluster.broker.changes
        assert change.invisible_time == 10_000 and change.topic == TOPIC and change.offset == 1
        assert sorted(cluster.broker.acks) == sorted(
            [(TOPIC, 0, 0), (TOPIC, 1, 0), (pop_retry_topic(TOPIC, GROUP), 0, 0)]
        )
        query = cluster.broker.assignment_queries[0]
        assert (query.consumer_group, query.strategy_name, query.message_model) == (
            GROUP,
            "AVG",
            "CLUSTERING",
        )
        header = cluster.broker.pop_headers[0]
        assert (header.invisible_time, header.max_msg_nums, header.poll_time) == (5_000, 32, 15_000)


async def test_a_push_consumer_told_to_pull_pulls_and_an_orderly_one_never_asks() -> None:
    async with FakePopCluster() as cluster:
        cluster.topic(TOPIC)
        cluster.broker.add_messages(TOPIC, 0, [b"pulled"])
        got = asyncio.Event()

        async def handle(messages: list[MessageExt], context: Any) -> ConsumeStatus:
            got.set()
            return ConsumeStatus.CONSUME_SUCCESS if not context_is_orderly(context) else ConsumeStatus.SUCCESS

        def context_is_orderly(context: Any) -> bool:
            return not isinstance(context, ConsumeConcurrentlyContext)

        async with _push(cluster, handle):
            async with asyncio.timeout(10):
                await got.wait()
        assert cluster.broker.pulls and not cluster.broker.pop_headers  # PULL assigned: pulled
        assert cluster.broker.assignment_queries
        queries = len(cluster.broker.assignment_queries)
        got.clear()
        async with _push(cluster, handle, orderly=True):
            await asyncio.sleep(0.6)
        assert len(cluster.broker.assignment_queries) == queries  # orderly: shares in the client, as Java


async def test_a_broker_side_rebalance_on_a_4x_broker_is_refused_at_start() -> None:
    async with FakePopCluster(MQVersion.value_of("V4_9_7")) as cluster:
        cluster.topic(TOPIC)

        async def handle(messages: list[MessageExt], context: Any) -> ConsumeStatus:
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = _push(cluster, handle)
        with pytest.raises(BrokerVersionError, match=r"broker-side rebalance .* needs a V5_0_0 .* V4_9_7"):
            await consumer.start()
        assert not cluster.broker.assignment_queries


async def test_a_sql92_subscription_is_checked_at_start_and_carried_by_every_pop() -> None:
    async with FakePopCluster() as cluster:
        cluster.topic(TOPIC)
        cluster.broker.add_messages(TOPIC, 0, [b"x"])
        consumer = SimpleConsumer(
            GROUP, cluster.namesrv.address, consume_from="FIRST_OFFSET", await_duration=0.2
        )
        consumer.subscribe(TOPIC, sql="a > 5")
        async with consumer:
            assert _bodies(await _receive_all(consumer, 1)) == {b"x"}
        (check,) = cluster.broker.filter_checks
        assert check.subscription_data is not None and check.subscription_data.sub_string == "a > 5"
        header = cluster.broker.pop_headers[0]
        assert (header.exp_type, header.exp) == ("SQL92", "a > 5")
        cluster.broker.filter_answer = (1, "The broker does not support consumer to filter message by SQL92")
        refused = SimpleConsumer(GROUP + "2", cluster.namesrv.address)
        refused.subscribe(TOPIC, sql="a > 5")
        with pytest.raises(FilterRefusedError, match="does not support consumer to filter message by SQL92"):
            await refused.start()
