"""Consumers answer what a broker relays to them as Apache's client does: GET_CONSUMER_RUNNING_INFO,
CONSUME_MESSAGE_DIRECTLY and NOTIFY_CONSUMER_IDS_CHANGED; and the admin asks for a member's running info.

A fake broker (``consumer_fakes``) sends them over the connection the consumer heartbeated on, so each case
is set up exactly (the project's broker relays them too: ``test_broker_consumer_relay.py``).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import consumer.stats
from admin import Admin, BlockingAdmin, ConsumerNotOnlineError
from consumer import ConsumerConfig, ConsumeStatus, PullConsumer, PushConsumer
from rocketmq_wire.bodies import CMResult, ConsumeMessageDirectlyResult, ConsumerRunningInfo, MessageQueue
from rocketmq_wire.codes import MQVersion, RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.consumer import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
)
from rocketmq_wire.message import MessageExt, encode_properties, encode_stored_message
from rocketmq_wire.message import const as props
from tests.unit.consumer_fakes import BROKER_NAME, FakeCluster, stored_message

_instances = itertools.count()
WAIT_S = 10.0


class Clock:
    """Stands in for the monotonic clock of the consumer's figures."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(consumer.stats, "_monotonic_ms", fake)
    return fake


@pytest.fixture
async def cluster() -> AsyncIterator[FakeCluster]:
    async with FakeCluster() as fake:
        yield fake


def config(**settings: Any) -> ConsumerConfig:
    return ConsumerConfig(
        client_ip="127.0.0.1", instance_name=f"ri-{next(_instances)}", await_termination_ms=500, **settings
    )


class Handled:
    """A listener that records and answers by body: ``b"fail..."`` RECONSUME_LATER, else success."""

    def __init__(self) -> None:
        self.messages: list[MessageExt] = []
        self.contexts: list[Any] = []

    async def __call__(self, messages: list[MessageExt], context: Any) -> ConsumeStatus:
        self.messages.extend(messages)
        self.contexts.append(context)
        if messages[0].body.startswith(b"fail"):
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    async def wait_for(self, count: int) -> None:
        async with asyncio.timeout(WAIT_S):
            while len(self.messages) < count:
                await asyncio.sleep(0.01)


async def running_info(
    cluster: FakeCluster, client_id: str, group: str, jstack: bool = False
) -> RemotingCommand:
    header = GetConsumerRunningInfoRequestHeader(
        consumer_group=group, client_id=client_id, jstack_enable=jstack
    )
    return await cluster.broker.ask_client(client_id, RequestCode.GET_CONSUMER_RUNNING_INFO, header)


# -- GET_CONSUMER_RUNNING_INFO ------------------------------------------------------------------------------


