"""Crash safety end to end: a broker, a producer sending, the broker SIGKILLed and restarted; under SYNC
flush, and under ASYNC flush with small commit-log files rolling and retention deleting behind the writes.

A NameServer and a Broker (``rmq broker --flush SYNC`` or ``ASYNC``) run as subprocesses; producer tasks in
the test send messages with unique bodies (a sequence number) without retries, so an acknowledgement means
exactly one stored copy, and record every acknowledged (queue, queue offset, body). After a random number
of acknowledgements the broker is killed with SIGKILL (every process of its group, by pid) and restarted on
the same store and port; sends failing meanwhile are simply not acknowledged. After the last restart every
queue of the topic is read from its first offset three times: with plain PULL_MESSAGE requests
(:func:`read_topic_raw`), with a :class:`consumer.PullConsumer` (assign, seek, poll) and with Apache's Java
consumer, and the three must agree. Then: every acknowledged body is at its acknowledged (queue, offset), no
body appears twice, offsets run contiguously from 0 (from where retention left each queue, in the retention
mode), and every stored body is one the test sent.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from pathlib import Path

import pytest

from consumer import ConsumeFromWhere, MessageQueue, PullConsumer
from producer import Producer
from rocketmq_wire.message import MessageExt
from tests.integration.apache.releases import DEFAULT_RELEASES
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import unique_name
from tests.integration.clusters.processes import is_gone
from tests.integration.clusters.python_servers import start_namesrv
from tests.integration.clusters.readback import ReadBackError, read_topic_raw
from tests.integration.clusters.restartable import RestartableBroker
from tests.integration.clusters.senders import Senders, check_acknowledged, check_java_reads
from tests.integration.java_peer.fixtures import JavaClientFactory

log = logging.getLogger("tests.broker_crash")

KILLS = 3
SENDERS = 4
#: Acknowledgements between a (re)start and the next kill: a random count in this range.
ACKS_BEFORE_KILL = (60, 250)
#: Acknowledgements after the last restart, proving the producer carries on.
ACKS_AFTER_LAST_RESTART = 50
#: Longest wait for the acknowledged messages to be readable (the consume queues are built asynchronously).
READ_TIMEOUT_S = 10.0
#: Set to replay a run: the seed picks the kill points and the bodies' padding (printed by every run).
SEED_ENV = "BROKER_CRASH_SEED"
TOTAL_BUDGET_S = 30.0


async def min_offsets(namesrv: str, topic: str) -> dict[int, int]:
    """Each queue's min offset as the broker reports it (where retention left the queue)."""
    consumer = PullConsumer(unique_name("crash-min"), namesrv, auto_commit=False)
    async with consumer:
        queues: list[MessageQueue] = await consumer.fetch_message_queues(topic)
        return {queue.queue_id: await consumer.min_offset(queue) for queue in queues}


async def read_with_pull_consumer(
    namesrv: str, topic: str, starts: dict[int, int], ends: dict[int, int]
) -> list[MessageExt]:
    """Every queue from ``starts[queue_id]`` to ``ends[queue_id]`` through a PullConsumer (assign, seek,
    poll)."""
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
            await consumer.seek(queue, starts[queue.queue_id])
        deadline = time.monotonic() + 10.0
        while any(len(found[q]) < end - starts[q] for q, end in ends.items()):
            remaining = deadline - time.monotonic()
            counts = {queue_id: len(messages) for queue_id, messages in found.items()}
            assert remaining > 0, f"PullConsumer read {counts} of {ends} within 10 s"
            for message in await consumer.poll(timeout=min(remaining, 1.0)):
                found[message.queue_id].append(message)
    return [message for queue_id in sorted(found) for message in found[queue_id]]


