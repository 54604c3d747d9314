"""POP state across a SIGKILL of the project's broker: a message popped and not acknowledged comes back
after the restart (once its invisible time is over), an acknowledged one never does.

A NameServer and a Broker (``rmq broker --flush SYNC``) run as subprocesses; the project's
:class:`consumer.SimpleConsumer` receives every message, acknowledges half of them, then the broker is
SIGKILLed and restarted on the same store and port, and the consumer receives again.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from consumer import SimpleConsumer
from producer import Message, Producer
from rocketmq_wire.message import MessageExt
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import unique_name
from tests.integration.clusters.python_servers import start_namesrv
from tests.integration.clusters.restartable import RestartableBroker

COUNT = 6
INVISIBLE_S = 2.0
#: Longest wait for the unacknowledged messages after the restart (invisible time, revive, registration).
COME_BACK_S = 30.0
#: How long the acknowledged messages are watched for after the others came back.
WATCH_S = 3.0


async def _receive_until(consumer: SimpleConsumer, wanted: int, deadline: float) -> list[MessageExt]:
    got: list[MessageExt] = []
    while len(got) < wanted and time.monotonic() < deadline:
        try:
            got += await consumer.receive(16)
        except Exception:  # the broker is still starting or registering: ask again
            await asyncio.sleep(0.3)
    return got


async def scenario(namesrv: str, broker: RestartableBroker) -> None:
    topic = unique_name("PopCrash")
    group = unique_name("PopCrashCg")
    deadline = time.monotonic() + COME_BACK_S
    async with Producer(unique_name("PopCrashPg"), namesrv) as producer:
        for i in range(COUNT):
            while True:  # until the broker has registered (its topic auto-created through TBW102)
                try:
                    await producer.send(Message(topic, f"crash {i}".encode()))
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.3)
    async with SimpleConsumer(
        group, namesrv, consume_from="FIRST_OFFSET", invisible_duration=INVISIBLE_S, await_duration=1
    ) as consumer:
        consumer.subscribe(topic)
        first = await _receive_until(consumer, COUNT, time.monotonic() + COME_BACK_S)
        assert sorted(m.body for m in first) == sorted(f"crash {i}".encode() for i in range(COUNT))
        acked = [m for m in first if int(m.body.split()[1]) % 2 == 0]
        await consumer.ack(acked)
        broker.sigkill()
        await asyncio.to_thread(broker.start)
        unacked = {m.body for m in first} - {m.body for m in acked}
        again = await _receive_until(consumer, len(unacked), time.monotonic() + COME_BACK_S)
        assert {m.body for m in again} == unacked, "every unacknowledged message came back"
        assert all(m.reconsume_times == 1 for m in again)
        await consumer.ack(again)
        later = await _receive_until(consumer, 1, time.monotonic() + WATCH_S)
        assert later == [], f"acknowledged messages came back: {[m.body for m in later]}"


def test_pop_checkpoints_survive_a_sigkill(tmp_path: Path) -> None:
    launch = Launch(tmp_path / "work", tmp_path / "logs")
    try:
        namesrv = start_namesrv(launch).addr
        broker = RestartableBroker(launch, namesrv)
        broker.start()
        asyncio.run(scenario(namesrv, broker))
    finally:
        leftovers = launch.stop()
    assert not leftovers, f"processes left behind: {leftovers}"
