"""The project's broker resets a consumer group by time (INVOKE_BROKER_TO_RESET_OFFSET) as Apache's does: it
works the offsets out, tells the online members, and refuses when none is online so the tools write them."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest

from admin import Admin, RequestRefusedError, ResetMethod
from broker.testing import running_broker
from consumer import ConsumeFromWhere, ConsumerConfig, PushConsumer
from consumer.testing import Received
from nameserver import NameServer
from producer import Message, Producer
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.consumer import ResetOffsetBody
from rocketmq_wire.headers.offset import ResetOffsetRequestHeader
from rocketmq_wire.transport import RemotingClient

TOPIC = "ResetTopic"
OTHER = "ResetOther"
GROUP = "ResetGroup"
LIMIT_S = 20.0


async def until(predicate: object, what: str) -> None:
    deadline = time.monotonic() + LIMIT_S
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def _ask_reset(addr: str, group: str, topic: str, timestamp: int) -> RemotingCommand:
    header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, is_force=True)
    async with RemotingClient() as client:
        request = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
        return await client.invoke(addr, request, 5000)


async def test_an_online_group_is_moved_back_and_reads_again(tmp_path: Path) -> None:
    received = Received()

    def seen() -> Counter[bytes]:
        return Counter(received.bodies())

    async with NameServer("127.0.0.1", 0) as namesrv:
        async with running_broker(tmp_path / "store", namesrv_addr=namesrv.address) as broker:
            before = int(time.time() * 1000) - 1000
            bodies = [f"reset {i}".encode() for i in range(12)]
            async with Producer("ResetPg", namesrv.address) as producer:
                for body in bodies:
                    await producer.send(Message(TOPIC, body))
            queues = broker.topic_config_manager.select(TOPIC)
            assert queues is not None

            def committed() -> list[int]:
                return [
                    broker.consumer_offsets.query_offset(GROUP, TOPIC, q)
                    for q in range(queues.write_queue_nums)
                ]

            consumer = PushConsumer(
                GROUP,
                namesrv.address,
                consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                config=ConsumerConfig(persist_offset_interval_ms=100),
            )
            consumer.subscribe(TOPIC)
            consumer.register_listener(received.handler("member"))
            await consumer.start()
            try:
                await until(lambda: len(received.deliveries) == 12, "the first reading")
                await until(lambda: sum(committed()) == 12, "the offsets committed")

                # A group that never committed on this topic is refused, as Apache refuses it.
                unknown = await _ask_reset(broker.address, "NeverRead", TOPIC, before)
                assert unknown.code == ResponseCode.SYSTEM_ERROR
                assert unknown.remark == "THe consumer group <NeverRead> not exist"
                no_topic = await _ask_reset(broker.address, GROUP, "NoSuchTopic", before)
                assert no_topic.code == ResponseCode.SYSTEM_ERROR
                assert (
                    no_topic.remark
                    == "[reset-offset] reset offset failed, no topic in this broker. topic=NoSuchTopic"
                )

                answer = await _ask_reset(broker.address, GROUP, TOPIC, before)
                assert answer.code == ResponseCode.SUCCESS, answer.remark
                table = ResetOffsetBody.from_json(answer.body).offset_table
                assert sorted((q.queue_id, offset) for q, offset in table.items()) == [
                    (q, 0) for q in range(queues.write_queue_nums)
                ]
                # The member took the offsets: it reads everything again and commits the end once more.
                await until(lambda: all(seen()[body] == 2 for body in bodies), "the second reading")
                await until(lambda: sum(committed()) == 12, "the offsets committed again")

                # Online but never committed on a topic: the refusal stands, as writing offsets behind the
                # members' back would be undone by them.
                async with Admin(namesrv.address) as admin:
                    await admin.create_topic(
                        OTHER, broker_addr=broker.address, read_queue_nums=2, write_queue_nums=2
                    )
                    with pytest.raises(
                        RequestRefusedError, match="THe consumer group <ResetGroup> not exist"
                    ):
                        await admin.reset_offset_by_time(GROUP, OTHER, before)
            finally:
                await consumer.shutdown()

            # With nobody online the broker refuses, and the admin writes the offsets itself.
            async with Admin(namesrv.address) as admin:
                rows = await admin.reset_offset_by_time(GROUP, TOPIC, before)
            assert {row.method for row in rows} == {ResetMethod.DIRECT}
            assert committed() == [0] * queues.write_queue_nums
            offline = await _ask_reset(broker.address, GROUP, TOPIC, before)
            assert offline.code == ResponseCode.CONSUMER_NOT_ONLINE
            assert offline.remark == (
                f"Consumer not online, so can not reset offset, Group: {GROUP} Topic: {TOPIC} "
                f"Timestamp: {before}"
            )
