"""Timer messages across a ``kill -9`` of the project's broker under SYNC_FLUSH: none lost, none twice.

A NameServer and a broker (``flushDiskType=SYNC_FLUSH``) run as subprocesses, as in test_broker_crash.py.
A producer without retries sends timer messages due a few seconds later, each with a unique body; an
acknowledgement therefore means the message is stored. The broker is SIGKILLed twice: once in the middle
of the sends (timers pending, none due), and once while the first ones fall due (deliveries under way),
each time restarted on the same store and port. Once every delivery time is well past, the topic must hold
each acknowledged body exactly once, stored no earlier than its floored time; unacknowledged sends may or
may not have been stored, but never twice.
"""

from __future__ import annotations

import asyncio
import collections
import time
from pathlib import Path

import pytest

from producer import Message, Producer
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import unique_name
from tests.integration.clusters.python_servers import start_namesrv
from tests.integration.clusters.readback import read_topic_raw
from tests.integration.clusters.restartable import RestartableBroker

pytestmark = pytest.mark.integration

MESSAGES = 40
#: Delivery times spread over this span (ms) after the send, so kill two lands among deliveries.
FIRST_DUE_MS = 2500
SPREAD_MS = 2500
PRECISION_MS = 1000
TOTAL_BUDGET_S = 40.0


async def _send_all(
    namesrv: str, topic: str, broker: RestartableBroker
) -> tuple[dict[bytes, int], set[bytes]]:
    """Sends, with a kill and restart halfway; the acknowledged bodies with their due times, and all sent."""
    acked: dict[bytes, int] = {}
    sent: set[bytes] = set()
    async with Producer(
        unique_name("TimerCrashPg"), namesrv, retry_times=0, send_timeout_ms=3000
    ) as producer:
        for n in range(MESSAGES):
            if n == MESSAGES // 2:
                broker.sigkill()
                await asyncio.to_thread(broker.start)
            body = f"timer-{n}".encode()
            delay = FIRST_DUE_MS + n * SPREAD_MS // MESSAGES
            sent.add(body)
            deadline = time.monotonic() + 15.0
            while True:  # the restarted broker takes a moment: a failed send is simply not acknowledged
                try:
                    born = time.time_ns() // 1_000_000
                    await producer.send(Message(topic, body, delay_time_ms=delay))
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    body = f"timer-{n}-again-{time.monotonic_ns()}".encode()
                    sent.add(body)
                    await asyncio.sleep(0.2)
                    continue
                acked[body] = born + delay
                break
    return acked, sent


def test_sigkilled_broker_delivers_every_acknowledged_timer_once(tmp_path: Path) -> None:
    started = time.monotonic()
    launch = Launch(tmp_path / "work", tmp_path / "logs")
    try:
        namesrv = start_namesrv(launch).addr
        broker = RestartableBroker(launch, namesrv)
        broker.start()
        topic = unique_name("TimerCrash")

        async def scenario() -> None:
            acked, sent = await _send_all(namesrv, topic, broker)
            # Kill two: as the earliest timers fall due, with deliveries under way.
            first_due = min(acked.values())
            await asyncio.sleep(max(0.0, (first_due + 300 - time.time_ns() // 1_000_000) / 1000))
            broker.sigkill()
            await asyncio.to_thread(broker.start)
            last_due = max(acked.values())
            await asyncio.sleep(max(0.0, (last_due + 2 * PRECISION_MS - time.time_ns() // 1_000_000) / 1000))
            stored = await read_topic_raw(namesrv, topic, len(acked), timeout_s=20.0)
            counts = collections.Counter(m.body for m in stored)
            twice = sorted(b for b, c in counts.items() if c > 1)
            assert not twice, f"delivered more than once: {twice}"
            missing = sorted(set(acked) - set(counts))
            assert not missing, f"acknowledged but never delivered: {missing}"
            assert set(counts) <= sent, "the topic holds a body nobody sent"
            for message in stored:
                due = acked.get(message.body)
                if due is not None:
                    assert message.store_timestamp >= due - PRECISION_MS, f"{message.body!r} came early"

        asyncio.run(scenario())
        broker.check_alive()
    finally:
        leftovers = launch.stop()
    assert not leftovers, f"processes left behind: {leftovers}"
    elapsed = time.monotonic() - started
    assert elapsed < TOTAL_BUDGET_S, f"took {elapsed:.1f} s"
