"""The sink under broker flow control: the in-flight window halves on busy answers and grows back, requests
the producer gave up on as busy are sent again (they were not stored), and every row is acknowledged once."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from producer import BrokerBusyError, BusyAnswer, Message, MessageQueue, SendResult, SendStatus
from producer.flow_control import BusyListener
from rocketmq_wire.codes import ResponseCode
from spark_connector import SinkSendError
from spark_connector.rows import Outgoing, messages_from_columns
from spark_connector.sender import PartitionSender
from spark_connector.summary import CommitSummary, PartitionReport
from spark_connector.window import AdaptiveWindow

BUSY = (
    "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 3ms, size of queue: 9"
)


def test_window_halves_once_per_cooldown_and_grows_back_by_one_per_window() -> None:
    now = [0.0]
    window = AdaptiveWindow(16, cooldown_s=0.1, clock=lambda: now[0])
    assert window.busy() and window.limit == 8
    assert not window.busy(), "a burst of busy answers is one signal"
    assert window.limit == 8
    now[0] += 0.1
    assert window.busy() and window.limit == 4
    for _ in range(3):
        now[0] += 1
        window.busy()
    assert window.limit == 1 and window.smallest == 1 and window.shrinks == 5
    for _ in range(1 + 2 + 3):  # one ack at 1, two at 2, three at 3
        window.succeeded()
    assert window.limit == 4
    for _ in range(1000):
        window.succeeded()
    assert window.limit == 16 and window.smallest == 1


async def test_window_holds_back_acquirers_beyond_its_limit() -> None:
    window = AdaptiveWindow(2, cooldown_s=0)
    await window.acquire()
    await window.acquire()
    window.busy()  # limit 1 with 2 in use
    waiter = asyncio.ensure_future(window.acquire())
    await asyncio.sleep(0)
    window.release()
    await asyncio.sleep(0)
    assert not waiter.done(), "1 in use of a limit of 1"
    window.release()
    await asyncio.wait_for(waiter, 1)
    assert window.in_use == 1
    with pytest.raises(ValueError):
        AdaptiveWindow(0)


class BusyBroker:
    """A send target that refuses as busy while more than ``capacity`` requests are in flight, the way a
    broker with a short ``waitTimeMillsInSendQueue`` does; refused requests are not stored."""

    def __init__(self, capacity: int, *, give_up_every: int = 3, always_busy: bool = False) -> None:
        self.capacity = capacity
        self.give_up_every = give_up_every
        self.always_busy = always_busy
        self.in_flight = 0
        self.refusals = 0
        self.stored: list[bytes] = []
        self._listeners: list[BusyListener] = []

    def add_busy_listener(self, listener: BusyListener) -> None:
        self._listeners.append(listener)

    async def _answer(self, messages: Sequence[Message]) -> SendResult:
        self.in_flight += 1
        try:
            await asyncio.sleep(0.001)
            if self.always_busy or self.in_flight > self.capacity:
                self.refusals += 1
                for listener in self._listeners:
                    listener(BusyAnswer("broker-a", "127.0.0.1:1", ResponseCode.SYSTEM_BUSY, BUSY))
                if self.always_busy or self.refusals % self.give_up_every == 0:
                    # the producer's own resends ran out of time: not stored
                    raise BrokerBusyError("busy", ["broker-a"], 2, broker="broker-a", addr="a", remark=BUSY)
            self.stored.extend(m.body for m in messages)
        finally:
            self.in_flight -= 1
        return SendResult(SendStatus.SEND_OK, "id", None, MessageQueue(messages[0].topic, "broker-a", 0), 0)

    async def send(self, message: Message, *, sharding_key: str | None = None) -> SendResult:
        return await self._answer([message])

    async def send_batch(self, messages: Sequence[Message]) -> SendResult:
        return await self._answer(messages)


def rows(count: int, *, key: str | None = None) -> list[Outgoing]:
    return messages_from_columns(
        {"body": [f"r{i}".encode() for i in range(count)], "sharding_key": [key] * count}, count, topic="T"
    )


async def test_every_row_is_acknowledged_once_through_busy_answers() -> None:
    broker = BusyBroker(capacity=4)
    sender = PartitionSender(broker, max_in_flight=32)
    tally = await sender.send_all([rows(400)])
    assert sorted(broker.stored) == sorted(f"r{i}".encode() for i in range(400))
    assert tally.rows == 400
    assert tally.busy_answers == broker.refusals > 0
    assert tally.resends > 0
    assert 1 <= tally.smallest_window <= 16, "halved at least once"


async def test_batches_and_ordered_rows_ride_it_out_too() -> None:
    broker = BusyBroker(capacity=2, give_up_every=2)
    sender = PartitionSender(broker, batch_size=8, max_in_flight=16)
    await sender.send_all([rows(200), rows(30, key="k")])
    ordered = [b for b in broker.stored if b in {f"r{i}".encode() for i in range(30)}]
    assert len(broker.stored) == 230
    assert len(set(broker.stored)) == 200, "the 30 keyed rows reuse the first 30 bodies"
    keyed = [b for b in ordered if ordered.count(b) == 2]
    assert keyed, "keyed rows stored"
    assert sender.tally.resends > 0


async def test_a_broker_busy_past_the_flow_control_timeout_fails_the_task() -> None:
    broker = BusyBroker(capacity=0, always_busy=True)
    sender = PartitionSender(broker, max_in_flight=4, flow_control_timeout_ms=150)
    with pytest.raises(SinkSendError, match="busy") as caught:
        await sender.send_all([rows(10)])
    assert broker.stored == []
    assert caught.value.acknowledged == 0
    assert isinstance(caught.value.__cause__, BrokerBusyError)


def test_summary_reports_resends_and_the_smallest_window() -> None:
    reports: list[PartitionReport | None] = [
        PartitionReport(0, 0, 10, 100, 10, 0, 0, 0.5, busy_answers=7, resends=2, smallest_window=4),
        PartitionReport(1, 0, 5, 50, 5, 0, 0, 0.25, busy_answers=0, resends=0, smallest_window=64),
    ]
    summary = CommitSummary.of(reports, mode="batch", committed=True)
    assert (summary.busy_answers, summary.resends, summary.smallest_window) == (7, 2, 4)
    assert "busy 7 time(s): 2 resend(s), window down to 4" in summary.describe()
    again = CommitSummary.from_json(summary.to_json())
    assert again == summary
