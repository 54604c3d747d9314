"""The project's NameServer and Broker against Apache's, under the same loads from the same clients: one
table of figures and ratios (project / Apache).

    .venv/bin/python -m benchmarks.servers [--release 4.9.7] [--warmup 30] [--seconds 5] [--repeat 3]
                                           [--sizes 100,1024] [--flush ASYNC,SYNC] [--messages 20000]
                                           [--memory-messages 1000000] [--memory-topics 10000]
                                           [--sides project,apache]
                                           [--loads ingest,delivery,namesrv,memory,timer,pop]
                                           [--release5 5.5.0] [--timer-lead 10]
                                           [--jvm-nmt] [--logs DIR] [--quick]

Each side is a NameServer and a Broker in processes of their own, bound to 127.0.0.1 (Apache's 4.x servers
have no setting for that and listen on every interface), with their stores in a temporary folder: the
project's ``rmq namesrv`` / ``rmq broker`` and Apache's ``NamesrvStartup`` / ``BrokerStartup`` of
``--release``, started by the integration suite's launchers (``tests/integration/clusters/python_servers.py``,
``tests/integration/apache/servers.py``: Apache's jars come from Maven Central into the suite's cache and run
with ``java -cp``, with the suite's small heaps, ``-Xmx384m -XX:MaxDirectMemorySize=512m`` for a broker).
Both brokers read the same ``broker.conf`` settings (``tests/integration/clusters/configs.py``: 64 MiB
commit-log files, ``waitTimeMillsInSendQueue=1000`` …) plus ``flushDiskType``. The default release is 4.9.8
when the suite's launcher serves it, else the newest 4.9.x full release it knows (4.9.7: Maven Central has
no 4.9.8 broker); the project's NameServer then answers as Apache's 4.9.8 NameServer does. The clients run in
this process; every process started is stopped by pid when its phase ends (or the run is interrupted).

Figures (best and median of ``--repeat`` rounds, except memory, measured once):

* ``ingest FLUSH SIZE B, single x64``: messages per second the broker acknowledged, the project's
  ``Producer.send`` with 64 sends in flight (``--in-flight``) for ``--seconds``; ``batch 32 x8``: the same
  with ``Producer.send_batch`` of 32 messages (``--batch``), 8 batches in flight (``--batch-in-flight``).
  One broker per flush mode of ``--flush`` (``flushDiskType`` ASYNC_FLUSH / SYNC_FLUSH), for each of
  ``--sizes``. A send that fails or is stored with a status other than SEND_OK is not counted (a note names
  how many there were).
* ``delivery, project lite-pull`` / ``delivery, Java lite-pull``: messages per second a consumer of a fresh
  group reads from the first offset until it has all ``--messages`` stored messages (``--delivery-size``
  bytes each, in 8 queues, pre-filled by the project's producer), timed from the consumer's start to its
  last message: the project's ``PullConsumer`` (``poll``), and Apache's ``DefaultLitePullConsumer`` of the
  release's client (``tests/integration/java_peer``, ``pull-consume``; a JVM of its own with the suite's
  client options, C1 only; it prints every message as a JSON line that this process reads, which the figure
  includes). Both pull 32 messages per request. On the broker of the first flush mode.
* ``delivery, project push (live)`` / ``delivery, Java push (live)``: long polling. A push consumer of a
  fresh group subscribes to a fresh topic (8 queues, one message in it, so the producer knows the route)
  and reads that message; its pulls are then held by the broker, which answers them as messages arrive.
  Then the project's producer stores ``--messages`` messages of ``--delivery-size`` bytes in batches of
  ``--batch``, ``--batch-in-flight`` in flight; the figure is those messages over the time from the first
  send to the last message handled. The project's ``PushConsumer`` runs in this process (beside the
  producer); Apache's ``DefaultMQPushConsumer`` is the Java peer's ``push-consume`` (a JVM of its own that
  prints every message as a JSON line, read here while a thread sends). One unmeasured round of the
  project's consumer first, so the JVM broker has compiled the held-pull path.
* ``namesrv routes, N in flight``: GET_ROUTEINFO_BY_TOPIC answers per second with N = 4, 16, 64 requests
  outstanding on one connection (as ``benchmarks/nameserver.py``, but against the NameServer process of
  the running cluster), asking in turn for the routes of the two topics above.
* ``memory``: a fresh broker per side whose ``config/topics.json`` holds ``--memory-topics`` topics of
  ``--memory-queues`` queues (1: both brokers keep a file open per consume-queue file, so 10^4 topics of 8
  queues each need more descriptors than a default ``ulimit -n``) before it starts; then
  ``--memory-messages`` messages of ``--memory-size`` bytes are stored in batches of 32, batch k into
  topic k mod T. Printed: the broker process's resident size (``VmRSS`` of
  ``/proc/<pid>/status``) once registered and again after storing (and a few seconds' rest), the latter's
  anonymous and file-backed parts (``RssAnon``, ``RssFile``: mapped store files count there) and the peak
  (``VmHWM``); for Apache's JVM also heap used and committed and metaspace used (``jcmd <pid>
  GC.heap_info``). A JVM reports its direct memory only with native memory tracking on: ``--jvm-nmt``
  starts that broker with ``-XX:NativeMemoryTracking=summary`` (through ``JDK_JAVA_OPTIONS``) and adds
  NMT's "Other" committed (``jcmd <pid> VM.native_memory summary``: ``Unsafe.allocateMemory``, i.e.
  direct buffers, Netty's pooled ones included); NMT's own bookkeeping then adds to that broker's RSS,
  so it is off by default.

The timer and pop rows need a 5.x broker: they run on a broker of their own per side, Apache's of
``--release5`` (5.5.0 by default) and the project's (its NameServer answering as 5.3.3's), in the first
flush mode of ``--flush``, with the project's producer and simple consumer on both:

* ``timer SIZE B, x64: in`` / ``: delivered``: a fresh topic (8 queues); ``--messages`` timer messages of
  ``--delivery-size`` bytes, all with one delivery time (``deliver_time_ms``) half a second into a whole
  second ahead, so both brokers (1,000 ms precision) put them in one slot; single sends, 64 in flight.
  ``in`` is the acknowledged sends per second; ``delivered`` is those messages over the time from the slot
  to when the topic's consume queues hold them all (the topic's stored count, read every 20 ms: what a
  consumer can read). The first round's slot is ``--timer-lead`` seconds ahead (10), later ones far
  enough for the sends to finish first at the previous round's pace; a note says when they did not.
* ``pop 100 B, simple receive 32+ack x8``: a fresh topic (8 queues) pre-filled with ``--messages`` messages,
  read by the project's ``SimpleConsumer`` of a fresh group: ``receive(32)`` then a batch ack, in 8
  concurrent loops (``benchmarks/pop_consume.py``'s), from its start to the last message acknowledged.

Each is measured ``--repeat`` times after one unmeasured round (for the JIT). With each, ``broker CPU``:
the CPU time (user and system, ``/proc/<pid>/stat``) the broker process used during the round, in ms per
1,000 messages (sends and deliveries of the timer round; receives and acks of the pop round). On a busy
machine it is the steadier figure: a broker that needs less CPU per message does more with its share.
Its ratio, like the memory rows', is above 1 when the project's broker used more.

Warm-up, for the JVMs' JIT: before its figures are measured, each broker gets ``--warmup`` seconds of the
ingest rows (shared among them, in turn) and, where delivery is measured, ``--warmup`` seconds of repeated
project lite-pull reads of the stored messages; each NameServer ``--warmup`` seconds of 64 route requests
in flight. The memory brokers get none (nothing there is timed). ``--quick`` is a smoke
run: warm-up 2 s, 2 s per figure, 1 round, 2,000 delivered messages, 20,000 messages in 100 topics for
memory (options given explicitly still win).

Ratios are project / Apache: above 1 the project's server did more per second, or (memory rows) used more.
Under the table, the timer and pop throughput rows are listed again against issue 35's goal (the project's
at least 0.8 of Apache's), met or not by the median ratio. The machine's other load skews every figure:
compare them from one quiet run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from admin import Admin, TopicNotFoundError, UnreachableError
from benchmarks import _clusters, pop_consume
from consumer import ConsumeStatus, MessageExt, PullConsumer, PushConsumer
from producer import Message, Producer, ProducerError, SendStatus
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.headers.namesrv import GetRouteInfoRequestHeader
from rocketmq_wire.transport import RemotingClient
from tests.integration.apache import jvm
from tests.integration.apache import servers as apache_servers
from tests.integration.apache.releases import ApacheRelease, full_releases, releases
from tests.integration.clusters import python_servers
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import BROKER_NAME, CLUSTER_NAME, ProviderUnavailable
from tests.integration.clusters.probe import wait_for_broker_sync
from tests.integration.clusters.providers import (
    JAVA_REGISTER_S,
    PYTHON_REGISTER_S,
    java_unavailable,
)
from tests.integration.cpp_peer.runner import PeerFailed
from tests.integration.java_peer.build import JavaClient

SIDES = ("project", "apache")
LOADS = ("ingest", "delivery", "namesrv", "memory", "timer", "pop")
INGEST_TOPIC = "ServersBenchIngest"
DELIVERY_TOPIC = "ServersBenchDelivery"
MEMORY_TOPIC = "ServersBenchMemory"
LIVE_TOPIC = "ServersBenchLive"
TIMER_TOPIC = "ServersBenchTimer"
QUEUES = 8
#: After a push consumer read the topic's first message, before sending: its pulls reach the broker and wait.
LIVE_SETTLE_S = 1.0
#: Batches in flight while pre-filling the delivery topic and storing the memory load.
FILL_IN_FLIGHT = 8
ROUTE_IN_FLIGHT = (4, 16, 64)
#: Pause between the memory load's last acknowledgement and reading the broker's resident size.
MEMORY_REST_S = 3.0
#: A JVM's start on a busy machine, before the Java consumer prints ``ready``.
JAVA_START_S = 90.0
SEND_TIMEOUT_MS = 10_000
PREFERRED_RELEASE = "4.9.8"
#: The release the timer and POP rows compare against (both need a 5.x broker).
PREFERRED_RELEASE_5 = "5.5.0"
#: How often the timer row reads the topic's stored count while the due messages come out.
TIMER_POLL_S = 0.02

#: (normal, --quick) defaults of the options --quick shrinks.
DEFAULTS: dict[str, tuple[float, float]] = {
    "warmup": (30, 2),
    "seconds": (5, 2),
    "repeat": (3, 1),
    "messages": (20_000, 2_000),
    "memory_messages": (1_000_000, 20_000),
    "memory_topics": (10_000, 100),
    "timer_lead": (10, 3),
}


# -------------------------------------------------------------------------------------------- results


#: Units of figures where less is better (the "best" of a row is its least).
LOWER_IS_BETTER = ("MiB", "ms/k")
#: Issue 35's goal for the throughput rows of these loads: the project's at least this share of Apache's.
GOAL_LOADS = ("timer", "pop")
GOAL_RATIO = 0.8


@dataclasses.dataclass
class Row:
    label: str
    unit: str
    values: dict[str, list[float]] = dataclasses.field(default_factory=dict)


class Results:
    """Figures by row (in the order first recorded) and side; notes printed under the table."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}
        self.notes: list[str] = []

    def add(self, label: str, unit: str, side: str, value: float) -> None:
        row = self.rows.setdefault(label, Row(label, unit))
        row.values.setdefault(side, []).append(value)
        print(f"  {side:<8} {label}: {value:,.1f} {unit}", flush=True)

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"  note: {text}", flush=True)

    def print_table(self, header: str) -> None:
        width = max([len(row.label) for row in self.rows.values()] + [24])
        print()
        print(header)
        print(
            f"{'figure':<{width}} {'unit':<6}{'project best':>14}{'median':>9}{'apache best':>14}"
            f"{'median':>9}{'ratio best':>12}{'median':>8}"
        )
        order = {name: index for index, name in enumerate(LOADS)}
        rows = sorted(self.rows.values(), key=lambda row: order.get(row.label.split()[0].rstrip(":"), 9))
        for row in rows:
            line = f"{row.label:<{width}} {row.unit:<6}"
            for side in SIDES:
                values = row.values.get(side)
                if not values:
                    line += f"{'-':>14}{'-':>9}"
                elif len(values) == 1:
                    line += f"{_figure(values[0]):>14}{'':>9}"
                else:
                    best = min(values) if row.unit in LOWER_IS_BETTER else max(values)
                    line += f"{_figure(best):>14}{_figure(statistics.median(values)):>9}"
            ours, theirs = row.values.get("project"), row.values.get("apache")
            if ours and theirs:
                pick = min if row.unit in LOWER_IS_BETTER else max
                line += f"{pick(ours) / pick(theirs):>12.2f}"
                if len(ours) > 1 or len(theirs) > 1:
                    line += f"{statistics.median(ours) / statistics.median(theirs):>8.2f}"
            print(line)
        for text in self.notes:
            print(f"note: {text}")
        self.print_goals()
        sys.stdout.flush()

    def print_goals(self) -> None:
        """The rows with a goal, each with its ratios and whether it is met (by the median where there are
        several rounds: one lucky round does not meet it)."""
        lines: list[str] = []
        for row in self.rows.values():
            ours, theirs = row.values.get("project"), row.values.get("apache")
            if row.label.split()[0] not in GOAL_LOADS or row.unit != "msg/s" or not ours or not theirs:
                continue
            best = max(ours) / max(theirs)
            median = statistics.median(ours) / statistics.median(theirs)
            verdict = "met" if median >= GOAL_RATIO else "NOT met"
            lines.append(f"  {row.label:<44} best {best:5.2f}   median {median:5.2f}   {verdict}")
        if lines:
            print()
            print(f"goal: project / Apache >= {GOAL_RATIO} in messages per second (judged by the median)")
            print("\n".join(lines))


