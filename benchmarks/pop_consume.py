"""POP receive-and-ack throughput on one Apache 5.x broker: the project's POP consumers against Apache's Java
push consumer in POP mode, in the same run.

    .venv/bin/python -m benchmarks.pop_consume [--release 5.3.3] [--messages 20000] [--repeat 3]

Apache's NameServer and Broker of ``--release`` run as in the integration suite (``binaries-<release>``). For
each figure a fresh topic of 8 queues is pre-filled with N messages of 100 bytes and a fresh group is set to
POP (``Admin.set_consume_mode``). Then one consumer reads them all and each message is acknowledged:

* ``java push (POP)``: Apache's ``DefaultMQPushConsumer`` with ``setClientRebalance(false)``, from the
  release's own client (the suite's Java peer, ``push-consume --server-rebalance``); timed from its
  ``ready`` line to its N-th ``message`` line. The peer prints each message as a JSON line, which this
  process reads.
* ``project push (POP)``: ``PushConsumer(client_rebalance=False)``, from ``start`` returning to the N-th
  handled message (acks go out as the handler returns, as Java's).
* ``project simple``: ``SimpleConsumer``, ``receive(32)`` then ``ack`` of the batch (BATCH_ACK_MESSAGE), in
  8 concurrent loops; from ``start`` returning to the N-th message acknowledged (loops then still waiting
  on the empty topic are cancelled).

Each consumer counts distinct messages (a redelivery does not count twice). The figures are the median of
``--repeat`` rounds (the best is shown too); ratios are the project's medians over Java's. Both sides run
on the same two cores as the broker, so the figures are for comparison, not for capacity planning.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
import uuid
from collections.abc import Callable

from admin import Admin
from benchmarks import _clusters
from benchmarks.consumer import prefill
from consumer import ConsumeStatus, MessageExt, PushConsumer, SimpleConsumer
from tests.integration.apache.releases import releases
from tests.integration.java_peer.build import JavaClient

QUEUES = 8
BODY_SIZE = 100
#: A JVM's start on a busy machine, before the Java consumer prints ``ready``.
JAVA_START_S = 90.0
#: Concurrent receive loops of the simple consumer, and the messages each receive asks for.
SIMPLE_LOOPS = 8
RECEIVE_BATCH = 32


async def fresh_topic(namesrv: str, cluster_name: str, count: int) -> tuple[str, str]:
    """A new topic pre-filled with ``count`` messages, and a new group set to POP on it."""
    topic = f"PopBench{uuid.uuid4().hex[:8]}"
    group = f"PopBenchCg{uuid.uuid4().hex[:8]}"
    await _clusters.create_topic(namesrv, cluster_name, topic, QUEUES)
    await prefill(namesrv, count, BODY_SIZE, topic)
    async with Admin(namesrv) as admin:
        await admin.set_consume_mode(topic, group, "POP", cluster=cluster_name)
    return topic, group


def java_rate(client: JavaClient, namesrv: str, topic: str, group: str, count: int) -> float:
    args = [
        "--group",
        group,
        "--topic",
        topic,
        "--count",
        str(count),
        "--from",
        "first",
        "--server-rebalance",
    ]
    peer = client.process("push-consume", args, namesrv=namesrv, timeout=JAVA_START_S + count / 50).start()
    seen: set[str] = set()
    started = finished = 0.0
    try:
        peer.wait_for("ready", JAVA_START_S)
        started = time.perf_counter()
        for event in peer.events():
            if event.get("event") == "message":
                seen.add(str(event.get("msg_id")))
                if len(seen) >= count:
                    finished = time.perf_counter()
                    break
            elif event.get("event") in ("error", "timeout", "done"):
                break
    finally:
        result = peer.finish(timeout=5)
    if len(seen) < count:
        raise RuntimeError(f"the Java POP consumer read {len(seen)} of {count}: {result.describe()}")
    return count / (finished - started)


async def project_push_rate(namesrv: str, topic: str, group: str, count: int) -> float:
    done = asyncio.Event()
    handled: set[str] = set()

    async def handle(messages: list[MessageExt], context: object) -> ConsumeStatus:
        handled.update(m.msg_id for m in messages)  # a redelivery does not count twice
        if len(handled) >= count:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv, consume_from="FIRST_OFFSET", client_rebalance=False)
    consumer.subscribe(topic)
    consumer.register_listener(handle)
    await consumer.start()
    started = time.perf_counter()
    try:
        async with asyncio.timeout(max(120.0, count / 50)):
            await done.wait()
        return count / (time.perf_counter() - started)
    finally:
        await consumer.shutdown()


async def project_simple_rate(namesrv: str, topic: str, group: str, count: int) -> float:
    """Timed to the ``count``-th distinct acknowledged message: the loops still long-polling an empty topic
    then are cancelled, not waited for (their wait is no part of the throughput)."""
    acked: set[str] = set()
    all_acked = asyncio.Event()
    finished = 0.0
    async with SimpleConsumer(group, namesrv, consume_from="FIRST_OFFSET", await_duration=2) as consumer:
        consumer.subscribe(topic)
        started = time.perf_counter()

        async def loop() -> None:
            nonlocal finished
            while not all_acked.is_set():
                messages = await consumer.receive(RECEIVE_BATCH)
                if messages:
                    await consumer.ack(messages)
                    acked.update(m.msg_id for m in messages)
                    if len(acked) >= count and not all_acked.is_set():
                        finished = time.perf_counter()
                        all_acked.set()

        loops = [asyncio.create_task(loop()) for _ in range(SIMPLE_LOOPS)]
        waiter = asyncio.create_task(all_acked.wait())
        try:
            # A loop ends early only by failing: that ends the wait too (its exception is raised below).
            await asyncio.wait(
                [waiter, *loops], timeout=max(120.0, count / 50), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for task in (waiter, *loops):
                task.cancel()
            outcomes = await asyncio.gather(*loops, return_exceptions=True)
        errors = [o for o in outcomes if isinstance(o, Exception)]
        if not all_acked.is_set():
            if errors:
                raise errors[0]
            raise RuntimeError(f"the simple consumer acknowledged {len(acked)} of {count} messages")
        return count / (finished - started)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    fives = [r.version for r in releases() if r.version.startswith("5.")]
    parser.add_argument("--release", default=fives[0] if fives else "5.3.3", help="Apache release (5.x)")
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING)
    release = next((r for r in releases() if r.version == args.release), None)
    if release is None:
        sys.exit(f"unknown release {args.release}; the suite knows {[r.version for r in releases()]}")
    client = JavaClient(release)
    rates: dict[str, list[float]] = {}
    with _clusters.provider_cluster(f"binaries-{release.version}") as cluster:
        namesrv, cluster_name = cluster.namesrv, cluster.cluster_name  # type: ignore[attr-defined]
        print(
            f"POP receive-and-ack, Apache RocketMQ {release.version} broker, {args.messages} messages of "
            f"{BODY_SIZE} B on {QUEUES} queues, median of {args.repeat}",
            flush=True,
        )
        for round_ in range(args.repeat):
            figures: dict[str, Callable[[str, str], float]] = {
                "java push (POP)": lambda t, g: java_rate(client, namesrv, t, g, args.messages),
                "project push (POP)": lambda t, g: asyncio.run(
                    project_push_rate(namesrv, t, g, args.messages)
                ),
                "project simple": lambda t, g: asyncio.run(project_simple_rate(namesrv, t, g, args.messages)),
            }
            for label, measure in figures.items():
                topic, group = asyncio.run(fresh_topic(namesrv, cluster_name, args.messages))
                rate = measure(topic, group)
                rates.setdefault(label, []).append(rate)
                print(f"  round {round_ + 1}: {label:<20} {rate:10,.0f} msg/s", flush=True)
    java = statistics.median(rates["java push (POP)"])
    for label, found in rates.items():
        median = statistics.median(found)
        ratio = "" if label.startswith("java") else f"  ratio {median / java:.2f}"
        print(f"{label:<20} median {median:10,.0f} msg/s  best {max(found):10,.0f}{ratio}")


if __name__ == "__main__":
    main()
