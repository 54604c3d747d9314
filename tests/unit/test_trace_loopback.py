"""Message trace end to end against the project's NameServer and Broker, in-process on loopback: a traced
producer and push consumer write Pub, SubBefore and SubAfter records to the trace topic, the admin and
``rmq message trace`` read them back; a trace topic that refuses sends never holds up the user's sends."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from admin import Admin, TopicNotFoundError
from cli.local_cluster import LocalCluster, LocalClusterSettings
from cli.main import app
from client.trace import TraceDispatcher
from consumer import ConsumerConfig, ConsumeStatus, PushConsumer
from producer import (
    LocalTransactionState,
    Message,
    Producer,
    ProducerConfig,
    SendStatus,
    TransactionProducer,
)
from producer.trace import trace_group
from rocketmq_wire.topics import TRACE_TOPIC
from rocketmq_wire.trace import TraceContext, TraceMessageType, TraceType

TOPIC = "TracedTopic"
PRODUCER_GROUP = "TracedProducer"
CONSUMER_GROUP = "TracedConsumer"


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    settings = LocalClusterSettings(tmp_path / "store", trace_topic_enable=True)
    async with LocalCluster(settings) as cluster:
        yield cluster


@pytest.fixture
async def admin(local: LocalCluster) -> AsyncIterator[Admin]:
    async with Admin(local.namesrv_address) as client:
        yield client


async def _create(local: LocalCluster, admin: Admin, topic: str, perm: int = 6) -> None:
    await admin.create_topic(
        topic, cluster="DefaultCluster", read_queue_nums=2, write_queue_nums=2, perm=perm
    )
    await _routed(local, admin, topic)


async def _routed(local: LocalCluster, admin: Admin, topic: str) -> None:
    async def routed() -> bool:
        try:
            await admin.topic_route(topic)
        except TopicNotFoundError:
            return False
        return True

    await local.wait_for_route(routed)


async def _eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def _traced_send_and_consume(local: LocalCluster, admin: Admin) -> str:
    """Send one traced message, consume it with a traced push consumer; its msgId."""
    await _create(local, admin, TOPIC)
    await _routed(local, admin, TRACE_TOPIC)  # the broker's own (traceTopicEnable)
    async with Producer(
        PRODUCER_GROUP,
        local.namesrv_address,
        config=ProducerConfig(client_ip="127.0.0.1"),
        enable_msg_trace=True,
    ) as producer:
        assert producer.trace_dispatcher is not None
        result = await producer.send(Message(TOPIC, b"traced", tags="TagA", keys=["order-1"]))
        assert result.status is SendStatus.SEND_OK
    consumed = asyncio.Event()
    push = PushConsumer(
        CONSUMER_GROUP,
        local.namesrv_address,
        consume_from="FIRST_OFFSET",
        config=ConsumerConfig(client_ip="127.0.0.1", instance_name="trace-test", await_termination_ms=500),
        enable_msg_trace=True,
    )
    push.subscribe(TOPIC, "*")

    async def handle(messages: list[Any], context: Any) -> ConsumeStatus:
        if any(m.unique_id == result.msg_id for m in messages):
            consumed.set()
        return ConsumeStatus.CONSUME_SUCCESS

    push.register_listener(handle)
    await push.start()
    try:
        assert push.trace_dispatcher is not None
        await asyncio.wait_for(consumed.wait(), 15)
    finally:
        await push.shutdown()  # flushes the trace records
    return result.msg_id


async def _all_records(admin: Admin, msg_id: str) -> list[TraceContext]:
    found: list[TraceContext] = []

    async def complete() -> bool:
        found[:] = await admin.query_trace(msg_id)
        return {ctx.trace_type for ctx in found} >= {TraceType.PUB, TraceType.SUB_BEFORE, TraceType.SUB_AFTER}

    await _eventually(complete)
    return found


async def test_traced_producer_and_consumer_records_read_back(local: LocalCluster, admin: Admin) -> None:
    msg_id = await _traced_send_and_consume(local, admin)
    found = await _all_records(admin, msg_id)
    assert [ctx.trace_type for ctx in found] == [TraceType.PUB, TraceType.SUB_BEFORE, TraceType.SUB_AFTER]
    assert [ctx.timestamp for ctx in found] == sorted(ctx.timestamp for ctx in found)
    pub, before, after = found
    assert all(ctx.beans[0].msg_id == msg_id for ctx in found)
    assert (pub.group_name, pub.success, pub.beans[0].topic) == (PRODUCER_GROUP, True, TOPIC)
    assert (pub.beans[0].tags, pub.beans[0].keys, pub.beans[0].body_length) == ("TagA", "order-1", 6)
    assert pub.beans[0].store_host == local.broker_address
    assert pub.beans[0].offset_msg_id
    assert (before.group_name, before.beans[0].retry_times, before.beans[0].keys) == (
        CONSUMER_GROUP,
        0,
        "order-1",
    )
    assert (after.group_name, after.success, after.context_code) == (CONSUMER_GROUP, True, 0)
    assert after.request_id == before.request_id and after.cost_time >= 0
    # the trace messages are found by the message's own keys too, as Java's transKey
    by_key = await admin.query_by_key(TRACE_TOPIC, "order-1")
    assert by_key and all(m.topic == TRACE_TOPIC for m in by_key)
    assert await admin.query_trace("0" * 32) == []


async def test_cli_message_trace_json_and_table(local: LocalCluster, admin: Admin) -> None:
    msg_id = await _traced_send_and_consume(local, admin)
    await _all_records(admin, msg_id)
    runner = CliRunner()
    env = {"NAMESRV_ADDR": local.namesrv_address}
    result = await asyncio.to_thread(runner.invoke, app, ["message", "trace", msg_id, "--json"], env=env)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [row["type"] for row in rows] == ["Pub", "SubBefore", "SubAfter"]
    assert [row["group"] for row in rows] == [PRODUCER_GROUP, CONSUMER_GROUP, CONSUMER_GROUP]
    assert rows[0]["topic"] == TOPIC and rows[0]["status"] == "success" and rows[2]["status"] == "success"
    assert all(row["msg_id"] == msg_id for row in rows)
    table = await asyncio.to_thread(runner.invoke, app, ["queryMsgTraceById", msg_id], env=env)
    assert table.exit_code == 0, table.output
    assert "Pub" in table.stdout and "SubAfter" in table.stdout and PRODUCER_GROUP in table.stdout
    other = await asyncio.to_thread(
        runner.invoke,
        app,
        ["message", "trace", msg_id, "--trace-topic", "OtherTraceTopic", "--json"],
        env=env,
    )
    assert other.exit_code != 0 or json.loads(other.stdout) == []


async def test_custom_trace_topic(local: LocalCluster, admin: Admin) -> None:
    await _create(local, admin, TOPIC)
    await _create(local, admin, "MyTraceTopic")
    async with Producer(
        PRODUCER_GROUP,
        local.namesrv_address,
        config=ProducerConfig(client_ip="127.0.0.1", enable_msg_trace=True, trace_topic="MyTraceTopic"),
    ) as producer:
        results = [await producer.send_batch([Message(TOPIC, b"a"), Message(TOPIC, b"b")])]
    ids = results[0].msg_id.split(",")
    assert len(ids) == 2
    for msg_id in ids:
        found: list[TraceContext] = []

        async def pub_found(msg_id: str = msg_id, found: list[TraceContext] = found) -> bool:
            found[:] = await admin.query_trace(msg_id, trace_topic="MyTraceTopic")
            return bool(found)

        await _eventually(pub_found)
        assert [ctx.trace_type for ctx in found] == [TraceType.PUB]
        assert found[0].beans[0].tags == "null" and found[0].beans[0].keys == "null"  # as Java writes none


async def test_refused_trace_topic_never_blocks_or_fails_sends(local: LocalCluster, admin: Admin) -> None:
    await _create(local, admin, TOPIC)
    await _create(local, admin, "RefusingTraceTopic", perm=4)  # readable, not writable: traces refused
    producer = Producer(
        PRODUCER_GROUP,
        local.namesrv_address,
        config=ProducerConfig(client_ip="127.0.0.1"),
        enable_msg_trace=True,
        trace_topic="RefusingTraceTopic",
    )
    await producer.start()
    tracer = producer.trace_dispatcher
    assert tracer is not None
    try:
        begin = time.monotonic()
        for i in range(20):
            result = await producer.send(Message(TOPIC, f"m{i}".encode()))
            assert result.status is SendStatus.SEND_OK
        assert time.monotonic() - begin < 5

        async def failed() -> bool:
            return tracer.failed_messages >= 1

        await _eventually(failed)
        assert tracer.sent_messages == 0
    finally:
        begin = time.monotonic()
        await producer.shutdown()
        assert time.monotonic() - begin < 8


async def test_dispatcher_drops_rather_than_blocks() -> None:
    async def never(message: Any) -> None:
        raise AssertionError("nothing is sent before start")

    tracer = TraceDispatcher(never, queue_size=1)
    assert trace_group("G") == "_INNER_TRACE_PRODUCER-G" and tracer.trace_topic == TRACE_TOPIC
    assert not tracer.append(TraceContext(TraceType.PUB))  # not started: dropped, not queued
    assert tracer.dropped == 1
    await tracer.shutdown()  # nothing to do


async def test_transaction_producer_writes_half_pub_and_end_transaction(
    local: LocalCluster, admin: Admin
) -> None:
    await _create(local, admin, TOPIC)
    await _routed(local, admin, TRACE_TOPIC)

    def never_asked(message: Any) -> LocalTransactionState:
        return LocalTransactionState.UNKNOWN

    def commit(message: Message, msg_id: str, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    async with TransactionProducer(
        PRODUCER_GROUP,
        local.namesrv_address,
        checker=never_asked,
        executor=commit,
        config=ProducerConfig(client_ip="127.0.0.1", enable_msg_trace=True),
    ) as producer:
        result = await producer.send_in_transaction(Message(TOPIC, b"tx", tags="TX", keys=["tx-1"]))
    found: list[TraceContext] = []

    async def both() -> bool:
        found[:] = await admin.query_trace(result.msg_id)
        return len(found) >= 2

    await _eventually(both)
    pub, end = found
    assert (pub.trace_type, pub.beans[0].msg_type) == (TraceType.PUB, TraceMessageType.TRANS_HALF)
    assert end.trace_type is TraceType.END_TRANSACTION
    bean = end.beans[0]
    assert (bean.topic, bean.tags, bean.keys, bean.transaction_state) == (
        TOPIC,
        "TX",
        "tx-1",
        "COMMIT_MESSAGE",
    )
    assert (bean.msg_type, bean.from_transaction_check) == (TraceMessageType.TRANS_COMMIT, False)