def _figure(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


# -------------------------------------------------------------------------------------------- servers


@dataclasses.dataclass(frozen=True)
class Servers:
    side: str
    namesrv: str
    broker: str
    broker_pid: int
    label: str


def _store_dir(side: str, work_dir: Path) -> Path:
    """Where the suite's launchers put the broker's store (``python_servers.start_broker``: the work folder's
    ``python-broker-store``; ``apache.servers.start_broker``: ``apache-broker/store``)."""
    return work_dir / "python-broker-store" if side == "project" else work_dir / "apache-broker" / "store"


@contextlib.contextmanager
def _environment(name: str, value: str | None) -> Iterator[None]:
    """``os.environ[name]`` is ``value`` inside the block (unchanged when ``value`` is None)."""
    if value is None:
        yield
        return
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


def _namesrv_profile(release: ApacheRelease) -> str:
    """The Apache NameServer the project's NameServer answers as, beside a broker of ``release``."""
    return "4.9.8" if release.major == 4 else "5.3.3"


@contextlib.contextmanager
def running_servers(
    side: str,
    release: ApacheRelease,
    flush: str,
    logs_root: Path | None,
    prepare: Callable[[Path], None] | None = None,
    jvm_options: str | None = None,
) -> Iterator[Servers]:
    """A NameServer and a Broker (``flushDiskType`` ``flush``_FLUSH) of ``side``, each in its own process,
    on a temporary store; ``prepare(store_dir)`` runs before the broker starts, ``jvm_options`` are added to
    an Apache broker's (through ``JDK_JAVA_OPTIONS``, which the suite's launcher passes on). Both are stopped
    by pid when the block ends."""
    with tempfile.TemporaryDirectory(prefix=f"rmq-servers-bench-{side}-") as root:
        work = Path(root) / "work"
        logs = (
            logs_root / f"{side}-{flush.lower()}-{time.strftime('%H%M%S')}"
            if logs_root
            else Path(root) / "logs"
        )
        work.mkdir(parents=True)
        logs.mkdir(parents=True, exist_ok=True)
        if prepare is not None:
            prepare(_store_dir(side, work))
        launch = Launch(work, logs)
        extra = {"flushDiskType": f"{flush}_FLUSH"}
        try:
            if side == "project":
                namesrv = python_servers.start_namesrv(launch, _namesrv_profile(release)).addr
                broker = python_servers.start_broker(launch, namesrv, extra=extra)
                register_s, label = PYTHON_REGISTER_S, "project"
            else:
                namesrv = apache_servers.start_namesrv(launch, release).addr
                with _environment("JDK_JAVA_OPTIONS", jvm_options):
                    broker = apache_servers.start_broker(launch, release, namesrv, extra=extra)
                register_s, label = JAVA_REGISTER_S, f"Apache {release.version}"
            data = wait_for_broker_sync(namesrv, CLUSTER_NAME, BROKER_NAME, register_s, launch.check_alive)
            address = data.broker_addrs[0]
            print(
                f"{label}: NameServer {namesrv}, broker {address} (pid {broker.pid}), {flush}_FLUSH; "
                f"logs {logs}",
                flush=True,
            )
            yield Servers(side, namesrv, address, broker.pid, label)
            launch.check_alive()  # a server that died during the phase makes its figures suspect
        finally:
            leftovers = launch.stop(discard=True)
            if leftovers:
                print(f"left running: {leftovers}", file=sys.stderr)


# -------------------------------------------------------------------------------------------- ingest


@dataclasses.dataclass(frozen=True)
class IngestLoad:
    flush: str
    size: int
    batch: int  # 1: single sends
    in_flight: int

    @property
    def label(self) -> str:
        shape = "single" if self.batch == 1 else f"batch {self.batch}"
        return f"ingest {self.flush} {self.size} B, {shape} x{self.in_flight}"


@dataclasses.dataclass
class IngestRun:
    acknowledged: int = 0
    not_ok: int = 0
    failed: int = 0
    first_error: str = ""


async def ingest(producer: Producer, load: IngestLoad, seconds: float) -> tuple[float, IngestRun]:
    """(acknowledged messages per second, counts) of ``load`` kept up for ``seconds``."""
    body = os.urandom(load.size)
    run = IngestRun()
    deadline = time.perf_counter() + seconds

    async def lane() -> None:
        while time.perf_counter() < deadline:
            try:
                if load.batch == 1:
                    result = await producer.send(Message(INGEST_TOPIC, body))
                else:
                    result = await producer.send_batch(
                        [Message(INGEST_TOPIC, body) for _ in range(load.batch)]
                    )
            except ProducerError as exc:
                run.failed += load.batch
                run.first_error = run.first_error or f"{type(exc).__name__}: {exc}"
                await asyncio.sleep(0.01)
                continue
            if result.status is SendStatus.SEND_OK:
                run.acknowledged += load.batch
            else:
                run.not_ok += load.batch

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(load.in_flight)))
    return run.acknowledged / (time.perf_counter() - started), run


