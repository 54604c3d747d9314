"""Long polling: a suspended pull waits for an arrival its filter accepts, or for its timeout.

Time is a manual clock, so "the timeout passes" is a call, not a wait; waits on the network are bounded by
``asyncio.timeout``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from broker import Broker, ManualClock
from broker.testing import BrokerClient, running_broker
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.message import decode_messages
from rocketmq_wire.transport import RemotingClosedError

LIMIT_S = 5


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def broker(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Broker]:
    async with running_broker(tmp_path / "store", clock=clock) as running:
        yield running


async def _until(broker: Broker, done: Callable[[], bool]) -> None:
    """Wait (bounded) until ``done()`` holds, re-checking whenever the broker holds or lets go a pull."""
    changed = asyncio.Event()
    broker.pull_holder.watch(changed.set)
    async with asyncio.timeout(LIMIT_S):
        while not done():
            changed.clear()
            await changed.wait()


async def _held(broker: Broker, topic: str, queue_id: int, count: int = 1) -> None:
    await _until(broker, lambda: broker.pull_holder.held(topic, queue_id) >= count)
    assert broker.pull_holder.held(topic, queue_id) == count


async def test_held_pull_is_answered_when_a_message_arrives(broker: Broker) -> None:
    async with BrokerClient(broker.address) as consumer, BrokerClient(broker.address) as producer:
        await producer.send("Live", b"first", queue_id=0)
        pending = asyncio.create_task(consumer.pull("g", "Live", 0, 1, suspend_ms=15_000))
        await _held(broker, "Live", 0)
        assert not pending.done()
        await producer.send("Live", b"second", queue_id=0)
        async with asyncio.timeout(LIMIT_S):
            answer = await pending
        assert answer.code == ResponseCode.SUCCESS
        assert [m.body for m in decode_messages(answer.body)] == [b"second"]
        assert broker.pull_holder.held_count == 0


async def test_held_pull_times_out_with_pull_not_found(broker: Broker, clock: ManualClock) -> None:
    async with BrokerClient(broker.address) as consumer:
        await consumer.create_topic("Quiet")
        pending = asyncio.create_task(consumer.pull("g", "Quiet", 0, 0, suspend_ms=1000))
        await _held(broker, "Quiet", 0)
        clock.advance(999)
        await asyncio.sleep(0)
        assert not pending.done()
        clock.advance(1)
        async with asyncio.timeout(LIMIT_S):
            answer: RemotingCommand = await pending
        assert answer.code == ResponseCode.PULL_NOT_FOUND
        assert broker.pull_holder.held_count == 0


async def test_arrival_the_filter_rejects_keeps_the_pull_held(broker: Broker, clock: ManualClock) -> None:
    async with BrokerClient(broker.address) as consumer, BrokerClient(broker.address) as producer:
        await consumer.create_topic("Tags")
        pending = asyncio.create_task(
            consumer.pull("g", "Tags", 0, 0, subscription="Wanted", suspend_ms=5000)
        )
        await _held(broker, "Tags", 0)
        await producer.send("Tags", b"other", queue_id=0, tags="Other")
        assert broker.pull_holder.held("Tags", 0) == 1
        assert not pending.done()
        await producer.send("Tags", b"wanted", queue_id=0, tags="Wanted")
        async with asyncio.timeout(LIMIT_S):
            answer = await pending
        assert [m.body for m in decode_messages(answer.body)] == [b"wanted"]


async def test_pull_without_suspend_flag_is_answered_at_once(broker: Broker) -> None:
    async with BrokerClient(broker.address) as consumer:
        await consumer.create_topic("Nothing")
        async with asyncio.timeout(LIMIT_S):
            answer = await consumer.pull("g", "Nothing", 0, 0)
        assert answer.code == ResponseCode.PULL_NOT_FOUND
        assert broker.pull_holder.held_count == 0


async def test_a_consumer_that_leaves_takes_its_held_pull_with_it(broker: Broker) -> None:
    consumer = BrokerClient(broker.address)
    await consumer.create_topic("Gone")
    pending = asyncio.create_task(consumer.pull("g", "Gone", 0, 0, suspend_ms=60_000))
    await _held(broker, "Gone", 0)
    await consumer.close()
    with pytest.raises(RemotingClosedError):
        await pending
    await _until(broker, lambda: broker.pull_holder.held_count == 0)
    assert broker.pull_holder.held_count == 0
