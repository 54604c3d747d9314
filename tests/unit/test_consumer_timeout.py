"""The consume timeout of concurrent consumption (Java's ``consumeTimeout`` / ``cleanExpiredMsg``): a message
whose handler hangs is sent back for redelivery and stops holding its queue's committed offset back."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from consumer import ConsumerConfig, ConsumeStatus, PushConsumer
from consumer.consume_concurrently import EXPIRED_DELAY_LEVEL, ConcurrentConsumeService
from consumer.offset_store import OffsetStore
from consumer.process_queue import ProcessQueue
from consumer.stats import ConsumerStats
from rocketmq_wire.bodies.heartbeat import MessageModel
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.headers.offset import UpdateConsumerOffsetRequestHeader
from rocketmq_wire.message import MessageExt
from tests.unit.consumer_fakes import BROKER_NAME, FakeCluster, stored_message

QUEUE = MessageQueue(topic="T", broker_name=BROKER_NAME, queue_id=0)
_instances = itertools.count()


class Offsets:
    """The one offset-store call the consume service makes."""

    def __init__(self) -> None:
        self.updates: list[int] = []

    def update(self, queue: MessageQueue, offset: int, *, increase_only: bool) -> None:
        self.updates.append(offset)


class Harness:
    """A ConcurrentConsumeService over one queue whose handler hangs on messages with body ``b"stuck"``."""

    def __init__(self, config: ConsumerConfig, *, model: MessageModel = MessageModel.CLUSTERING) -> None:
        self.release = asyncio.Event()
        self.pq = ProcessQueue()
        self.offsets = Offsets()
        self.sent: list[tuple[MessageExt, int]] = []
        self.accept_send_back = True
        self.handled: list[MessageExt] = []
        self.finished: list[int] = []
        self.stats_clock = 0.0
        self.stats = ConsumerStats(lambda: self.stats_clock)
        self.service = ConcurrentConsumeService(
            group="G",
            model=model,
            handler=self._handle,
            config=config,
            offsets=cast(OffsetStore, self.offsets),
            send_back=self._send_back,
            stats=self.stats,
            held_queues=lambda: [(QUEUE, self.pq)],
        )

    async def _handle(self, messages: list[MessageExt], context: Any) -> ConsumeStatus:
        self.handled.extend(messages)
        if messages[0].body == b"stuck":
            await self.release.wait()
            self.finished.append(messages[0].queue_offset)
            return ConsumeStatus.RECONSUME_LATER  # the late verdict: must be ignored
        return ConsumeStatus.CONSUME_SUCCESS

    async def _send_back(self, message: MessageExt, queue: MessageQueue, delay_level: int) -> bool:
        if not self.accept_send_back:
            return False
        self.sent.append((message, delay_level))
        return True

    def deliver(self, *bodies: bytes) -> list[MessageExt]:
        messages = [stored_message("T", 0, offset, body) for offset, body in enumerate(bodies)]
        self.pq.put(messages)
        self.service.submit(messages, self.pq, QUEUE)
        return messages


async def _until(predicate: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_a_hung_message_is_sent_back_and_its_late_verdict_ignored() -> None:
    config = ConsumerConfig(consume_timeout_minutes=0.002, expire_check_interval_ms=40, consume_workers=2)
    harness = Harness(config)
    harness.service.start()
    try:
        stuck, _quick = harness.deliver(b"stuck", b"quick")
        await _until(lambda: harness.sent)
        [(sent, level)] = harness.sent
        assert level == EXPIRED_DELAY_LEVEL == 3
        assert (sent.queue_offset, sent.commit_log_offset, sent.client_msg_id) == (
            0,
            stuck.commit_log_offset,
            stuck.client_msg_id,
        )
        assert sent is not stuck, "the running handler keeps its own message object"
        assert harness.pq.count == 0
        assert harness.offsets.updates[-1] == 2, "the queue may now commit past both messages"
        assert harness.finished == [], "the handler was not interrupted, it still runs"
        harness.release.set()
        await _until(lambda: harness.finished == [0])
        await asyncio.sleep(0.15)  # several checks later: nothing more happens
        assert len(harness.sent) == 1, "RECONSUME_LATER after the timeout must not send it back again"
        assert harness.offsets.updates[-1] == 2
        harness.stats_clock = 10_000
        status = harness.stats.status("T")
        assert status.consume_ok_tps == 0.05  # the quick message alone, over 20 s of samples
        assert status.consume_failed_tps == 0.0  # the ignored verdict is not counted as a failure
    finally:
        harness.release.set()
        await harness.service.shutdown(1000)


async def test_nothing_is_sent_back_before_the_timeout() -> None:
    harness = Harness(ConsumerConfig(consume_timeout_minutes=1, expire_check_interval_ms=60_000))
    harness.service.start()
    try:
        harness.deliver(b"stuck")
        await _until(lambda: harness.handled)
        assert await harness.service.clean_expired() == 0
        assert harness.sent == [] and harness.pq.count == 1
    finally:
        harness.release.set()
        await harness.service.shutdown(1000)


async def test_a_refused_send_back_keeps_the_message_until_one_succeeds() -> None:
    harness = Harness(ConsumerConfig(consume_timeout_minutes=0.0001, expire_check_interval_ms=60_000))
    harness.service.start()
    try:
        harness.deliver(b"stuck")
        await _until(lambda: harness.handled)
        await asyncio.sleep(0.02)
        harness.accept_send_back = False
        assert await harness.service.clean_expired() == 0
        assert harness.pq.count == 1 and harness.offsets.updates == []
        harness.accept_send_back = True
        assert await harness.service.clean_expired() == 1
        assert harness.pq.count == 0 and harness.offsets.updates == [1]
    finally:
        harness.release.set()
        await harness.service.shutdown(1000)


async def test_broadcasting_drops_a_hung_message_instead() -> None:
    config = ConsumerConfig(consume_timeout_minutes=0.0001, expire_check_interval_ms=60_000)
    harness = Harness(config, model=MessageModel.BROADCASTING)
    harness.service.start()
    try:
        harness.deliver(b"stuck")
        await _until(lambda: harness.handled)
        await asyncio.sleep(0.02)
        assert await harness.service.clean_expired() == 1
        assert harness.sent == [] and harness.pq.count == 0 and harness.offsets.updates == [1]
    finally:
        harness.release.set()
        await harness.service.shutdown(1000)


def test_the_timeout_is_java_s_by_default_and_may_be_a_fraction_of_a_minute() -> None:
    default = ConsumerConfig()
    assert default.consume_timeout_minutes == 15
    assert default.expire_check_ms() == default.consume_timeout_ms() == 900_000
    quick = ConsumerConfig(consume_timeout_minutes=0.5, expire_check_interval_ms=100)
    assert (quick.consume_timeout_ms(), quick.expire_check_ms()) == (30_000, 100)
    with pytest.raises(ValueError):
        ConsumerConfig(consume_timeout_minutes=0)
    with pytest.raises(ValueError):
        ConsumerConfig(expire_check_interval_ms=0)


# -- through a push consumer, against a broker ------------------------------------------------------------


@pytest.fixture
async def cluster() -> AsyncIterator[FakeCluster]:
    async with FakeCluster() as fake:
        fake.topic("T", queues=1)
        yield fake


async def test_a_push_consumer_sends_a_hung_message_back_to_the_broker(cluster: FakeCluster) -> None:
    cluster.broker.add_messages("T", 0, [b"stuck", b"fine"])
    release = asyncio.Event()

    async def handle(messages: list[MessageExt], context: Any) -> ConsumeStatus:
        if messages[0].body == b"stuck":
            await release.wait()
        return ConsumeStatus.CONSUME_SUCCESS

    config = ConsumerConfig(
        client_ip="127.0.0.1",
        instance_name=f"timeout-{next(_instances)}",
        consume_timeout_minutes=0.005,
        expire_check_interval_ms=50,
        await_termination_ms=200,
    )
    consumer = PushConsumer("G", cluster.namesrv.address, consume_from="FIRST_OFFSET", config=config)
    consumer.subscribe("T")
    consumer.register_listener(handle)
    await consumer.start()
    try:
        await cluster.broker.wait_until(lambda: cluster.broker.sent_back)
        [back] = cluster.broker.sent_back
        assert back.header.delay_level == 3
        assert back.header.group == "G"
        assert back.header.offset == 0  # the stuck message's commit-log offset (queue 0, offset 0)
        assert back.header.origin_topic == "T"
        assert back.header.max_reconsume_times == 16
    finally:
        release.set()
        await consumer.shutdown()
    committed: list[UpdateConsumerOffsetRequestHeader] = [
        h for h in cluster.broker.offset_updates if h.topic == "T" and h.queue_id == 0
    ]
    assert committed and committed[-1].commit_offset == 2, "the hung message no longer holds the queue"
    assert len(cluster.broker.sent_back) == 1