async def measure_ingest(
    servers: Servers, loads: Sequence[IngestLoad], args: argparse.Namespace, results: Results
) -> None:
    await _clusters.create_topic(servers.namesrv, CLUSTER_NAME, INGEST_TOPIC, QUEUES)
    async with Producer("ServersBenchIngest", servers.namesrv, send_timeout_ms=SEND_TIMEOUT_MS) as producer:
        await producer.send(Message(INGEST_TOPIC, b"route"))
        for load in loads:  # warm-up: the same loads in turn
            await ingest(producer, load, max(0.5, args.warmup / len(loads)))
        for load in loads:
            for _ in range(args.repeat):
                rate, run = await ingest(producer, load, args.seconds)
                results.add(load.label, "msg/s", servers.side, rate)
                if run.not_ok or run.failed:
                    results.note(
                        f"{servers.label}, {load.label}: {run.not_ok} messages stored not SEND_OK, "
                        f"{run.failed} failed ({run.first_error or 'no exception'})"
                    )


# -------------------------------------------------------------------------------------------- delivery


async def send_batches(
    producer: Producer, topics: Sequence[str], count: int, size: int, batch: int, in_flight: int
) -> float:
    """``count`` messages of ``size`` bytes in batches of ``batch``, batch k into ``topics[k % len]``,
    ``in_flight`` batches at once; raises if one is not stored. Returns when the first was sent
    (``time.perf_counter()``)."""
    body = os.urandom(size)
    sizes = [batch] * (count // batch) + ([count % batch] if count % batch else [])
    pending = iter(enumerate(sizes))
    started = time.perf_counter()

    async def lane() -> None:
        for k, n in pending:
            await producer.send_batch([Message(topics[k % len(topics)], body) for _ in range(n)])

    await asyncio.gather(*(lane() for _ in range(in_flight)))
    return started


async def store_batches(namesrv: str, topics: Sequence[str], count: int, size: int, batch: int) -> None:
    """:func:`send_batches` with a producer of its own, :data:`FILL_IN_FLIGHT` batches in flight."""
    async with Producer("ServersBenchFill", namesrv, send_timeout_ms=30_000) as producer:
        await send_batches(producer, topics, count, size, batch, FILL_IN_FLIGHT)


async def project_delivery(namesrv: str, count: int, batch: int, stop_at: float | None = None) -> float:
    """Messages per second of the project's PullConsumer (a fresh group, from the first offset) reading
    ``count`` messages of the delivery topic; a warm-up passes ``stop_at`` (``time.monotonic()``)."""
    consumer = PullConsumer(
        f"ServersBenchPull{uuid.uuid4().hex[:8]}",
        namesrv,
        consume_from="FIRST_OFFSET",
        pull_batch_size=batch,
    )
    consumer.subscribe(DELIVERY_TOPIC)
    await consumer.start()
    try:
        started = time.perf_counter()
        seen = 0
        limit = time.monotonic() + max(120.0, count / 100)
        while seen < count:
            now = time.monotonic()
            if stop_at is not None and now >= stop_at:
                break
            if now >= limit:
                raise RuntimeError(f"the project's PullConsumer read {seen} of {count} messages")
            seen += len(await consumer.poll(1.0))
        elapsed = time.perf_counter() - started
    finally:
        await consumer.close()
    return seen / elapsed


def java_delivery(client: JavaClient, namesrv: str, count: int, batch: int) -> float:
    """Messages per second of Apache's DefaultLitePullConsumer (``pull-consume`` of the Java peer, a fresh
    group, from the first offset), from its ``ready`` line to its ``count``-th message line."""
    timeout = JAVA_START_S + max(120.0, count / 100)
    args = ["--group", f"ServersBenchJava{uuid.uuid4().hex[:8]}", "--topic", DELIVERY_TOPIC]
    args += ["--count", str(count), "--from", "first", "--max-num", str(batch)]
    peer = client.process("pull-consume", args, namesrv=namesrv, timeout=timeout).start()
    seen = 0
    elapsed = 0.0
    try:
        peer.wait_for("ready", JAVA_START_S)
        started = time.perf_counter()
        for event in peer.events(timeout):
            kind = event.get("event")
            if kind == "message":
                seen += 1
                if seen >= count:
                    break
            elif kind in ("error", "timeout", "done"):
                break
        elapsed = time.perf_counter() - started
    finally:
        result = peer.finish()
    if seen < count:
        raise RuntimeError(f"the Java consumer read {seen} of {count} messages: {result.describe()}")
    return count / elapsed


def measure_delivery(
    servers: Servers, java: Callable[[], JavaClient | str], args: argparse.Namespace, results: Results
) -> None:
    async def prepare() -> int:
        await _clusters.create_topic(servers.namesrv, CLUSTER_NAME, DELIVERY_TOPIC, QUEUES)
        await store_batches(servers.namesrv, [DELIVERY_TOPIC], args.messages, args.delivery_size, args.batch)
        # Apache's broker fills its consume queues a moment after it acknowledged (its reput thread).
        deadline = time.monotonic() + 10
        while True:
            stored = await _clusters.stored_count(servers.namesrv, DELIVERY_TOPIC)
            if stored >= args.messages or time.monotonic() > deadline:
                return stored
            await asyncio.sleep(0.2)

    stored = asyncio.run(prepare())
    if stored < args.messages:
        raise RuntimeError(f"{servers.label}: {stored} of {args.messages} delivery messages stored")

    async def warm_up() -> None:
        stop_at = time.monotonic() + args.warmup
        while time.monotonic() < stop_at:
            await project_delivery(servers.namesrv, args.messages, args.batch, stop_at)

    asyncio.run(warm_up())
    label = f"delivery {args.delivery_size} B, project lite-pull"
    for _ in range(args.repeat):
        rate = asyncio.run(project_delivery(servers.namesrv, args.messages, args.batch))
        results.add(label, "msg/s", servers.side, rate)
    client = java()
    label = f"delivery {args.delivery_size} B, Java lite-pull"
    if isinstance(client, str):
        results.note(f"{servers.label}: Java lite-pull consumer not measured: {client}")
        return
    for _ in range(args.repeat):
        try:
            rate = java_delivery(client, servers.namesrv, args.messages, args.batch)
        except (RuntimeError, PeerFailed) as exc:
            results.note(f"{servers.label}: Java lite-pull consumer failed: {str(exc)[:600]}")
            return
        results.add(label, "msg/s", servers.side, rate)


async def live_topic(namesrv: str) -> str:
    """A fresh topic holding one message (so a producer knows its route before the timed sends)."""
    topic = f"{LIVE_TOPIC}{uuid.uuid4().hex[:8]}"
    await _clusters.create_topic(namesrv, CLUSTER_NAME, topic, QUEUES)
    async with Producer("ServersBenchLiveRoute", namesrv, send_timeout_ms=SEND_TIMEOUT_MS) as producer:
        await producer.send(Message(topic, b"route"))
    return topic


async def project_push_delivery(namesrv: str, args: argparse.Namespace) -> float:
    """Messages per second through the project's PushConsumer with its pulls held (see the module)."""
    topic = await live_topic(namesrv)
    expected = args.messages + 1
    handled = 0
    first_read = asyncio.Event()
    all_read = asyncio.Event()
    finished = 0.0

    async def handle(messages: list[MessageExt], context: object) -> ConsumeStatus:
        nonlocal handled, finished
        handled += len(messages)
        first_read.set()
        if handled >= expected and not all_read.is_set():
            finished = time.perf_counter()
            all_read.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(f"ServersBenchPush{uuid.uuid4().hex[:8]}", namesrv, consume_from="FIRST_OFFSET")
    consumer.subscribe(topic)
    consumer.register_listener(handle)
    await consumer.start()
    try:
        await asyncio.wait_for(first_read.wait(), 60)
        await asyncio.sleep(LIVE_SETTLE_S)
        async with Producer("ServersBenchLive", namesrv, send_timeout_ms=SEND_TIMEOUT_MS) as producer:
            started = await send_batches(
                producer, [topic], args.messages, args.delivery_size, args.batch, args.batch_in_flight
            )
        await asyncio.wait_for(all_read.wait(), max(120.0, args.messages / 100))
    except TimeoutError:
        raise RuntimeError(f"the project's PushConsumer handled {handled} of {expected} messages") from None
    finally:
        await consumer.shutdown()
    return args.messages / (finished - started)


def java_push_delivery(client: JavaClient, namesrv: str, args: argparse.Namespace) -> float:
    """Messages per second through Apache's DefaultMQPushConsumer with its pulls held (see the module)."""
    topic = asyncio.run(live_topic(namesrv))
    expected = args.messages + 1
    timeout = JAVA_START_S + max(120.0, args.messages / 100)
    peer_args = ["--group", f"ServersBenchJavaPush{uuid.uuid4().hex[:8]}", "--topic", topic]
    peer_args += ["--count", str(expected), "--from", "first"]
    peer = client.process("push-consume", peer_args, namesrv=namesrv, timeout=timeout).start()
    seen = 0
    finished = 0.0
    sent: list[float] = []
    failed: list[BaseException] = []

    def send() -> None:
        async def run() -> None:
            async with Producer("ServersBenchLive", namesrv, send_timeout_ms=SEND_TIMEOUT_MS) as producer:
                sent.append(
                    await send_batches(
                        producer, [topic], args.messages, args.delivery_size, args.batch, args.batch_in_flight
                    )
                )

        try:
            asyncio.run(run())
        except BaseException as exc:  # reported by the caller, which is reading the consumer meanwhile
            failed.append(exc)

    sender = threading.Thread(target=send, name="live-sender")
    try:
        peer.wait_for("ready", JAVA_START_S)
        events = peer.events(timeout)
        for event in events:
            if event.get("event") == "message":
                seen += 1
                break
            if event.get("event") in ("error", "timeout", "done"):
                break
        time.sleep(LIVE_SETTLE_S)
        sender.start()
        for event in events:
            kind = event.get("event")
            if kind == "message":
                seen += 1
                if seen >= expected:
                    finished = time.perf_counter()
                    break
            elif kind in ("error", "timeout", "done"):
                break
    finally:
        if sender.ident is not None:  # started
            sender.join()
        result = peer.finish()
    if failed:
        raise RuntimeError(f"sending the live messages failed: {failed[0]!r}")
    if seen < expected or not sent:
        raise RuntimeError(f"the Java push consumer read {seen} of {expected} messages: {result.describe()}")
    return args.messages / (finished - sent[0])


def measure_live_delivery(
    servers: Servers, java: Callable[[], JavaClient | str], args: argparse.Namespace, results: Results
) -> None:
    asyncio.run(project_push_delivery(servers.namesrv, args))  # warm-up round, not counted
    label = f"delivery {args.delivery_size} B, project push (live)"
    for _ in range(args.repeat):
        results.add(label, "msg/s", servers.side, asyncio.run(project_push_delivery(servers.namesrv, args)))
    client = java()
    if isinstance(client, str):
        results.note(f"{servers.label}: Java push consumer not measured: {client}")
        return
    label = f"delivery {args.delivery_size} B, Java push (live)"
    for _ in range(args.repeat):
        try:
            rate = java_push_delivery(client, servers.namesrv, args)
        except (RuntimeError, PeerFailed) as exc:
            results.note(f"{servers.label}: Java push consumer failed: {str(exc)[:600]}")
            return
        results.add(label, "msg/s", servers.side, rate)


# -------------------------------------------------------------------------------------------- namesrv


async def route_rate(namesrv: str, topics: Sequence[str], in_flight: int, seconds: float) -> float:
    """GET_ROUTEINFO_BY_TOPIC answers per second, ``in_flight`` requests outstanding on one connection."""
    async with RemotingClient() as client:
        await client.connection(namesrv)
        done = 0
        deadline = time.perf_counter() + seconds

        async def worker(index: int) -> None:
            nonlocal done
            topic = topics[index % len(topics)]
            while time.perf_counter() < deadline:
                request = RemotingCommand.request(
                    RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
                )
                response = await client.invoke(namesrv, request, 5000)
                if response.code != ResponseCode.SUCCESS:
                    raise RuntimeError(f"route of {topic}: {response.code} {response.remark}")
                done += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(in_flight)))
        return done / (time.perf_counter() - started)


