"""Crash safety end to end: a broker with SYNC flush, a producer sending, the broker SIGKILLed and restarted.

A NameServer and a Broker (``rmq broker --flush SYNC``) run as subprocesses; producer tasks in the test send
messages with unique bodies (a sequence number) without retries, so an acknowledgement means exactly one
stored copy, and record every acknowledged (queue, queue offset, body). After a random number of
acknowledgements the broker is killed with SIGKILL (every process of its group, by pid) and restarted on the
same store and port; sends failing meanwhile are simply not acknowledged. After the last restart every queue
of the topic is read from offset 0, twice: with plain PULL_MESSAGE requests (:func:`read_topic_raw`) and with
a :class:`consumer.PullConsumer` (assign, seek to 0, poll), and the two must agree. Then: every acknowledged
body is at its acknowledged (queue, offset), no body appears twice, offsets run contiguously from 0, and
every stored body is one the test sent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import random
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from consumer import ConsumeFromWhere, MessageQueue, PullConsumer
from producer import Message, Producer, ProducerError
from rocketmq_wire.message import MessageExt
from tests.integration.clusters import configs
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import unique_name
from tests.integration.clusters.processes import ManagedProcess, ProcessId, free_port, is_gone, wait_until
from tests.integration.clusters.python_servers import GRACE_S, REPO_ROOT, python_env, start_namesrv
from tests.integration.clusters.readback import ReadBackError, read_topic_raw

log = logging.getLogger("tests.broker_crash")

KILLS = 3
SENDERS = 4
#: Acknowledgements between a (re)start and the next kill: a random count in this range.
ACKS_BEFORE_KILL = (60, 250)
#: Acknowledgements after the last restart, proving the producer carries on.
ACKS_AFTER_LAST_RESTART = 50
#: Longest wait for a count of acknowledgements after a (re)start (start-up, store recovery, sending).
ACKS_TIMEOUT_S = 15.0
#: Back-off of a sender after a failed send, so it does not spin while the broker is down.
FAILED_SEND_PAUSE_S = 0.02
CONDITION_POLL_S = 0.01
#: Bytes of a body shown in failure messages (the sequence number; the padding is noise).
SHOWN = 15
#: Longest wait for the acknowledged messages to be readable (the consume queues are built asynchronously).
READ_TIMEOUT_S = 10.0
#: Set to replay a run: the seed picks the kill points and the bodies' padding (printed by every run).
SEED_ENV = "BROKER_CRASH_SEED"
TOTAL_BUDGET_S = 30.0


@dataclasses.dataclass(frozen=True)
class Ack:
    queue_id: int
    queue_offset: int
    body: bytes

    def __str__(self) -> str:
        return f"queue {self.queue_id} @ {self.queue_offset}: {self.body[:SHOWN]!r}"


class CrashBroker:
    """The broker under test: always the same store, config and port, so a restart is the same broker.

    Not :func:`python_servers.start_broker`, which picks a new port on each call and has no flush setting;
    the processes are still :class:`Launch` processes (own process group, stopped by pid at the end).
    """

    def __init__(self, launch: Launch, namesrv: str) -> None:
        self.launch = launch
        self.port = free_port()
        self.store = launch.work_dir / "broker-store"
        settings = configs.broker_properties(
            listen_port=self.port,
            namesrv_addr=namesrv,
            store_dir=str(self.store),
            extra={"listenHost": "127.0.0.1", "flushDiskType": "SYNC_FLUSH"},
        )
        self.settings = settings
        config = configs.write_properties(launch.work_dir / "crash-broker.conf", settings)
        self.argv = [
            sys.executable,
            "-m",
            "cli.main",
            "broker",
            "--config",
            str(config),
            "--store",
            str(self.store),
            "--namesrv",
            namesrv,
            "--host",
            "127.0.0.1",
            "--broker-ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--cluster",
            settings["brokerClusterName"],
            "--broker-name",
            settings["brokerName"],
            "--flush",
            "SYNC",
        ]
        self.starts = 0
        self.current: ManagedProcess | None = None
        #: Every process any incarnation of the broker had (checked gone at the end).
        self.seen: set[ProcessId] = set()

    def start(self) -> ManagedProcess:
        self.starts += 1
        process = self.launch.process(
            f"broker-{self.starts}", self.argv, env=python_env(), cwd=REPO_ROOT, grace_s=GRACE_S
        )
        self.seen.update(process.pids)
        self.current = process
        return process

    def sigkill(self) -> None:
        """SIGKILL every process of the current broker by pid; wait until ``os.kill(pid, 0)`` finds none."""
        process = self.current
        assert process is not None and not process.exited(), "the broker died before it was killed"
        members = process.running()
        self.seen.update(members)
        assert members, "the broker has no running process to kill"
        for member in members:
            os.kill(member.pid, signal.SIGKILL)
        process.popen.wait(timeout=10)
        assert process.popen.returncode == -signal.SIGKILL, f"broker exit {process.popen.returncode}"
        assert wait_until(lambda: all(is_gone(p) for p in members), time.monotonic() + 10), (
            f"killed broker processes still exist: {[p for p in members if not is_gone(p)]}"
        )
        self.current = None

    def check_alive(self) -> None:
        process = self.current
        if process is not None:
            process.track_group()
            self.seen.update(process.pids)
            assert not process.exited(), f"the broker exited by itself: {process.describe()}"


class Senders:
    """Producer tasks sending bodies ``crash-<seq>`` (unique, random padding) without retries."""

    def __init__(self, producer: Producer, topic: str, rng: random.Random) -> None:
        self.producer = producer
        self.topic = topic
        self.rng = rng
        self.next_seq = 0
        self.sent: set[bytes] = set()
        self.acks: list[Ack] = []
        self.failures = 0
        self.errors: list[BaseException] = []
        self.stop = asyncio.Event()

    def _body(self) -> bytes:
        seq = self.next_seq
        self.next_seq += 1
        return b"crash-%08d:" % seq + b"x" * self.rng.randrange(0, 300)

    async def run(self) -> None:
        while not self.stop.is_set():
            body = self._body()
            self.sent.add(body)
            try:
                result = await self.producer.send(Message(self.topic, body))
            except (ProducerError, OSError, TimeoutError) as exc:
                self.failures += 1
                log.debug("send of %r failed: %r", body[:16], exc)
                await asyncio.sleep(FAILED_SEND_PAUSE_S)
                continue
            except BaseException as exc:  # anything else is a bug: end the test with it
                self.errors.append(exc)
                raise
            self.acks.append(Ack(result.message_queue.queue_id, result.queue_offset, body))

    async def wait_for_acks(self, count: int, what: str, check: Callable[[], None]) -> None:
        """Until ``count`` sends in all have been acknowledged (or a sender failed unexpectedly)."""
        await until(lambda: len(self.acks) >= count or bool(self.errors), ACKS_TIMEOUT_S, what, check)
        assert not self.errors, f"a sender failed: {self.errors!r}"

    async def wait_for_failure(self) -> None:
        """Until one more send has failed than now (the broker is down: sends must fail, not hang)."""
        failed = self.failures
        await until(lambda: self.failures > failed, 5.0, "a send failing while the broker is down")


async def until(
    condition: Callable[[], bool], timeout_s: float, what: str, check: Callable[[], None] | None = None
) -> None:
    """Poll ``condition()`` until it holds (calling ``check()`` each round), or fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if check is not None:
            check()
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not so within {timeout_s:.0f} s")
        await asyncio.sleep(CONDITION_POLL_S)


