"""The sink's per-task sender: bounded pipelining, batching, per-key order, and failing only after the
requests in flight have ended. A scripted target shows the concurrency; the project's NameServer and Broker
show the real thing end to end."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from broker.testing import running_broker
from nameserver import NameServer
from producer import BrokerError, Message, MessageQueue, Producer, SendResult, SendStatus
from producer.flow_control import BusyListener
from spark_connector import RowError, SinkSendError
from spark_connector.rows import Outgoing, messages_from_columns
from spark_connector.sender import PartitionSender


class ScriptedTarget:
    """Answers every send after a few turns of the loop; records what was in flight at any time."""

    def __init__(self, *, turns: int = 3, fail_at: int | None = None) -> None:
        self.turns = turns
        self.fail_at = fail_at
        self.started = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self.requests: list[tuple[str, list[bytes], str | None]] = []
        self.keys_in_flight: set[str] = set()
        self.overlapping_keys: list[str] = []

    async def _answer(self, kind: str, messages: Sequence[Message], key: str | None) -> SendResult:
        index = self.started
        self.started += 1
        self.requests.append((kind, [m.body for m in messages], key))
        if key is not None:
            if key in self.keys_in_flight:
                self.overlapping_keys.append(key)
            self.keys_in_flight.add(key)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            for _ in range(self.turns):
                await asyncio.sleep(0)
        finally:
            self.in_flight -= 1
            if key is not None:
                self.keys_in_flight.discard(key)
        if index == self.fail_at:
            raise BrokerError(14, "scripted failure", "127.0.0.1:1")
        return SendResult(
            status=SendStatus.SEND_OK,
            msg_id="id",
            offset_msg_id=None,
            message_queue=MessageQueue(messages[0].topic, "b", 0),
            queue_offset=0,
        )

    async def send(self, message: Message, *, sharding_key: str | None = None) -> SendResult:
        return await self._answer("single", [message], sharding_key)

    async def send_batch(self, messages: Sequence[Message]) -> SendResult:
        return await self._answer("batch", messages, None)

    def add_busy_listener(self, listener: BusyListener) -> None:
        pass


def outgoing(count: int, *, topic: str = "T", key: str | None = None, delay: int = 0) -> list[Outgoing]:
    return messages_from_columns(
        {
            "body": [f"m{i}".encode() for i in range(count)],
            "sharding_key": [key] * count,
            "delay_level": [delay] * count,
        },
        count,
        topic=topic,
    )


async def test_requests_are_pipelined_up_to_max_in_flight() -> None:
    target = ScriptedTarget(turns=20)  # answers slower than rows are converted, as a network is
    sender = PartitionSender(target, max_in_flight=5)
    tally = await sender.send_all([outgoing(30), outgoing(20)])
    assert target.most_in_flight == 5
    assert (tally.rows, tally.requests, tally.batches, tally.not_ok) == (50, 50, 0, 0)
    assert tally.bytes == sum(len(f"m{i}") for i in range(30)) + sum(len(f"m{i}") for i in range(20))
    assert sender.in_flight == 0


async def test_batches_per_topic_and_rows_that_cannot_be_batched() -> None:
    target = ScriptedTarget()
    sender = PartitionSender(target, batch_size=4, max_in_flight=3)
    rows = [*outgoing(6, topic="A"), *outgoing(3, topic="B"), *outgoing(2, topic="A", delay=2)]
    tally = await sender.send_all([rows])
    kinds = sorted((kind, len(bodies)) for kind, bodies, _ in target.requests)
    # A: 4 + the 2 left at the end; B: 3 at the end; the delayed rows one by one
    assert kinds == [("batch", 2), ("batch", 3), ("batch", 4), ("single", 1), ("single", 1)]
    assert (tally.rows, tally.requests, tally.batches) == (11, 5, 3)


async def test_batches_stop_growing_at_the_byte_limit() -> None:
    target = ScriptedTarget()
    sender = PartitionSender(target, batch_size=100, batch_max_bytes=300)
    big = messages_from_columns({"body": [b"x" * 100] * 7}, 7, topic="T")
    await sender.send_all([big])
    sizes = [len(bodies) for _, bodies, _ in target.requests]
    assert sum(sizes) == 7
    assert max(sizes) == 2, "two 100-byte bodies and their overhead fit in 300 bytes, three do not"


async def test_a_sharding_key_has_one_send_in_flight_and_keeps_its_order() -> None:
    target = ScriptedTarget()
    sender = PartitionSender(target, batch_size=8, max_in_flight=16)
    rows = [
        item for pair in zip(outgoing(10, key="k1"), outgoing(10, key="k2"), strict=True) for item in pair
    ]
    await sender.send_all([rows, outgoing(10)])
    assert target.overlapping_keys == []
    for key in ("k1", "k2"):
        bodies = [bodies[0] for kind, bodies, k in target.requests if k == key]
        assert bodies == [f"m{i}".encode() for i in range(10)]
    assert target.most_in_flight > 2, "different keys and unordered rows still go out concurrently"


async def test_the_first_failure_stops_intake_and_waits_for_the_requests_in_flight() -> None:
    target = ScriptedTarget(fail_at=3)
    sender = PartitionSender(target, max_in_flight=4)
    with pytest.raises(SinkSendError, match="scripted failure") as caught:
        await sender.send_all([outgoing(100)])
    assert target.in_flight == 0, "no request is left unanswered when the task fails"
    assert target.started < 100
    error = caught.value
    assert error.acknowledged == sender.tally.rows == target.started - 1
    assert error.failed == 1
    assert isinstance(error.__cause__, BrokerError)


async def test_a_bad_row_fails_after_the_earlier_rows_were_acknowledged() -> None:
    target = ScriptedTarget()
    sender = PartitionSender(target, max_in_flight=8)

    def chunks() -> Iterator[list[Outgoing]]:  # converted lazily, as Spark's rows arrive
        yield outgoing(5)
        yield messages_from_columns({"body": [None]}, 1, topic="T", first_row=5)

    with pytest.raises(RowError, match="row 5"):
        await sender.send_all(chunks())
    assert target.in_flight == 0
    assert sender.tally.rows == 5


async def test_against_the_project_broker(tmp_path: Path) -> None:
    async with NameServer("127.0.0.1", 0) as namesrv:
        async with running_broker(tmp_path / "store", namesrv_addr=namesrv.address) as broker:
            async with Producer("SenderTest", namesrv.address) as producer:
                sender = PartitionSender(producer, batch_size=16, max_in_flight=8)
                rows = [*outgoing(100, topic="SenderTopic"), *outgoing(20, topic="SenderTopic", key="c1")]
                tally = await sender.send_all([rows[:50], rows[50:]])
            store = broker.store
            counts = {q: store.get_max_offset("SenderTopic", q) for q in store.topics()["SenderTopic"]}
    assert tally.rows == 120
    assert tally.batches == 100 // 16 + 1
    assert tally.requests == tally.batches + 20
    assert sum(counts.values()) == 120
    assert max(counts.values()) >= 20, "the 20 ordered rows went to one queue"
