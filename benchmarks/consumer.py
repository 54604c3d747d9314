"""Consumer throughput: messages per second through the project's PushConsumer and through Apache's C++
PushConsumer (the ``tests/integration/cpp_peer`` runner), in the same run, from the same broker.

    .venv/bin/python -m benchmarks.consumer [--messages 20000] [--body-size 100] [--queues 8] [--skip-cpp]

A NameServer and the project's Broker run in this process, on a thread and event loop of their own, on a
temporary store; the topic is pre-filled with N messages. Each consumer then joins a fresh group (reading
from the first offset) and is timed from the moment its ``start`` returned to its N-th handled message, so
both figures include the first rebalance and long-poll round trips but not process or library start-up.

Read the figures with their set-ups in mind: the Python consumer shares this process (and its GIL) with
the broker; the C++ consumer runs in its own process, but every message crosses the peer's Python ctypes
callback and is printed as a JSON line, which the runner parses.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from consumer import ConsumerConfig, ConsumeStatus, MessageExt, PushConsumer
from consumer.testing import LocalCluster
from producer import Message, Producer, ProducerConfig

#: The repository root, for the C++ client's test harness (``tests.integration.cpp_peer``).
REPO_ROOT = Path(__file__).resolve().parents[1]
TOPIC = "ConsumerBenchmark"
PREFILL_BATCH = 64
PREFILL_IN_FLIGHT = 8


@contextlib.contextmanager
def cluster_thread(store: Path, queues: int) -> Iterator[str]:
    """The NameServer and Broker on their own thread and loop; yields the NameServer address."""
    ready = threading.Event()
    state: dict[str, object] = {}

    async def serve() -> None:
        stop = asyncio.Event()
        state["loop"] = asyncio.get_running_loop()
        state["stop"] = stop
        try:
            async with LocalCluster(store) as cluster:
                await cluster.create_topic(TOPIC, queues)
                state["address"] = cluster.address
                ready.set()
                await stop.wait()
        except BaseException as exc:
            state["error"] = exc
            ready.set()
            raise

    thread = threading.Thread(target=lambda: asyncio.run(serve()), name="benchmark-cluster", daemon=True)
    thread.start()
    ready.wait()
    if "error" in state:
        raise RuntimeError(f"the cluster did not start: {state['error']}")
    try:
        yield str(state["address"])
    finally:
        loop = state["loop"]
        stop = state["stop"]
        assert isinstance(loop, asyncio.AbstractEventLoop) and isinstance(stop, asyncio.Event)
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)


async def prefill(namesrv: str, count: int, body_size: int, topic: str = TOPIC) -> None:
    """``count`` messages of ``body_size`` bytes into ``topic``, in batches, several in flight."""
    body = b"x" * body_size
    async with Producer(
        "ConsumerBenchmarkFill", namesrv, config=ProducerConfig(send_timeout_ms=30_000)
    ) as producer:
        sizes = [PREFILL_BATCH] * (count // PREFILL_BATCH) + (
            [count % PREFILL_BATCH] if count % PREFILL_BATCH else []
        )
        pending = iter(sizes)

        async def worker() -> None:
            for size in pending:
                await producer.send_batch([Message(topic, body) for _ in range(size)])

        await asyncio.gather(*(worker() for _ in range(PREFILL_IN_FLIGHT)))


async def python_rate(namesrv: str, count: int, workers: int) -> tuple[float, float]:
    """(messages per second, seconds) of the project's PushConsumer handling ``count`` messages."""
    done = asyncio.Event()
    handled = 0

    async def handle(messages: list[MessageExt], context: object) -> ConsumeStatus:
        nonlocal handled
        handled += len(messages)
        if handled >= count:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        f"bench-py-{uuid.uuid4().hex[:8]}",
        namesrv,
        consume_from="FIRST_OFFSET",
        config=ConsumerConfig(consume_workers=workers),
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(handle)
    await consumer.start()
    started = time.perf_counter()
    try:
        await asyncio.wait_for(done.wait(), timeout=max(120.0, count / 100))
        elapsed = time.perf_counter() - started
    finally:
        await consumer.shutdown()
    return count / elapsed, elapsed


def cpp_rate(namesrv: str, count: int) -> tuple[float, float]:
    """(messages per second, seconds) of the C++ PushConsumer, from its ``ready`` line to its N-th message."""
    from tests.integration.cpp_peer import runner

    reason = runner.binding_unavailable_reason()
    if reason is not None:
        raise RuntimeError(reason)
    timeout = max(120.0, count / 100)
    peer = runner.start_push_consumer(
        namesrv, f"bench-cpp-{uuid.uuid4().hex[:8]}", TOPIC, count, timeout=timeout
    )
    try:
        peer.wait_for("ready", timeout)
        started = time.perf_counter()
        seen = 0
        for event in peer.events(timeout):
            if event.get("event") == "message" and event.get("consume_status") == "CONSUME_SUCCESS":
                seen += 1
                if seen >= count:
                    break
            elif event.get("event") in ("error", "timeout"):
                raise RuntimeError(f"the C++ consumer failed: {event}")
        elapsed = time.perf_counter() - started
        if seen < count:
            raise RuntimeError(f"the C++ consumer handled {seen} of {count} messages")
    finally:
        result = peer.finish()
    if not result.ok:
        raise RuntimeError(result.describe())
    return count / elapsed, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=20_000, help="messages pre-filled and consumed")
    parser.add_argument("--body-size", type=int, default=100)
    parser.add_argument("--queues", type=int, default=8)
    parser.add_argument("--workers", type=int, default=20, help="handler calls at once (consumeThreadMax)")
    parser.add_argument("--skip-cpp", action="store_true", help="only the project's consumer")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(
        f"{args.messages} messages of {args.body_size} B in {args.queues} queues, project Broker in-process, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    with (
        tempfile.TemporaryDirectory(prefix="consumer-bench-") as store,
        cluster_thread(Path(store), args.queues) as namesrv,
    ):
        began = time.perf_counter()
        asyncio.run(prefill(namesrv, args.messages, args.body_size))
        print(f"pre-filled in {time.perf_counter() - began:.1f} s")
        py, py_s = asyncio.run(python_rate(namesrv, args.messages, args.workers))
        print(f"project PushConsumer: {py:>10,.0f} msg/s  ({args.messages} in {py_s:.2f} s)")
        if args.skip_cpp:
            return
        try:
            cpp, cpp_s = cpp_rate(namesrv, args.messages)
        except RuntimeError as exc:
            print(f"C++ PushConsumer:     not measured ({exc})")
            return
        print(f"C++ PushConsumer:     {cpp:>10,.0f} msg/s  ({args.messages} in {cpp_s:.2f} s)")
        print(f"ratio project / C++:  {py / cpp:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