async def measure_namesrv(servers: Servers, args: argparse.Namespace, results: Results) -> None:
    topics = [INGEST_TOPIC, DELIVERY_TOPIC]
    for topic in topics:  # whichever loads ran before, both topics exist
        await _clusters.create_topic(servers.namesrv, CLUSTER_NAME, topic, QUEUES)
    await route_rate(servers.namesrv, topics, max(ROUTE_IN_FLIGHT), args.warmup)
    for in_flight in ROUTE_IN_FLIGHT:
        for _ in range(args.repeat):
            rate = await route_rate(servers.namesrv, topics, in_flight, args.seconds)
            results.add(f"namesrv routes, {in_flight} in flight", "req/s", servers.side, rate)


# -------------------------------------------------------------------------------------------- memory


def memory_topics(count: int) -> list[str]:
    return [f"{MEMORY_TOPIC}{i}" for i in range(count)]


def write_topics(store: Path, *, topics: Sequence[str], queues: int) -> None:
    """``config/topics.json`` as both brokers read it at start (Apache's format: creating 10^4 topics one
    request at a time makes an Apache 4.x broker rewrite the whole file 10^4 times)."""
    table = {
        name: {
            "topicName": name,
            "readQueueNums": queues,
            "writeQueueNums": queues,
            "perm": 6,
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0,
            "order": False,
        }
        for name in topics
    }
    document = {
        "dataVersion": {"counter": 1, "timestamp": int(time.time() * 1000)},
        "topicConfigTable": table,
    }
    (store / "config").mkdir(parents=True, exist_ok=True)
    (store / "config" / "topics.json").write_text(json.dumps(document), "utf-8")