async def scenario(
    namesrv: str, broker: RestartableBroker, rng: random.Random, *, retention: bool
) -> tuple[list[MessageExt], dict[str, int]]:
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
    if retention:
        # Retention deletes every flushed file but the newest: once the last flush (500 ms) and clean pass
        # (200 ms) are over, what it left stays, and one pass reads it.
        await asyncio.sleep(RETENTION_SETTLES_S)
        stored = await read_topic_raw(namesrv, topic, 1, timeout_s=READ_TIMEOUT_S)
    else:
        try:
            stored = await read_topic_raw(namesrv, topic, len(acks), timeout_s=READ_TIMEOUT_S)
        except ReadBackError as exc:  # fewer than acknowledged: read what there is, name what is missing
            log.error("%s", exc)
            stored = await read_topic_raw(namesrv, topic, 0)
    starts = await min_offsets(namesrv, topic) if retention else {}
    by_queue = check_acknowledged(acks, stored, senders.sent, retained_from=starts)
    retained = sum(1 for ack in acks if ack.queue_offset >= starts.get(ack.queue_id, 0))
    # Retention never deletes the newest commit-log file, and the last acknowledgements are in it.
    assert retained > 0, "retention deleted every acknowledged message, the newest file's too"

    queue_ids = set(by_queue) | set(starts)
    firsts = {queue_id: starts.get(queue_id, 0) for queue_id in queue_ids}
    ends = {queue_id: firsts[queue_id] + len(by_queue.get(queue_id, [])) for queue_id in queue_ids}
    via_consumer = await read_with_pull_consumer(namesrv, topic, firsts, ends)
    assert [(m.queue_id, m.queue_offset, m.body) for m in via_consumer] == [
        (m.queue_id, m.queue_offset, m.body) for m in stored
    ], "the PullConsumer read something else than plain PULL_MESSAGE"
    return stored, {
        "acknowledged": len(acks),
        "pulled": len(stored),
        "failed_sends": senders.failures,
        "kills": kills,
        "queues": len(by_queue),
        "kept_by_retention": retained,
    }


#: ASYNC_FLUSH with 64 KiB commit-log files (a roll every ~200 messages) and retention deleting every
#: flushed file but the newest every 200 ms: kills land in rolls and in deletions. A process crash loses no
#: page-cache bytes, so every acknowledged message retention has not deleted must be there.
ROLLS_AND_RETENTION = {
    "mappedFileSizeCommitLog": str(64 * 1024),
    "mappedFileSizeConsumeQueue": str(100 * 20),
    "fileReservedTime": "0",
    "deleteWhen": ";".join(f"{hour:02d}" for hour in range(24)),
    "cleanResourceInterval": "200",
}


#: Longer than a flush interval and a clean interval of :data:`ROLLS_AND_RETENTION` together.
RETENTION_SETTLES_S = 1.5


@pytest.mark.parametrize("mode", ["sync-flush", "async-flush-rolls-retention"])
def test_sigkilled_broker_keeps_every_acknowledged_message(
    tmp_path: Path, mode: str, java_client: JavaClientFactory
) -> None:
    java = java_client(DEFAULT_RELEASES[-1])
    started = time.monotonic()
    seed = int(os.environ.get(SEED_ENV) or random.randrange(1 << 32))
    rng = random.Random(seed)
    launch = Launch(tmp_path / "work", tmp_path / "logs")
    broker: RestartableBroker | None = None
    try:
        namesrv = start_namesrv(launch).addr
        retention = mode == "async-flush-rolls-retention"
        if retention:
            broker = RestartableBroker(launch, namesrv, flush="ASYNC", extra=ROLLS_AND_RETENTION)
        else:
            broker = RestartableBroker(launch, namesrv)
        broker.start()
        stored, counts = asyncio.run(scenario(namesrv, broker, rng, retention=retention))
        counts["read_by_java"] = check_java_reads(java, namesrv, stored[0].topic, stored)
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
    print(f"broker crash test, {mode} ({SEED_ENV}={seed}): {counts}, {elapsed:.1f} s")
    assert elapsed < TOTAL_BUDGET_S, f"took {elapsed:.1f} s"