async def test_a_push_consumer_reports_settings_queues_and_real_figures(
    cluster: FakeCluster, clock: Clock
) -> None:
    cluster.topic("T", queues=2)
    cluster.broker.add_messages("T", 0, [b"one", b"fail", b"two"])
    handled = Handled()
    push = PushConsumer("G", cluster.namesrv.address, consume_from="FIRST_OFFSET", config=config())
    push.subscribe("T", "TagA || TagB")
    push.register_listener(handled)
    before = time.time_ns() // 1_000_000
    await push.start()
    after = time.time_ns() // 1_000_000
    try:
        await handled.wait_for(3)
        await cluster.broker.wait_until(lambda: len(cluster.broker.sent_back) == 1)
        clock.now += 10_000  # the next ten-second sample: Java's minute figures see what happened
        response = await running_info(cluster, push.client_id, "G")
        assert response.code == ResponseCode.SUCCESS
        assert response.version == MQVersion.V4_9_8
        assert b'"mqPopTable"' not in response.body and b'"jstack"' not in response.body
        info = ConsumerRunningInfo.from_json(response.body)

        p = info.properties
        assert p["PROP_CONSUMEORDERLY"] == "false"
        assert p["PROP_THREADPOOL_CORE_SIZE"] == "20"
        assert p["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
        assert p["PROP_CLIENT_VERSION"] == "V4_9_8"
        assert p["PROP_NAMESERVER_ADDR"] == cluster.namesrv.address + ";"
        assert before <= int(p["PROP_CONSUMER_START_TIMESTAMP"]) <= after
        assert p["consumerGroup"] == "G"
        assert p["messageModel"] == "CLUSTERING"
        assert p["consumeFromWhere"] == "CONSUME_FROM_FIRST_OFFSET"
        assert p["allocateMessageQueueStrategy"] == "AVG"
        assert (p["consumeTimeout"], p["maxReconsumeTimes"], p["pullBatchSize"]) == ("15", "-1", "32")
        assert (p["clientIP"], p["postSubscriptionWhenPull"]) == ("127.0.0.1", "false")

        assert [(s.topic, s.sub_string) for s in info.subscription_set] == [
            ("%RETRY%G", "*"),
            ("T", "TagA || TagB"),
        ]
        q0 = MessageQueue(topic="T", broker_name=BROKER_NAME, queue_id=0)
        q1 = MessageQueue(topic="T", broker_name=BROKER_NAME, queue_id=1)
        assert set(info.mq_table) == {q0, q1}
        assert info.mq_table[q0].commit_offset == 3  # all three handled (the failed one was sent back)
        assert info.mq_table[q0].cached_msg_count == 0 and not info.mq_table[q0].dropped
        assert info.mq_table[q1].commit_offset in (-1, 0)  # -1 until its first (empty) pull is answered
        assert abs(info.mq_table[q0].last_pull_timestamp - time.time() * 1000) < 60_000

        assert set(info.status_table) == {"%RETRY%G", "T"}
        status = info.status_table["T"]
        assert status.pull_tps == 0.15  # 3 messages over the 20 s between the first and last sample
        assert status.pull_rt > 0
        assert status.consume_ok_tps == 0.1  # two handled OK
        assert status.consume_failed_tps == 0.05  # one failed
        assert status.consume_failed_msgs == 0  # counted per hour, from the first ten-minute sample
        clock.now += 600_000
        later = ConsumerRunningInfo.from_json((await running_info(cluster, push.client_id, "G")).body)
        assert later.status_table["T"].consume_failed_msgs == 1
        assert later.status_table["T"].consume_ok_tps == 0.0  # the minute has slid past them
    finally:
        await push.shutdown()


async def test_another_group_gets_java_s_refusal_and_jstack_comes_only_when_asked(
    cluster: FakeCluster,
) -> None:
    cluster.topic("T")
    push = PushConsumer("G", cluster.namesrv.address, config=config())
    push.subscribe("T")
    push.register_listener(Handled())
    await push.start()
    try:
        refused = await running_info(cluster, push.client_id, "Other")
        assert refused.code == ResponseCode.SYSTEM_ERROR
        assert refused.remark == "The Consumer Group <Other> not exist in this consumer"
        assert refused.body == b""
        await cluster.broker.wait_until(lambda: cluster.broker.pulls)
        with_stack = ConsumerRunningInfo.from_json(
            (await running_info(cluster, push.client_id, "G", True)).body
        )
        assert with_stack.jstack is not None
        assert "MainThread" in with_stack.jstack and "TID: " in with_stack.jstack
        assert f"pull-T-{BROKER_NAME}-0" in with_stack.jstack  # the queue's pulling task, where it waits
    finally:
        await push.shutdown()


async def test_a_5x_push_consumer_adds_the_pop_table(cluster: FakeCluster) -> None:
    cluster.topic("T")
    push = PushConsumer("G", cluster.namesrv.address, config=config(version=MQVersion.V5_3_3))
    push.subscribe("T")
    push.register_listener(Handled(), orderly=True)
    await push.start()
    try:
        response = await running_info(cluster, push.client_id, "G")
        assert response.version == MQVersion.V5_3_3
        assert b'"mqPopTable":{}' in response.body and b'"userConsumerInfo":{}' in response.body
        info = ConsumerRunningInfo.from_json(response.body)
        assert info.properties["PROP_CONSUMEORDERLY"] == "true"
        assert info.properties["PROP_CLIENT_VERSION"] == "V5_3_3"
    finally:
        await push.shutdown()


@pytest.mark.parametrize("version", [MQVersion.V4_9_8, MQVersion.V5_3_3])
async def test_a_lite_pull_consumer_reports_as_java_s_does(cluster: FakeCluster, version: int) -> None:
    cluster.topic("T", queues=2)
    pull = PullConsumer("L", cluster.namesrv.address, config=config(version=version))
    pull.subscribe("T")
    await pull.start()
    try:
        async with asyncio.timeout(WAIT_S):
            while len(pull.assignment()) < 2:
                await asyncio.sleep(0.01)
        response = await running_info(cluster, pull.client_id, "L")
        assert response.code == ResponseCode.SUCCESS
        info = ConsumerRunningInfo.from_json(response.body)
        assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_ACTIVELY"
        assert info.properties["autoCommit"] == "true"
        assert "PROP_CONSUMEORDERLY" not in info.properties
        assert [s.topic for s in info.subscription_set] == ["T"]
        assert info.status_table == {}  # Java keeps no figures for a lite pull consumer
        # 4.9 reports no queues; 5.x the queues it reads
        assert len(info.mq_table) == (2 if version == MQVersion.V5_3_3 else 0)
        assert (info.mq_pop_table is None) == (version == MQVersion.V4_9_8)
    finally:
        await pull.close()


# -- CONSUME_MESSAGE_DIRECTLY -------------------------------------------------------------------------------


async def consume_directly(
    cluster: FakeCluster, client_id: str, message: MessageExt, group: str = "G"
) -> RemotingCommand:
    header = ConsumeMessageDirectlyResultRequestHeader(
        consumer_group=group,
        client_id=client_id,
        msg_id=message.msg_id,
        broker_name=BROKER_NAME,
        topic=message.topic,
    )
    return await cluster.broker.ask_client(
        client_id, RequestCode.CONSUME_MESSAGE_DIRECTLY, header, encode_stored_message(message)
    )


def direct_result(response: RemotingCommand) -> ConsumeMessageDirectlyResult:
    assert response.code == ResponseCode.SUCCESS, response.remark
    return ConsumeMessageDirectlyResult.from_json(response.body)


async def test_consume_directly_maps_every_listener_outcome(cluster: FakeCluster) -> None:
    cluster.topic("T")
    seen: list[tuple[str, MessageQueue]] = []

    async def listener(messages: list[MessageExt], context: Any) -> Any:
        [message] = messages
        seen.append((message.topic, context.message_queue))
        body = message.body
        if body == b"raise":
            raise ValueError("boom")
        if body == b"slow":
            await asyncio.sleep(0.06)
        outcomes: dict[bytes, Any] = {
            b"ok": ConsumeStatus.CONSUME_SUCCESS,
            b"slow": ConsumeStatus.CONSUME_SUCCESS,
            b"later": ConsumeStatus.RECONSUME_LATER,
            b"none": None,
            b"odd": "yes",
        }
        return outcomes[body]

    push = PushConsumer("G", cluster.namesrv.address, config=config())
    push.subscribe("T")
    push.register_listener(listener)
    await push.start()
    try:
        cid = push.client_id

        async def outcome(body: bytes) -> ConsumeMessageDirectlyResult:
            return direct_result(await consume_directly(cluster, cid, stored_message("T", 0, 7, body)))

        ok = await outcome(b"ok")
        assert (ok.consume_result, ok.order, ok.auto_commit, ok.remark) == (
            CMResult.CR_SUCCESS,
            False,
            True,
            None,
        )
        assert (await outcome(b"later")).consume_result is CMResult.CR_LATER
        assert (await outcome(b"none")).consume_result is CMResult.CR_RETURN_NULL
        raised = await outcome(b"raise")
        assert raised.consume_result is CMResult.CR_THROW_EXCEPTION
        assert raised.remark is not None and raised.remark.startswith("ValueError: boom, ")
        assert "test_consumer_running_info.py:" in raised.remark  # where it was raised
        odd = await outcome(b"odd")
        assert odd.consume_result is CMResult.CR_THROW_EXCEPTION and "'yes'" in (odd.remark or "")
        assert (await outcome(b"slow")).spent_time_mills >= 60
        assert seen[0] == ("T", MessageQueue(topic="T", broker_name=BROKER_NAME, queue_id=0))

        # a redelivered message is shown under its original topic, its queue under the retry topic
        retried = stored_message("%RETRY%G", 0, 3, b"ok")
        retried.properties_string += encode_properties({props.RETRY_TOPIC: "T"})
        assert (
            direct_result(await consume_directly(cluster, cid, retried)).consume_result is CMResult.CR_SUCCESS
        )
        assert seen[-1] == ("T", MessageQueue(topic="%RETRY%G", broker_name=BROKER_NAME, queue_id=0))

        refused = await consume_directly(cluster, cid, stored_message("T", 0, 7, b"ok"), group="Other")
        assert refused.code == ResponseCode.SYSTEM_ERROR
        assert refused.remark == "The Consumer Group <Other> not exist in this consumer"
        assert cluster.broker.sent_back == [] and cluster.broker.offset_updates == []  # nothing else moved
    finally:
        await push.shutdown()


async def test_an_orderly_listener_is_reported_as_such(cluster: FakeCluster) -> None:
    cluster.topic("T")

    async def listener(messages: list[MessageExt], context: Any) -> ConsumeStatus:
        if messages[0].body == b"later":
            return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeStatus.SUCCESS

    push = PushConsumer("G", cluster.namesrv.address, config=config())
    push.subscribe("T")
    push.register_listener(listener, orderly=True)
    await push.start()
    try:
        cid = push.client_id
        done = direct_result(await consume_directly(cluster, cid, stored_message("T", 0, 1, b"ok")))
        assert (done.order, done.auto_commit, done.consume_result) == (True, True, CMResult.CR_SUCCESS)
        later = direct_result(await consume_directly(cluster, cid, stored_message("T", 0, 1, b"later")))
        assert (later.order, later.consume_result) == (True, CMResult.CR_LATER)
    finally:
        await push.shutdown()


async def test_a_lite_pull_consumer_has_no_listener_to_consume_directly(cluster: FakeCluster) -> None:
    cluster.topic("T")
    pull = PullConsumer("L", cluster.namesrv.address, config=config())
    pull.subscribe("T")
    await pull.start()
    try:
        response = await consume_directly(cluster, pull.client_id, stored_message("T", 0, 1, b"x"), group="L")
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark == "The Consumer Group <L> not exist in this consumer"
    finally:
        await pull.close()


# -- NOTIFY_CONSUMER_IDS_CHANGED ----------------------------------------------------------------------------


async def _until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT_S):
        while not predicate():
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("kind", ["push", "lite"])
async def test_a_notice_that_the_group_changed_rebalances_at_once(cluster: FakeCluster, kind: str) -> None:
    cluster.topic("T", queues=4)
    settings = config(rebalance_interval_ms=600_000)  # no timed round during the test
    member: PushConsumer | PullConsumer
    if kind == "push":
        member = PushConsumer("G", cluster.namesrv.address, config=settings)
        member.register_listener(Handled())
    else:
        member = PullConsumer("G", cluster.namesrv.address, config=settings)
    member.subscribe("T")
    await member.start()
    try:
        await _until(lambda: len(member.assignment()) == 4)
        # a second member joins, sorting before this one: averagely, this one keeps queues 2 and 3
        cluster.broker.members = ["0.0.0.0@newcomer", member.client_id]
        await asyncio.sleep(0.3)
        assert len(member.assignment()) == 4, "nothing changes without a notice (or a timed round)"
        await cluster.broker.notify_ids_changed(member.client_id, "G")
        await _until(lambda: len(member.assignment()) == 2)
        assert [q.queue_id for q in member.assignment()] == [2, 3]
    finally:
        await (member.shutdown() if isinstance(member, PushConsumer) else member.close())


