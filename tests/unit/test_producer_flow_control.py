"""Busy brokers: SYSTEM_BUSY and its kin are resent (elsewhere first, then after a growing pause) within the
send timeout, never use up the retry budget, and end in one clear BrokerBusyError."""

from __future__ import annotations

import random
import time

import pytest

from client.backoff import Backoff
from producer import BrokerBusyError, BrokerError, BusyAnswer, Message, ProducerConfig
from producer.flow_control import BusyRefusals, is_busy_answer
from rocketmq_wire.codes import ResponseCode
from tests.unit.producer_fakes import Cluster

TOPIC = "BusyTopic"
TIMEOUT_CLEAN_QUEUE = (
    "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 205ms, "
    "size of queue: 9"
)
PC_SYNCHRONIZED = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"


def test_busy_answers_are_system_busy_and_page_cache_system_errors() -> None:
    assert is_busy_answer(ResponseCode.SYSTEM_BUSY, None)
    assert is_busy_answer(ResponseCode.SYSTEM_BUSY, TIMEOUT_CLEAN_QUEUE)
    assert is_busy_answer(ResponseCode.SYSTEM_ERROR, PC_SYNCHRONIZED)
    assert not is_busy_answer(ResponseCode.SYSTEM_ERROR, "java.lang.NullPointerException")
    assert not is_busy_answer(ResponseCode.SYSTEM_ERROR, None)
    assert not is_busy_answer(ResponseCode.SUCCESS, "[PC_SYNCHRONIZED]")
    assert not is_busy_answer(ResponseCode.FLUSH_DISK_TIMEOUT, None)


def test_backoff_doubles_up_to_its_ceiling_with_jitter_in_the_upper_half() -> None:
    backoff = Backoff(10, 100, random.Random(3))
    delays = [backoff.next_delay_ms() for _ in range(8)]
    ceilings = [10, 20, 40, 80, 100, 100, 100, 100]
    for delay, ceiling in zip(delays, ceilings, strict=True):
        assert ceiling / 2 <= delay <= ceiling
    with pytest.raises(ValueError):
        Backoff(0, 10, random.Random())
    with pytest.raises(ValueError):
        Backoff(20, 10, random.Random())


def test_refusals_pause_only_before_a_broker_that_already_refused() -> None:
    refusals = BusyRefusals(Backoff(10, 10, random.Random(1)))
    refusals.add(BusyAnswer("a", "addr-a", 2, "busy"))
    assert refusals.must_pause_before("a")
    assert not refusals.must_pause_before("b")
    refusals.add(BusyAnswer("b", "addr-b", 2, "busy"))
    assert 5 <= refusals.next_pause_ms() <= 10
    assert not refusals.must_pause_before("a"), "a pause starts a new round"
    assert refusals.count == 2 and refusals.last is not None and refusals.last.broker_name == "b"


async def test_busy_broker_is_left_for_the_other_at_once() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues=2)
        for broker in cluster.brokers.values():
            broker.fail_codes = [ResponseCode.SYSTEM_BUSY]
            broker.fail_remark = TIMEOUT_CLEAN_QUEUE
        seen: list[BusyAnswer] = []
        async with cluster.producer(retry_times=0) as producer:
            producer.add_busy_listener(seen.append)
            result = await producer.send(Message(TOPIC, b"x"))
        first, second, third = cluster.all_sends()
    # both brokers refuse once; the retry budget (0) is not used up by busy answers
    assert first.fields["n"] != second.fields["n"]
    assert third.fields["n"] == first.fields["n"] == result.message_queue.broker_name
    assert [a.broker_name for a in seen] == [first.fields["n"], second.fields["n"]]
    assert all(a.code == ResponseCode.SYSTEM_BUSY and a.remark == TIMEOUT_CLEAN_QUEUE for a in seen)
    stored = [m for b in cluster.brokers.values() for m in b.stored]
    assert len(stored) == 1, "only the accepted attempt is stored"


async def test_a_single_busy_broker_is_retried_after_growing_pauses() -> None:
    config = ProducerConfig(busy_backoff_initial_ms=40, busy_backoff_max_ms=80, retry_times=0)
    async with Cluster(("broker-a",)) as cluster:
        cluster.route(TOPIC)
        cluster.brokers["broker-a"].fail_codes = [ResponseCode.SYSTEM_BUSY] * 4
        async with cluster.producer(config=config) as producer:
            began = time.monotonic()
            result = await producer.send(Message(TOPIC, b"x"))
            elapsed = time.monotonic() - began
        sends = cluster.all_sends()
    assert len(sends) == 5
    assert len({s.fields["i"] for s in sends}) == 1, "every attempt carries the same properties and unique id"
    assert result.queue_offset == 0
    # pauses drawn from [20, 40] + [40, 80] + [40, 80] + [40, 80] ms
    assert elapsed >= 0.14


async def test_busy_until_the_timeout_is_one_clear_error_and_nothing_stored() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC)
        for broker in cluster.brokers.values():
            broker.fail_codes = [ResponseCode.SYSTEM_BUSY] * 1000
            broker.fail_remark = TIMEOUT_CLEAN_QUEUE
        async with cluster.producer(send_timeout_ms=400) as producer:
            began = time.monotonic()
            with pytest.raises(BrokerBusyError) as caught:
                await producer.send(Message(TOPIC, b"x"))
            elapsed = time.monotonic() - began
        stored = [m for b in cluster.brokers.values() for m in b.stored]
        attempts = len(cluster.all_sends())
    error = caught.value
    assert error.code == ResponseCode.SYSTEM_BUSY
    assert error.remark == TIMEOUT_CLEAN_QUEUE
    assert error.broker in {"broker-a", "broker-b"} and error.broker in str(error)
    assert "not stored" in str(error) and TIMEOUT_CLEAN_QUEUE in str(error)
    assert sorted(error.brokers) == ["broker-a", "broker-b"]
    assert isinstance(error.__cause__, BrokerError) or error.__cause__ is None
    assert stored == []
    assert 3 < attempts < 60, "paused between rounds, not a busy loop"
    assert elapsed < 0.6


async def test_ordered_send_waits_on_its_own_queue() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues=2)
        for broker in cluster.brokers.values():
            broker.fail_codes = [ResponseCode.SYSTEM_BUSY] * 2
        async with cluster.producer() as producer:
            result = await producer.send(Message(TOPIC, b"x"), sharding_key="order-1")
        sends = cluster.all_sends()
    assert len(sends) == 3
    assert {(s.fields["n"], s.fields["e"]) for s in sends} == {
        (result.message_queue.broker_name, str(result.message_queue.queue_id))
    }


async def test_page_cache_busy_system_error_is_busy_too() -> None:
    async with Cluster(("broker-a",)) as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        broker.fail_codes = [ResponseCode.SYSTEM_ERROR] * 5
        broker.fail_remark = PC_SYNCHRONIZED
        async with cluster.producer(retry_times=0) as producer:
            result = await producer.send(Message(TOPIC, b"x"))
    assert result.queue_offset == 0


async def test_other_system_errors_still_use_up_the_retry_budget() -> None:
    async with Cluster(("broker-a",)) as cluster:
        cluster.route(TOPIC)
        cluster.brokers["broker-a"].fail_codes = [ResponseCode.SYSTEM_ERROR] * 5
        async with cluster.producer(retry_times=1) as producer:
            with pytest.raises(Exception) as caught:
                await producer.send(Message(TOPIC, b"x"))
        assert len(cluster.all_sends()) == 2
    assert not isinstance(caught.value, BrokerBusyError)
