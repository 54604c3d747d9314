"""Retries on another broker, the time budget, and latency-based broker avoidance."""

from __future__ import annotations

import time

import pytest

from producer import BrokerError, Message, SendFailedError, SendTimeoutError
from producer.fault import LatencyFaultTolerance, not_available_duration
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.transport import RemotingServer
from tests.unit.producer_fakes import Cluster

TOPIC = "RetryTopic"


@pytest.mark.parametrize(
    "code",
    [
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.NO_PERMISSION,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    ],
)
async def test_retryable_refusal_is_retried_on_the_other_broker(code: int) -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues=2)
        for broker in cluster.brokers.values():
            broker.fail_codes = [code]
        async with cluster.producer() as producer:
            result = await producer.send(Message(TOPIC, b"x"))
        first, second, third = cluster.all_sends()
    # the first broker fails, the other fails too, the third attempt goes back to the first one
    assert first.fields["n"] != second.fields["n"]
    assert third.fields["n"] == first.fields["n"]
    assert result.message_queue.broker_name == third.fields["n"]
    assert first.fields["i"] == second.fields["i"] == third.fields["i"]


async def test_other_refusals_are_not_retried() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC)
        for broker in cluster.brokers.values():
            broker.fail_codes = [ResponseCode.MESSAGE_ILLEGAL]
        async with cluster.producer() as producer:
            with pytest.raises(BrokerError) as caught:
                await producer.send(Message(TOPIC, b"x"))
        assert len(cluster.all_sends()) == 1
    assert caught.value.code == ResponseCode.MESSAGE_ILLEGAL
    assert "scripted failure" in str(caught.value)


async def test_three_failures_give_up_with_every_broker_tried() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC)
        for broker in cluster.brokers.values():
            broker.fail_codes = [ResponseCode.SYSTEM_ERROR] * 3
        async with cluster.producer() as producer:
            with pytest.raises(SendFailedError) as caught:
                await producer.send(Message(TOPIC, b"x"))
        assert len(cluster.all_sends()) == 3
    assert caught.value.code == ResponseCode.SYSTEM_ERROR
    assert sorted(set(caught.value.brokers)) == ["broker-a", "broker-b"]
    assert isinstance(caught.value.__cause__, BrokerError)


async def test_retry_times_is_configurable() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC)
        for broker in cluster.brokers.values():
            broker.fail_codes = [ResponseCode.SYSTEM_ERROR] * 3
        async with cluster.producer(retry_times=0) as producer:
            with pytest.raises(SendFailedError):
                await producer.send(Message(TOPIC, b"x"))
        assert len(cluster.all_sends()) == 1


async def test_unreachable_broker_is_skipped() -> None:
    dead = RemotingServer("127.0.0.1", 0)
    await dead.start()
    dead_addr = dead.address
    await dead.close()
    async with Cluster(("broker-b",)) as cluster:
        live = cluster.brokers["broker-b"].address
        cluster.namesrvs[0].set_route(TOPIC, {"broker-a": dead_addr, "broker-b": live}, 1)
        async with cluster.producer() as producer:
            results = [await producer.send(Message(TOPIC, b"x")) for _ in range(4)]
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}


async def test_timeout_budget_covers_all_attempts() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC)
        for broker in cluster.brokers.values():
            broker.delay = 2.0
        async with cluster.producer(send_timeout_ms=200) as producer:
            began = time.monotonic()
            with pytest.raises(SendTimeoutError):
                await producer.send(Message(TOPIC, b"slow"))
            elapsed = time.monotonic() - began
    assert elapsed < 1.5


async def test_route_is_refreshed_after_a_failure() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC)
        namesrv = cluster.namesrvs[0]
        cluster.brokers["broker-a"].fail_codes = [ResponseCode.SYSTEM_ERROR]
        cluster.brokers["broker-b"].fail_codes = [ResponseCode.SYSTEM_ERROR]
        async with cluster.producer() as producer:
            await producer.send(Message(TOPIC, b"x"))
            await namesrv.wait_for(RequestCode.GET_ROUTEINFO_BY_TOPIC, 2)
        assert namesrv.route_requests(TOPIC) >= 2


# -- latency fault avoidance --------------------------------------------------------------------------


def test_latency_table_is_apaches() -> None:
    assert [not_available_duration(ms) for ms in (0, 49, 50, 99, 100, 549)] == [0] * 6
    assert not_available_duration(550) == 30_000
    assert not_available_duration(1000) == 60_000
    assert not_available_duration(2000) == 120_000
    assert not_available_duration(3000) == 180_000
    assert not_available_duration(15000) == 600_000
    assert not_available_duration(1e9) == 600_000


def test_fault_tolerance_benches_and_releases_with_the_clock() -> None:
    now = [1000.0]
    fault = LatencyFaultTolerance(clock=lambda: now[0])
    fault.update("a", 600, isolation=False)
    fault.update("b", 10, isolation=False)
    fault.update("c", 5, isolation=True)
    assert not fault.is_available("a")
    assert fault.is_available("b")
    assert not fault.is_available("c")
    assert fault.is_available("never-seen")
    now[0] += 30_000
    assert fault.is_available("a")
    assert not fault.is_available("c"), "a failure benches a broker for 10 minutes"
    now[0] += 570_000
    assert fault.is_available("c")


def test_pick_one_at_least_prefers_available_then_fast() -> None:
    now = [0.0]
    fault = LatencyFaultTolerance(clock=lambda: now[0])
    assert fault.pick_one_at_least() is None
    fault.update("slow", 3000, isolation=False)
    assert fault.pick_one_at_least() == "slow"
    fault.update("failed", 1, isolation=True)
    fault.update("fast", 20, isolation=False)
    fault.update("ok", 40, isolation=False)
    # the better half is "fast" and "ok" (available, lowest latency); picks rotate within it
    assert {fault.pick_one_at_least() for _ in range(4)} == {"fast", "ok"}


async def test_fault_avoidance_keeps_sending_to_the_healthy_broker() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues=2)
        for broker in cluster.brokers.values():
            broker.fail_codes = [ResponseCode.SYSTEM_ERROR]
        async with cluster.producer(send_latency_fault_enable=True) as producer:
            first = await producer.send(Message(TOPIC, b"first"))
            later = [await producer.send(Message(TOPIC, b"later")) for _ in range(6)]
    healthy = first.message_queue.broker_name
    assert {r.message_queue.broker_name for r in later} == {healthy}
    assert {r.message_queue.queue_id for r in later} == {0, 1}


async def test_without_fault_avoidance_round_robin_returns_to_the_failed_broker() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues=2)
        for broker in cluster.brokers.values():
            broker.fail_codes = [ResponseCode.SYSTEM_ERROR]
        async with cluster.producer() as producer:
            await producer.send(Message(TOPIC, b"first"))
            later = [await producer.send(Message(TOPIC, b"later")) for _ in range(6)]
    assert {r.message_queue.broker_name for r in later} == {"broker-a", "broker-b"}


async def test_fault_avoidance_still_sends_when_every_broker_is_benched() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues=2)
        for broker in cluster.brokers.values():
            broker.fail_codes = [ResponseCode.SYSTEM_ERROR] * 2
        async with cluster.producer(send_latency_fault_enable=True) as producer:
            with pytest.raises(SendFailedError):
                await producer.send(Message(TOPIC, b"x"), timeout_ms=3000)
            result = await producer.send(Message(TOPIC, b"y"))
    assert result.message_queue.broker_name in {"broker-a", "broker-b"}