# -- the admin --------------------------------------------------------------------------------------------


async def test_the_admin_asks_a_member_through_a_broker_of_the_group(cluster: FakeCluster) -> None:
    cluster.topic("T")
    cluster.topic("%RETRY%G")  # how the admin finds the group's brokers, as mqadmin does
    push = PushConsumer("G", cluster.namesrv.address, config=config())
    push.subscribe("T", "TagA")
    push.register_listener(Handled())
    await push.start()
    try:
        async with Admin(cluster.namesrv.address) as admin:
            info = await admin.consumer_running_info("G", push.client_id)
            assert info.properties["consumerGroup"] == "G"
            assert [(s.topic, s.sub_string) for s in info.subscription_set] == [
                ("%RETRY%G", "*"),
                ("T", "TagA"),
            ]
            assert info.jstack is None
            assert (await admin.consumer_running_info("G", push.client_id, jstack=True)).jstack
            with pytest.raises(ConsumerNotOnlineError):
                await admin.consumer_running_info("G", "10.0.0.9@nobody")
        with BlockingAdmin(cluster.namesrv.address) as blocking:
            info = await asyncio.to_thread(blocking.consumer_running_info, "G", push.client_id)
            assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
            cluster.broker.relay = False  # a broker the client is not connected to says "not online"
            with pytest.raises(ConsumerNotOnlineError):
                await asyncio.to_thread(blocking.consumer_running_info, "G", push.client_id)
    finally:
        await push.shutdown()


# -- a window as reported ---------------------------------------------------------------------------------


def test_a_process_queue_reports_its_held_and_taken_messages() -> None:
    from consumer.process_queue import ProcessQueue

    pq = ProcessQueue()
    big = b"x" * (1024 * 1024)
    pq.put([stored_message("T", 0, offset, big) for offset in range(5, 10)])
    pq.take(2)  # an orderly handler works on 5 and 6
    pq.try_unlock_times = 2
    before = int(time.time() * 1000)
    info = pq.info(commit_offset=5)
    assert (info.commit_offset, info.cached_msg_min_offset, info.cached_msg_max_offset) == (5, 7, 9)
    assert (info.cached_msg_count, info.cached_msg_size_in_mib) == (3, 5)
    assert (info.transaction_msg_min_offset, info.transaction_msg_max_offset, info.transaction_msg_count) == (
        5,
        6,
        2,
    )
    assert (info.locked, info.try_unlock_times, info.dropped) == (False, 2, False)
    for stamp in (info.last_lock_timestamp, info.last_pull_timestamp, info.last_consume_timestamp):
        assert before - 5_000 <= stamp <= before + 5_000  # epoch ms, not the monotonic clock
    pq.drop()
    assert pq.info(commit_offset=-1).dropped