async def read_with_pull_consumer(namesrv: str, topic: str, ends: dict[int, int]) -> list[MessageExt]:
    """Every queue from offset 0 to ``ends[queue_id]`` through a PullConsumer (assign, seek, poll)."""
    found: dict[int, list[MessageExt]] = {queue_id: [] for queue_id in ends}
    consumer = PullConsumer(
        unique_name("crash-read"),
        namesrv,
        consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        auto_commit=False,
    )
    async with consumer:
        queues: list[MessageQueue] = await consumer.fetch_message_queues(topic)
        assert sorted(q.queue_id for q in queues) == sorted(ends), f"queues {queues} vs read-back {ends}"
        consumer.assign(queues)
        for queue in queues:
            assert await consumer.max_offset(queue) == ends[queue.queue_id]
            await consumer.seek(queue, 0)
        deadline = time.monotonic() + 10.0
        while any(len(found[q]) < end for q, end in ends.items()):
            remaining = deadline - time.monotonic()
            counts = {queue_id: len(messages) for queue_id, messages in found.items()}
            assert remaining > 0, f"PullConsumer read {counts} of {ends} within 10 s"
            for message in await consumer.poll(timeout=min(remaining, 1.0)):
                found[message.queue_id].append(message)
    return [message for queue_id in sorted(found) for message in found[queue_id]]