def proc_status(pid: int) -> dict[str, float]:
    """The ``Vm*`` and ``Rss*`` lines of ``/proc/<pid>/status``, in MiB."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if (key.startswith(("Vm", "Rss"))) and len(parts) == 2 and parts[1] == "kB":
            found[key] = int(parts[0]) / 1024
    return found


_HEAP = re.compile(r"heap\s+total (\d+)K, used (\d+)K")
_METASPACE = re.compile(r"Metaspace\s+used (\d+)K, committed (\d+)K")
#: NMT's category of ``Unsafe.allocateMemory``: direct ByteBuffers, Netty's pooled direct memory included.
_NMT_OTHER = re.compile(r"-\s+Other \(reserved=(\d+)KB, committed=(\d+)KB\)")
NMT_OPTION = "-XX:NativeMemoryTracking=summary"


def _jcmd(pid: int, command: str) -> str:
    """What ``jcmd <pid> <command>`` prints (a failure's message included)."""
    home = jvm.java_home()
    jcmd = home / "bin" / "jcmd"
    try:
        done = subprocess.run(
            [str(jcmd), str(pid), command], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{jcmd}: {exc}"
    return done.stdout + done.stderr


def jvm_memory(pid: int, nmt: bool) -> tuple[dict[str, float], list[str]]:
    """Heap committed and used and metaspace used (``GC.heap_info``), with ``nmt`` direct memory
    (``VM.native_memory summary``), in MiB; and what could not be read."""
    found: dict[str, float] = {}
    missing: list[str] = []
    output = _jcmd(pid, "GC.heap_info")
    heap, metaspace = _HEAP.search(output), _METASPACE.search(output)
    if heap is None:
        missing.append(f"jcmd GC.heap_info printed no heap figures: {output.strip()[:300]!r}")
    else:
        found["heap committed"] = int(heap.group(1)) / 1024
        found["heap used"] = int(heap.group(2)) / 1024
    if metaspace is not None:
        found["metaspace used"] = int(metaspace.group(1)) / 1024
    if nmt:
        output = _jcmd(pid, "VM.native_memory summary")
        other = _NMT_OTHER.search(output)
        if other is None:
            missing.append(f"jcmd VM.native_memory printed no 'Other': {output.strip()[:300]!r}")
        else:
            found["direct (NMT Other) committed"] = int(other.group(2)) / 1024
    return found, missing


def measure_memory(
    side: str, release: ApacheRelease, args: argparse.Namespace, results: Results, logs: Path | None
) -> None:
    topics = memory_topics(args.memory_topics)
    nmt = NMT_OPTION if args.jvm_nmt and side == "apache" else None
    prepare = functools.partial(write_topics, topics=topics, queues=args.memory_queues)
    with running_servers(side, release, "ASYNC", logs, prepare, nmt) as servers:

        async def known() -> None:
            async with Admin(servers.namesrv) as admin:
                deadline = time.monotonic() + 30
                while True:
                    try:
                        await admin.topic_route(topics[-1])
                        return
                    except TopicNotFoundError:
                        if time.monotonic() > deadline:
                            raise
                        await asyncio.sleep(0.5)

        asyncio.run(known())  # the broker read the topic file (else the figures would be of no topics)
        topic_text = f"{args.memory_topics:,} topics"
        results.add(
            f"memory: RSS at start, {topic_text}", "MiB", side, proc_status(servers.broker_pid)["VmRSS"]
        )
        began = time.perf_counter()
        asyncio.run(
            store_batches(servers.namesrv, topics, args.memory_messages, args.memory_size, args.batch)
        )
        print(
            f"  stored {args.memory_messages:,} messages in {time.perf_counter() - began:.1f} s",
            flush=True,
        )
        time.sleep(MEMORY_REST_S)
        after = f"+ {args.memory_messages:,} x {args.memory_size} B"
        status = proc_status(servers.broker_pid)
        results.add(f"memory: RSS {after}", "MiB", side, status["VmRSS"])
        results.add("memory:   anonymous (RssAnon)", "MiB", side, status.get("RssAnon", float("nan")))
        results.add("memory:   file-backed (RssFile)", "MiB", side, status.get("RssFile", float("nan")))
        results.add("memory: peak RSS (VmHWM)", "MiB", side, status.get("VmHWM", float("nan")))
        if side == "apache":
            found, missing = jvm_memory(servers.broker_pid, nmt is not None)
            for name, value in found.items():
                results.add(f"memory: JVM {name}", "MiB", side, value)
            for text in missing:
                results.note(f"{servers.label}: {text}")
            if nmt is not None:
                results.note(f"{servers.label}'s memory broker ran with {nmt} (its RSS includes NMT's own)")


# -------------------------------------------------------------------------------------------- timer


@dataclasses.dataclass
class TimerRound:
    #: Sends acknowledged SEND_OK per second, from the first send to the last acknowledgement.
    in_rate: float
    #: Acknowledged messages over the time from their slot to the last one stored in the topic.
    delivered_rate: float
    acknowledged: int
    #: How far past the slot the sends ran (0: they were all in before it), seconds.
    sends_past_due_s: float
    first_error: str


async def timer_round(
    namesrv: str, count: int, size: int, lead_s: float, in_flight: int, timeout_s: float
) -> TimerRound:
    """``count`` timer messages sent to a fresh topic, all due in one slot ``lead_s`` ahead; then the topic's
    stored count is read every :data:`TIMER_POLL_S` until every acknowledged one is there.

    The delivery time is half a second into a whole second, so both brokers (1,000 ms precision) floor it to
    that second: the slot, from which the delivered figure is timed. What is in the topic's consume queues
    is what a consumer can read, so the stored count stands in for a consumer without adding one's load."""
    topic = f"{TIMER_TOPIC}{uuid.uuid4().hex[:8]}"
    await _clusters.create_topic(namesrv, CLUSTER_NAME, topic, QUEUES)
    body = os.urandom(size)
    slot_s = float(int(time.time() + lead_s))
    deliver_ms = int(slot_s * 1000) + 500
    run = IngestRun()
    pending = iter(range(count))

    async def lane(producer: Producer) -> None:
        for _ in pending:
            try:
                result = await producer.send(Message(topic, body, deliver_time_ms=deliver_ms))
            except ProducerError as exc:
                run.failed += 1
                run.first_error = run.first_error or f"{type(exc).__name__}: {exc}"
                continue
            if result.status is SendStatus.SEND_OK:
                run.acknowledged += 1
            else:
                run.not_ok += 1

    async with Producer("ServersBenchTimer", namesrv, send_timeout_ms=SEND_TIMEOUT_MS) as producer:
        started = time.perf_counter()
        await asyncio.gather(*(lane(producer) for _ in range(in_flight)))
        in_rate = run.acknowledged / (time.perf_counter() - started)
    sent_at = time.time()
    async with Admin(namesrv) as admin:
        await asyncio.sleep(max(0.0, slot_s - time.time()))
        deadline = time.monotonic() + timeout_s
        stored = 0
        while (stored := await _stored_or_busy(admin, topic, stored)) < run.acknowledged:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{stored} of {run.acknowledged} timer messages delivered in {timeout_s:.0f} s"
                )
            await asyncio.sleep(TIMER_POLL_S)
        delivered_at = time.time()
    return TimerRound(
        in_rate,
        run.acknowledged / (delivered_at - slot_s),
        run.acknowledged,
        max(0.0, sent_at - slot_s),
        run.first_error or (f"{run.not_ok} not SEND_OK" if run.not_ok else ""),
    )


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) the process used so far, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _stored_or_busy(admin: Admin, topic: str, before: int) -> int:
    """The topic's stored count; ``before`` when the broker is too busy delivering to answer in time."""
    try:
        return (await admin.topic_status(topic)).total_messages
    except UnreachableError:
        return before