async def scenario(namesrv: str, broker: CrashBroker, rng: random.Random) -> dict[str, int]:
    topic = unique_name("CrashTopic")
    kills = 0
    async with Producer(unique_name("crash-pg"), namesrv, retry_times=0, send_timeout_ms=3000) as producer:
        senders = Senders(producer, topic, rng)
        tasks = [asyncio.create_task(senders.run()) for _ in range(SENDERS)]
        try:
            for _ in range(KILLS):
                wanted = rng.randrange(*ACKS_BEFORE_KILL)
                await senders.wait_for_acks(
                    len(senders.acks) + wanted,
                    f"{wanted} acknowledgements after start {broker.starts}",
                    broker.check_alive,
                )
                broker.sigkill()
                kills += 1
                log.info("kill %d after %d acknowledgements", kills, len(senders.acks))
                # Let the producer meet the dead broker: sends fail and must not count.
                await senders.wait_for_failure()
                await asyncio.to_thread(broker.start)
            await senders.wait_for_acks(
                len(senders.acks) + ACKS_AFTER_LAST_RESTART,
                f"{ACKS_AFTER_LAST_RESTART} acknowledgements after the last restart",
                broker.check_alive,
            )
        finally:
            senders.stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
        assert not senders.errors, f"a sender failed: {senders.errors!r}"
    broker.check_alive()

    acks = senders.acks
    assert len({ack.body for ack in acks}) == len(acks), "one body acknowledged twice"
    try:
        stored = await read_topic_raw(namesrv, topic, len(acks), timeout_s=READ_TIMEOUT_S)
    except ReadBackError as exc:  # fewer than acknowledged: read what there is, and name what is missing
        log.error("%s", exc)
        stored = await read_topic_raw(namesrv, topic, 0)
    by_queue: dict[int, list[MessageExt]] = {}
    for message in stored:
        by_queue.setdefault(message.queue_id, []).append(message)
    for queue_id, messages in by_queue.items():
        offsets = [m.queue_offset for m in messages]
        assert offsets == list(range(len(messages))), f"queue {queue_id}: offsets not contiguous from 0"
        bodies = [m.body for m in messages]
        assert len(set(bodies)) == len(bodies), f"queue {queue_id} holds a body twice"
    all_bodies = [m.body for m in stored]
    assert len(set(all_bodies)) == len(all_bodies), "a body is stored in two queues (sent once, no retries)"
    assert set(all_bodies) <= senders.sent, "a stored body the test never sent"
    for ack in acks:
        messages = by_queue.get(ack.queue_id, [])
        assert ack.queue_offset < len(messages), f"acknowledged {ack} is missing"
        found = messages[ack.queue_offset].body
        assert found == ack.body, f"acknowledged {ack} is not there: {found[:SHOWN]!r} is"

    ends = {queue_id: len(messages) for queue_id, messages in by_queue.items()}
    via_consumer = await read_with_pull_consumer(namesrv, topic, ends)
    assert [(m.queue_id, m.queue_offset, m.body) for m in via_consumer] == [
        (m.queue_id, m.queue_offset, m.body) for m in stored
    ], "the PullConsumer read something else than plain PULL_MESSAGE"
    return {
        "acknowledged": len(acks),
        "pulled": len(stored),
        "failed_sends": senders.failures,
        "kills": kills,
        "queues": len(by_queue),
    }


def test_sigkilled_sync_flush_broker_keeps_every_acknowledged_message(tmp_path: Path) -> None:
    started = time.monotonic()
    seed = int(os.environ.get(SEED_ENV) or random.randrange(1 << 32))
    rng = random.Random(seed)
    launch = Launch(tmp_path / "work", tmp_path / "logs")
    broker: CrashBroker | None = None
    try:
        namesrv = start_namesrv(launch).addr
        broker = CrashBroker(launch, namesrv)
        broker.start()
        counts = asyncio.run(scenario(namesrv, broker, rng))
    except BaseException:
        log.error("broker crash test failed with %s=%d; logs in %s", SEED_ENV, seed, launch.logs_dir)
        raise
    finally:
        leftovers = launch.stop()
    assert not leftovers, f"processes left behind: {leftovers}"
    every = {p for process in launch.processes for p in process.pids}
    if broker is not None:
        every |= broker.seen
    for process in every:
        try:
            os.kill(process.pid, 0)
        except ProcessLookupError:
            continue
        assert is_gone(process), f"pid {process.pid} still exists"
    elapsed = time.monotonic() - started
    print(f"broker crash test ({SEED_ENV}={seed}): {counts}, {elapsed:.1f} s")
    assert elapsed < TOTAL_BUDGET_S, f"took {elapsed:.1f} s"