def measure_timer(servers: Servers, args: argparse.Namespace, results: Results) -> None:
    """One unmeasured round (the JVM compiles the timer path), then ``--repeat`` measured ones. Each round's
    slot is far enough ahead for the sends to be in before it at the previous round's pace (twice as long
    and 2 s more, at least ``--timer-lead``), so the delivered figure is the broker's, not the producer's."""
    timeout_s = max(60.0, args.messages / 100)
    label = f"timer {args.delivery_size} B, x{args.in_flight}"
    lead_s = args.timer_lead
    for index in range(args.repeat + 1):
        cpu_before = cpu_seconds(servers.broker_pid)
        found = asyncio.run(
            timer_round(servers.namesrv, args.messages, args.delivery_size, lead_s, args.in_flight, timeout_s)
        )
        cpu_ms = (cpu_seconds(servers.broker_pid) - cpu_before) * 1000
        lead_s = max(args.timer_lead, 2 * args.messages / max(found.in_rate, 1.0) + 2)
        if found.acknowledged < args.messages:
            results.note(
                f"{servers.label}, {label}: {args.messages - found.acknowledged} sends not stored "
                f"({found.first_error})"
            )
        if index == 0:
            continue
        if found.sends_past_due_s:
            results.note(
                f"{servers.label}, {label}: sends ran {found.sends_past_due_s:.1f} s past the due time, so "
                "that delivered figure is bounded by them (raise --timer-lead)"
            )
        results.add(f"{label}: in", "msg/s", servers.side, found.in_rate)
        results.add(f"{label}: delivered", "msg/s", servers.side, found.delivered_rate)
        results.add(f"{label}: broker CPU", "ms/k", servers.side, cpu_ms * 1000 / max(found.acknowledged, 1))


# -------------------------------------------------------------------------------------------- pop


def measure_pop(servers: Servers, args: argparse.Namespace, results: Results) -> None:
    """The project's SimpleConsumer (``benchmarks/pop_consume.py``'s: receive of 32 and a batch ack, in
    several loops) reading a fresh pre-filled topic; one unmeasured round first."""
    label = f"pop 100 B, simple receive {pop_consume.RECEIVE_BATCH}+ack x{pop_consume.SIMPLE_LOOPS}"
    for index in range(args.repeat + 1):
        topic, group = asyncio.run(pop_consume.fresh_topic(servers.namesrv, CLUSTER_NAME, args.messages))
        cpu_before = cpu_seconds(servers.broker_pid)
        rate = asyncio.run(pop_consume.project_simple_rate(servers.namesrv, topic, group, args.messages))
        cpu_ms = (cpu_seconds(servers.broker_pid) - cpu_before) * 1000
        if index > 0:
            results.add(label, "msg/s", servers.side, rate)
            results.add(f"{label}: broker CPU", "ms/k", servers.side, cpu_ms * 1000 / args.messages)


# -------------------------------------------------------------------------------------------- main


def pick_release(wanted: str | None) -> ApacheRelease:
    """``wanted``, else 4.9.8 when the suite knows it, else its newest 4.9.x full release."""
    known = {r.version: r for r in releases()}
    if wanted:
        return known.get(wanted) or ApacheRelease(wanted, wanted, full=True)
    if PREFERRED_RELEASE in known:
        return known[PREFERRED_RELEASE]
    fours = [r for r in full_releases() if r.version.startswith("4.9.")]
    if not fours:
        return full_releases()[0]
    return max(fours, key=lambda r: tuple(int(part) for part in r.version.split(".")))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--release", help="Apache release of the other servers (default: see above)")
    parser.add_argument(
        "--release5",
        default=PREFERRED_RELEASE_5,
        help="Apache release (5.x) of the servers the timer and pop rows compare against",
    )
    parser.add_argument(
        "--timer-lead", type=float, help="seconds from the timer sends' start to their slot (10)"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: everything small and short")
    parser.add_argument("--warmup", type=float, help="seconds of each load before measuring (30)")
    parser.add_argument("--seconds", type=float, help="length of each throughput measurement (5)")
    parser.add_argument("--repeat", type=int, help="rounds per figure: best and median (3)")
    parser.add_argument("--sizes", default="100,1024", help="ingest body sizes in bytes, comma-separated")
    parser.add_argument("--flush", default="ASYNC,SYNC", help="flush modes of the ingest brokers")
    parser.add_argument("--in-flight", type=int, default=64, help="single sends in flight")
    parser.add_argument("--batch", type=int, default=32, help="messages per batch (and per pull)")
    parser.add_argument("--batch-in-flight", type=int, default=8, help="batches in flight")
    parser.add_argument("--messages", type=int, help="stored messages each delivery round reads (20000)")
    parser.add_argument("--delivery-size", type=int, default=100, help="body size of delivered messages")
    parser.add_argument("--memory-messages", type=int, help="messages stored for the memory figures (10^6)")
    parser.add_argument("--memory-topics", type=int, help="topics for the memory figures (10^4)")
    parser.add_argument("--memory-size", type=int, default=1024, help="body size of the memory load")
    parser.add_argument("--memory-queues", type=int, default=1, help="queues of each memory topic")
    parser.add_argument(
        "--jvm-nmt",
        action="store_true",
        help=f"memory: run Apache's broker with {NMT_OPTION} to show its direct memory",
    )
    parser.add_argument("--sides", default=",".join(SIDES), help="project, apache or both")
    parser.add_argument("--loads", default=",".join(LOADS), help="which figures, comma-separated")
    parser.add_argument("--logs", type=Path, help="keep the servers' logs under this folder")
    args = parser.parse_args()
    for name, (normal, quick) in DEFAULTS.items():
        if getattr(args, name) is None:
            value = quick if args.quick else normal
            setattr(args, name, float(value) if name in ("warmup", "seconds", "timer_lead") else int(value))
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.flush = [f.strip().upper() for f in args.flush.split(",") if f.strip()]
    args.sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    args.loads = [s.strip() for s in args.loads.split(",") if s.strip()]
    for values, allowed, option in (
        (args.flush, ("ASYNC", "SYNC"), "--flush"),
        (args.sides, SIDES, "--sides"),
        (args.loads, LOADS, "--loads"),
    ):
        wrong = [v for v in values if v not in allowed]
        if wrong or not values:
            parser.error(f"{option}: choose among {', '.join(allowed)} (got {wrong or 'nothing'})")
    return args


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING)
    release = pick_release(args.release)
    release5 = pick_release(args.release5)
    fives = [name for name in ("timer", "pop") if name in args.loads]
    if fives and release5.major < 5:
        sys.exit(f"--release5 {release5.version}: the {' and '.join(fives)} rows need a 5.x broker")
    if "apache" in args.sides:
        needed = ([release] if set(args.loads) - set(fives) else []) + ([release5] if fives else [])
        for needed_release in needed:
            reason = java_unavailable(needed_release)
            if reason is not None:
                sys.exit(f"cannot start Apache's servers {needed_release.version}: {reason}")
    results = Results()
    java_clients: list[JavaClient] = []
    java_reason: list[str] = []

    def java() -> JavaClient | str:
        """Apache's Java client of the release, compiled on first use (or why it cannot run)."""
        if java_clients:
            return java_clients[0]
        if java_reason:
            return java_reason[0]
        try:
            java_clients.append(JavaClient(release))
        except ProviderUnavailable as exc:
            java_reason.append(str(exc))
            return java_reason[0]
        return java_clients[0]

    header = (
        f"project (Python {sys.version.split()[0]}) / Apache RocketMQ {release.version} servers "
        f"(Java client {release.tools_version}); warm-up {args.warmup:g} s, {args.seconds:g} s per figure, "
        f"best and median of {args.repeat}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
        + (f"; timer and pop rows against {release5.version}" if fives else "")
    )
    print(header, flush=True)
    try:
        for side in args.sides:
            for index, flush in enumerate(args.flush):
                loads = [
                    IngestLoad(flush, size, batch, in_flight)
                    for size in args.sizes
                    for batch, in_flight in ((1, args.in_flight), (args.batch, args.batch_in_flight))
                ]
                wanted = [name for name in ("ingest", "delivery", "namesrv") if name in args.loads]
                if index > 0:
                    wanted = [name for name in wanted if name == "ingest"]
                if not wanted:
                    continue
                with running_servers(side, release, flush, args.logs) as servers:
                    if "ingest" in wanted:
                        asyncio.run(measure_ingest(servers, loads, args, results))
                    if "delivery" in wanted:
                        measure_delivery(servers, java, args, results)
                        measure_live_delivery(servers, java, args, results)
                    if "namesrv" in wanted:
                        asyncio.run(measure_namesrv(servers, args, results))
            if "memory" in args.loads:
                measure_memory(side, release, args, results, args.logs)
            if fives:
                with running_servers(side, release5, args.flush[0], args.logs) as servers:
                    if "timer" in fives:
                        measure_timer(servers, args, results)
                    if "pop" in fives:
                        measure_pop(servers, args, results)
    finally:
        for client in java_clients:
            survivors = client.close()
            if survivors:
                print(f"Java consumer processes left running: {survivors}", file=sys.stderr)
        if results.rows:
            results.print_table(header)


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # unwinds like Ctrl-C: every server is stopped by pid


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminated)
    with contextlib.suppress(KeyboardInterrupt):
        main()
