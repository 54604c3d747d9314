"""The network-fault scenario, run by ``test_network_faults.py`` inside a network namespace of its own.

``python -m tests.integration.netfaults.scenario --work DIR --toxiproxy BIN --iptables BIN --test-netns NS``
(under ``unshare --net``) brings the namespace's loopback up and starts, there:

* the project's NameServer (127.0.0.1), and a cluster of two masters registered to it: broker A (the
  project's) listening on 127.0.0.1:P and advertising 127.0.0.2:P, where Toxiproxy listens and forwards to
  127.0.0.1:P, so clients reach A only through the proxy; broker B (the project's, or Apache's with
  ``--broker-b <version>``) direct on 127.0.0.1. A binds its VIP channel (``P - 2``) and HA port (``P + 1``)
  on 127.0.0.1 as well and the clients use neither; the program checks that nothing but the proxy answers
  on 127.0.0.2;
* a topic with 4 queues on each broker, created cluster-wide with the project's admin;
* the project's PushConsumer, consuming the topic throughout and recording every delivery;
* producer tasks on one project Producer with its default settings (2 retries, 3 s per send, latency
  avoidance off, as Java's defaults), sending unique bodies at a steady pace and recording for each send
  when it started and ended, and which broker acknowledged it (or that it failed).

Then the faults on A, one phase after another: 300 ms latency; a bandwidth limit (plus a slow close);
connections reset as answers come back (``reset_peer`` downstream: A stores, the producer never hears);
a stall (``timeout`` upstream: nothing gets through, idle connections closed after a second); the proxy
down; a partition (iptables drops every segment to or from port P, for the proxy's listener and A's alike);
and the heal (rules and toxics removed), which lasts until A acknowledges sends again. Last, the senders stop,
the consumer gets a bounded while to catch up, and the topic is read back with plain PULL_MESSAGE requests
(:func:`~tests.integration.clusters.readback.read_topic_raw`), checked broker by broker with
:func:`~tests.integration.clusters.senders.check_acknowledged`.

Nothing here asserts on the phases: the program prints one line ``NETFAULTS-RESULT <json>`` with every
count (per phase, per broker, read back, consumed) and the test judges it. Everything it starts is a
process of a :class:`~tests.integration.clusters.launch.Launch` (own process group, stopped by pid at the
end, SIGTERM included) and is also listed in ``--ledger``, so the test can stop any of them by pid should
this program itself be killed.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import json
import logging
import random
import signal
import socket
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from consumer import ConsumeStatus, PushConsumer
from consumer.testing import Received
from producer import Message, Producer, ProducerError
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.message import MessageExt
from tests.integration.apache import servers as apache_servers
from tests.integration.apache.releases import ApacheRelease, releases
from tests.integration.clusters import configs, python_servers
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import (
    BROKER_NAME,
    CLUSTER_NAME,
    SECOND_BROKER_NAME,
    BrokerEndpoint,
    Cluster,
    unique_name,
)
from tests.integration.clusters.probe import wait_for_broker
from tests.integration.clusters.processes import ManagedProcess, free_port_block, identify
from tests.integration.clusters.readback import read_topic_raw
from tests.integration.clusters.senders import FAILED_SEND_PAUSE_S, SHOWN, Ack, Senders, check_acknowledged
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.netfaults import toxiproxy
from tests.integration.netfaults.netns import PortCut, loopback_up, this_netns

log = logging.getLogger("tests.netfaults")

RESULT_MARKER = "NETFAULTS-RESULT "
#: Where clients are told broker A is: Toxiproxy listens there, A itself on 127.0.0.1.
PROXIED_IP = "127.0.0.2"
DIRECT_IP = "127.0.0.1"
SENDERS = 8
#: A sender's pause after an acknowledged send: about 100 sends a second in all, plenty to judge each
#: phase, few enough that the consumer and the read-back stay quick on a loaded 2-core machine.
PACE_S = 0.08
PAD = 300
QUEUES_PER_BROKER = 4
#: Sends that began this long after a phase's fault was in place, and ended before it was lifted, are judged
#: by that phase alone (answers already on their way when the fault started may still arrive).
GRACE_S = 0.5
#: Warm-up: until each broker acknowledged this many sends.
WARM_ACKS = 5
WARM_MAX_S = 15.0
#: After the heal: until A acknowledged this many sends again (at least HEALED_MIN_S, at most HEALED_MAX_S).
HEALED_ACKS = 5
HEALED_MIN_S = 2.0
HEALED_MAX_S = 20.0
CATCH_UP_S = 30.0
READ_BACK_S = 20.0
REGISTER_S = 30.0
APACHE_REGISTER_S = 120.0
PARTITION_S = 5.0


# -- processes --------------------------------------------------------------------------------------------


class LedgerLaunch(Launch):
    """A :class:`Launch` that also appends every process it starts (pid and start time) to ``ledger``,
    one JSON object a line: the test reads it to stop by pid whatever this program could not."""

    def __init__(self, work_dir: Path, logs_dir: Path, ledger: Path) -> None:
        super().__init__(work_dir, logs_dir)
        self.ledger = ledger

    def process(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        grace_s: float = 10.0,
        kill_on_discard: bool = False,
    ) -> ManagedProcess:
        process = super().process(
            name, argv, env=env, cwd=cwd, grace_s=grace_s, kill_on_discard=kill_on_discard
        )
        entry = {"name": name, "pid": process.pid, "start_time": identify(process.pid).start_time}
        with self.ledger.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")
        return process


def start_proxied_broker(launch: Launch, namesrv: str, port: int) -> ManagedProcess:
    """The project's broker A: listening on 127.0.0.1:``port`` (its VIP channel on ``port - 2``), telling
    the NameServer and so every client that it is at 127.0.0.2:``port``, the proxy's address."""
    store = launch.work_dir / "broker-a-store"
    settings = configs.broker_properties(
        listen_port=port,
        namesrv_addr=namesrv,
        store_dir=str(store),
        broker_ip=PROXIED_IP,
        broker_name=BROKER_NAME,
        extra={"listenHost": DIRECT_IP},
    )
    config = configs.write_properties(launch.work_dir / "broker-a.conf", settings)
    argv = python_servers.broker_argv(
        config, str(store), namesrv, settings, port=port, host=DIRECT_IP, broker_ip=PROXIED_IP
    )
    return launch.process(
        "broker-a",
        argv,
        env=python_servers.python_env(),
        cwd=python_servers.REPO_ROOT,
        grace_s=python_servers.GRACE_S,
    )


def accepts(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect((host, port))
        except OSError:
            return False
    return True


def other_ports_of_a(port: int) -> dict[str, bool]:
    """Whether A's other ports (the VIP channel at ``port - 2``, HA at ``port + 1``) accept connections at
    its own address and at the advertised one: only the former may, or a client could bypass the proxy."""
    return {
        f"{host}:{port + offset}": accepts(host, port + offset)
        for host in (DIRECT_IP, PROXIED_IP)
        for offset in (-2, 1)
    }


def apache_release(version: str) -> ApacheRelease:
    known = {release.version: release for release in releases()}
    return known.get(version) or ApacheRelease(version, version, full=True)


# -- phases -----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Phase:
    """One stretch of the run with one fault (or none) on broker A."""

    name: str
    fault: str
    #: True when A is unreachable by design: no send begun in it (after :data:`GRACE_S`) may be
    #: acknowledged by A.
    cuts_a: bool
    #: When the previous phase's fault was gone and this one's began to be applied ...
    started: float = 0.0
    #: ... when it was in place ...
    applied: float = 0.0
    #: ... and when it began to be lifted (the next phase starts right after).
    lifted: float = 0.0
    ended: float = 0.0


#: Undoes one phase's fault.
Lift = Callable[[], Awaitable[None]]


class PhaseClock:
    """The phase the run is in, and when each began and ended (``time.monotonic()``)."""

    def __init__(self) -> None:
        self.phases: list[Phase] = []

    @property
    def current(self) -> Phase:
        return self.phases[-1]

    def enter(self, phase: Phase) -> None:
        now = time.monotonic()
        if self.phases:
            self.phases[-1].lifted = self.phases[-1].lifted or now
            self.phases[-1].ended = now
        phase.started = now
        self.phases.append(phase)
        log.info("phase %s: %s", phase.name, phase.fault)

    def applied(self) -> None:
        """The current phase's fault is in place."""
        self.current.applied = time.monotonic()

    def lift(self) -> None:
        """The current phase's fault is about to be lifted."""
        if self.phases:
            self.current.lifted = time.monotonic()

    def finish(self) -> None:
        self.current.ended = time.monotonic()
        self.current.lifted = self.current.lifted or self.current.ended


@dataclasses.dataclass(frozen=True)
class SendRecord:
    """One send as its caller saw it."""

    body: bytes
    began: float
    ended: float
    phase_began: str
    phase_ended: str
    #: The acknowledging broker's name, or None for a failed send.
    broker: str | None
    ack: Ack | None
    error: str = ""


class PhasedSenders(Senders):
    """:class:`Senders` with the project's default retries, paced, remembering for every send its phase,
    its timing and which broker acknowledged it."""

    def __init__(self, producer: Producer, topic: str, rng: random.Random, clock: PhaseClock) -> None:
        super().__init__(producer, topic, rng, prefix=b"nf", pad=PAD)
        self.clock = clock
        self.records: list[SendRecord] = []
        self.acked_by: dict[str, list[Ack]] = collections.defaultdict(list)

    async def run(self) -> None:
        while not self.stop.is_set():
            body = self._body()
            self.sent.add(body)
            began, phase_began = time.monotonic(), self.clock.current.name
            try:
                result = await self.producer.send(Message(self.topic, body))
            except (ProducerError, OSError, TimeoutError) as exc:
                self.failures += 1
                self.last_failure = str(exc)
                self.records.append(
                    SendRecord(
                        body,
                        began,
                        time.monotonic(),
                        phase_began,
                        self.clock.current.name,
                        None,
                        None,
                        str(exc),
                    )
                )
                await asyncio.sleep(FAILED_SEND_PAUSE_S)
                continue
            except BaseException as exc:  # anything else is a bug: end the run with it
                self.errors.append(exc)
                raise
            ack = Ack(result.message_queue.queue_id, result.queue_offset, body)
            broker = result.message_queue.broker_name
            self.acks.append(ack)
            self.acked_by[broker].append(ack)
            self.records.append(
                SendRecord(body, began, time.monotonic(), phase_began, self.clock.current.name, broker, ack)
            )
            await asyncio.sleep(PACE_S)


class FailedAttempts(logging.Handler):
    """Counts the producer's failed attempts per (phase, broker) from its warnings ("send to <queue>
    failed …; retrying" / "giving up"): a send retried on B after A failed is acknowledged, and only these
    show what A cost it."""

    def __init__(self, clock: PhaseClock) -> None:
        super().__init__(logging.WARNING)
        self.clock = clock
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()

    def emit(self, record: logging.LogRecord) -> None:
        if not self.clock.phases or not str(record.msg).startswith(("send to ", "broker refused the send")):
            return
        args = record.args if isinstance(record.args, tuple) else ()
        queue = args[0] if args else None
        broker = queue.broker_name if isinstance(queue, MessageQueue) else "?"
        self.counts[(self.clock.current.name, broker)] += 1


class Deliveries:
    """The push consumer's handler: every delivery recorded (in a :class:`Received`) with the phase and the
    broker it came from."""

    def __init__(self, clock: PhaseClock) -> None:
        self.clock = clock
        self.received = Received()
        self.by_phase: collections.Counter[tuple[str, str]] = collections.Counter()

    async def handle(self, messages: list[MessageExt], context: Any) -> ConsumeStatus:
        queue: MessageQueue = context.message_queue
        phase = self.clock.current.name if self.clock.phases else "start"
        for message in messages:
            self.received.record("netfaults", message, queue)
            self.by_phase[(phase, queue.broker_name)] += 1
        return ConsumeStatus.CONSUME_SUCCESS


# -- the run ----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Setup:
    namesrv: str
    cluster: Cluster
    proxy: toxiproxy.Proxy
    cut: PortCut
    #: Broker name -> "A" or "B".
    label: dict[str, str]
    #: A stored message's store host -> broker name.
    store_hosts: dict[str, str]
    kinds: dict[str, str]
    #: A's VIP and HA ports at its own address and at the proxy's: whether each accepted a connection.
    other_ports_of_a: dict[str, bool]


async def sleep_checking(seconds: float, check: Callable[[], None]) -> None:
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        check()
        await asyncio.sleep(min(0.1, left))


async def wait_for(
    condition: Callable[[], bool], min_s: float, max_s: float, check: Callable[[], None]
) -> bool:
    """At least ``min_s``, then until ``condition()`` holds, at most ``max_s``; whether it held."""
    started = time.monotonic()
    while True:
        check()
        elapsed = time.monotonic() - started
        if elapsed >= min_s and condition():
            return True
        if elapsed >= max_s:
            return False
        await asyncio.sleep(0.05)


async def run_phases(
    setup: Setup, senders: PhasedSenders, clock: PhaseClock, check: Callable[[], None]
) -> dict[str, Any]:
    """Every fault phase on A, in order; returns what the run noted beyond the counts.

    A phase starts once the previous phase's fault is gone; its own fault is in place from ``applied`` until
    ``lifted``. Sends and deliveries count in the phase current when they end.
    """
    proxy = setup.proxy
    a_name = next(name for name, label in setup.label.items() if label == "A")
    noted: dict[str, Any] = {}

    def acked(broker: str) -> int:
        return len(senders.acked_by.get(broker, []))

    def toxics(*adds: Callable[[], str]) -> Callable[[], Awaitable[Lift]]:
        """Add the toxics; the lift removes exactly those."""

        async def apply() -> Lift:
            names = [await asyncio.to_thread(add) for add in adds]

            async def lift() -> None:
                for name in names:
                    await asyncio.to_thread(proxy.remove_toxic, name)

            return lift

        return apply

    async def take_down() -> Lift:
        await asyncio.to_thread(proxy.set_enabled, False)
        return lambda: asyncio.to_thread(proxy.set_enabled, True)

    async def partition() -> Lift:
        await asyncio.to_thread(setup.cut.cut)
        noted["rules_during_partition"] = await asyncio.to_thread(setup.cut.listed)
        return lambda: asyncio.to_thread(setup.cut.heal)

    async def nothing() -> None:
        return None

    clock.enter(Phase("baseline", "none", cuts_a=False))
    clock.applied()
    noted["warm"] = await wait_for(
        lambda: all(acked(name) >= WARM_ACKS for name in setup.label), 1.5, WARM_MAX_S, check
    )
    lift: Lift = nothing
    steps: list[tuple[Phase, Callable[[], Awaitable[Lift]], float]] = [
        (Phase("latency", "300 ms latency on A's answers", False), toxics(lambda: proxy.latency(300)), 2.5),
        (
            Phase("bandwidth", "4 KB/s each way, closes delayed 500 ms", False),
            toxics(
                lambda: proxy.bandwidth(4, stream="downstream"),
                lambda: proxy.bandwidth(4, stream="upstream"),
                lambda: proxy.slow_close(500),
            ),
            2.5,
        ),
        (
            Phase("reset_peer", "connections reset as A's answers come back (A stores, nobody hears)", True),
            toxics(lambda: proxy.reset_peer(0, stream="downstream")),
            2.5,
        ),
        (
            Phase("timeout", "stalled: nothing reaches A, idle connections closed after 1 s", True),
            toxics(lambda: proxy.timeout(1000, stream="upstream")),
            3.0,
        ),
        (Phase("down", "proxy disabled: A's address refuses connections", True), take_down, 2.0),
        (
            Phase("partition", f"iptables drops TCP to and from port {setup.cut.port}", True),
            partition,
            PARTITION_S,
        ),
    ]
    for phase, apply, seconds in steps:
        # Lift, then apply: removing toxics behind a reset_peer that has closed its links can hang
        # Toxiproxy's API. A is reachable for the few milliseconds between, outside both phases' windows.
        clock.lift()
        await lift()
        clock.enter(phase)
        lift = await apply()
        clock.applied()
        await sleep_checking(seconds, check)

    clock.lift()
    await lift()
    await asyncio.to_thread(proxy.clear)  # nothing should be left; make sure
    before_heal = acked(a_name)
    clock.enter(Phase("healed", "rules and toxics removed", False))
    clock.applied()
    noted["a_back"] = await wait_for(
        lambda: acked(a_name) >= before_heal + HEALED_ACKS, HEALED_MIN_S, HEALED_MAX_S, check
    )
    noted["a_back_after_s"] = round(time.monotonic() - clock.current.started, 2)
    noted["left_on_proxy"] = await asyncio.to_thread(proxy.toxic_names)
    clock.finish()
    return noted


def phase_report(
    setup: Setup,
    clock: PhaseClock,
    senders: PhasedSenders,
    attempts: FailedAttempts,
    deliveries: Deliveries,
) -> list[dict[str, Any]]:
    labels = setup.label
    report = []
    for phase in clock.phases:
        ended = [r for r in senders.records if r.phase_ended == phase.name]
        acked = collections.Counter(labels.get(r.broker, r.broker) for r in ended if r.broker is not None)
        # Sends begun (after the grace) and answered while a phase's fault was in place: in a phase that
        # cuts A off, A must have acknowledged none of them.
        inside = [
            r
            for r in ended
            if r.began >= phase.applied + GRACE_S and r.ended <= phase.lifted and r.broker is not None
        ]
        report.append(
            {
                "name": phase.name,
                "fault": phase.fault,
                "cuts_a": phase.cuts_a,
                "seconds": round(phase.ended - phase.started, 2),
                "acked": sum(acked.values()),
                "acked_by": {label: acked.get(label, 0) for label in ("A", "B")},
                "failed": sum(1 for r in ended if r.broker is None),
                "failed_attempts_on": {
                    label: attempts.counts.get((phase.name, name), 0) for name, label in labels.items()
                },
                "a_acks_begun_inside": sum(1 for r in inside if labels.get(r.broker or "") == "A"),
                "a_acks_begun_inside_sample": [
                    {
                        "began_s": round(r.began - phase.applied, 3),
                        "ended_s": round(r.ended - phase.applied, 3),
                        "ack": str(r.ack),
                    }
                    for r in inside
                    if labels.get(r.broker or "") == "A"
                ][:5],
                "consumed_from": {
                    label: deliveries.by_phase.get((phase.name, name), 0) for name, label in labels.items()
                },
                "first_error": next((r.error[:200] for r in ended if r.broker is None), ""),
            }
        )
    return report


def read_back_report(setup: Setup, senders: PhasedSenders, stored: list[MessageExt]) -> dict[str, Any]:
    """Split what was read back by the broker that stored it and check it against that broker's
    acknowledgements; count what was stored without an acknowledgement and what was stored twice."""
    by_broker: dict[str, list[MessageExt]] = collections.defaultdict(list)
    unknown_hosts = sorted({m.store_host for m in stored if m.store_host not in setup.store_hosts})
    for message in stored:
        by_broker[setup.store_hosts.get(message.store_host, message.store_host)].append(message)
    checks: dict[str, str] = {}
    for name in setup.label:
        try:
            check_acknowledged(senders.acked_by.get(name, []), by_broker.get(name, []), senders.sent)
        except AssertionError as exc:
            checks[setup.label[name]] = f"FAILED: {exc}"
        else:
            checks[setup.label[name]] = "ok"
    acked_bodies = {ack.body for ack in senders.acks}
    stored_counts = collections.Counter(m.body for m in stored)
    failures = {r.body: r for r in senders.records if r.broker is None}
    unacknowledged = [m for m in stored if m.body not in acked_bodies]
    return {
        "stored": len(stored),
        "stored_on": {setup.label[name]: len(by_broker.get(name, [])) for name in setup.label},
        "checks": checks,
        "unknown_store_hosts": unknown_hosts,
        "acked_missing": len(acked_bodies - set(stored_counts)),
        "stored_unacknowledged": len(set(stored_counts) - acked_bodies),
        # What the producer was told about a few of those sends (its failure), and where they were stored.
        "stored_unacknowledged_sample": [
            {
                "body": m.body[:SHOWN].decode("ascii", "replace"),
                "stored_on": setup.label.get(setup.store_hosts.get(m.store_host, ""), m.store_host),
                "send_phase": failures[m.body].phase_began if m.body in failures else "?",
                "send_error": failures[m.body].error[:200] if m.body in failures else "?",
            }
            for m in unacknowledged[:5]
        ],
        "stored_twice": sum(1 for n in stored_counts.values() if n > 1),
    }


async def scenario(setup: Setup, check: Callable[[], None], seed: int) -> dict[str, Any]:
    clock = PhaseClock()
    topic = await create_on_every_broker(setup.cluster, "NetFaults", QUEUES_PER_BROKER)
    attempts = FailedAttempts(clock)
    logging.getLogger("producer").addHandler(attempts)
    deliveries = Deliveries(clock)
    consumer = PushConsumer(unique_name("netfaults-cg"), setup.namesrv, consume_from="FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_listener(deliveries.handle)
    timings: dict[str, float] = {}
    async with consumer, Producer(unique_name("netfaults-pg"), setup.namesrv) as producer:
        senders = PhasedSenders(producer, topic, random.Random(seed), clock)
        tasks = [asyncio.create_task(senders.run()) for _ in range(SENDERS)]
        began = time.monotonic()
        try:
            noted = await run_phases(setup, senders, clock, check)
        finally:
            senders.stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.to_thread(setup.cut.heal)
        timings["phases_s"] = time.monotonic() - began
        if senders.errors:
            raise senders.errors[0]

        began = time.monotonic()
        acked = {ack.body for ack in senders.acks}
        caught_up = await wait_for(lambda: acked <= set(deliveries.received.bodies()), 0.0, CATCH_UP_S, check)
        timings["catch_up_s"] = time.monotonic() - began
    logging.getLogger("producer").removeHandler(attempts)

    began = time.monotonic()
    stored = await read_topic_raw(setup.namesrv, topic, len(senders.acks), timeout_s=READ_BACK_S)
    timings["read_back_s"] = time.monotonic() - began

    consumed = collections.Counter(deliveries.received.bodies())
    missing = sorted(acked - set(consumed))
    return {
        "topic": topic,
        "noted": noted,
        "phases": phase_report(setup, clock, senders, attempts, deliveries),
        "totals": {
            "sent": len(senders.sent),
            "acked": len(senders.acks),
            "failed": senders.failures,
            "acked_by": {setup.label[name]: len(acks) for name, acks in senders.acked_by.items()},
        },
        "read_back": read_back_report(setup, senders, stored),
        "consumer": {
            "caught_up": caught_up,
            "deliveries": sum(consumed.values()),
            "distinct": len(consumed),
            "duplicate_deliveries": sum(n - 1 for n in consumed.values() if n > 1),
            "bodies_delivered_twice_or_more": sum(1 for n in consumed.values() if n > 1),
            "missing_acked": len(missing),
            "missing_sample": [body[:SHOWN].decode("ascii", "replace") for body in missing[:10]],
            "unacknowledged_consumed": len(set(consumed) - acked),
        },
        "timings": {key: round(value, 2) for key, value in timings.items()},
    }


def start_servers(launch: Launch, args: argparse.Namespace) -> Setup:
    """NameServer, Toxiproxy and its proxy for A, broker A, broker B; returns once both brokers are
    registered."""
    namesrv = python_servers.start_namesrv(launch).addr
    port = free_port_block((-2, 0, 1))
    server = toxiproxy.start(launch, Path(args.toxiproxy))
    proxy = server.create_proxy("broker-a", f"{PROXIED_IP}:{port}", f"{DIRECT_IP}:{port}")
    start_proxied_broker(launch, namesrv, port)
    kinds = {BROKER_NAME: "python"}
    if args.broker_b == "python":
        python_servers.start_broker(launch, namesrv, broker_name=SECOND_BROKER_NAME, name="broker-b")
        register_s = REGISTER_S
        kinds[SECOND_BROKER_NAME] = "python"
    else:
        release = apache_release(args.broker_b)
        apache_servers.start_broker(launch, release, namesrv, broker_name=SECOND_BROKER_NAME, name="broker-b")
        register_s = APACHE_REGISTER_S
        kinds[SECOND_BROKER_NAME] = f"apache-{release.version}"
    endpoints = []
    for name in (BROKER_NAME, SECOND_BROKER_NAME):
        data = asyncio.run(wait_for_broker(namesrv, CLUSTER_NAME, name, register_s, launch.check_alive))
        endpoints.append(BrokerEndpoint(name, data.broker_addrs[0], kinds[name]))
    a_addr = endpoints[0].addr
    if a_addr != f"{PROXIED_IP}:{port}":
        raise RuntimeError(f"broker A registered as {a_addr}, not at the proxy's {PROXIED_IP}:{port}")
    other_ports = other_ports_of_a(port)
    bypass = [addr for addr, open_ in other_ports.items() if open_ and addr.startswith(PROXIED_IP)]
    if bypass:
        raise RuntimeError(f"broker A answers at {bypass}, next to the proxy: clients could bypass it")
    cluster = Cluster(
        provider="netfaults",
        version="python",
        namesrv_version="python",
        namesrv=namesrv,
        brokers=tuple(endpoints),
        cluster_name=CLUSTER_NAME,
        logs_dir=launch.logs_dir,
    )
    return Setup(
        namesrv=namesrv,
        cluster=cluster,
        proxy=proxy,
        cut=PortCut(port, args.iptables, args.test_netns),
        label={BROKER_NAME: "A", SECOND_BROKER_NAME: "B"},
        # Brokers stamp brokerIP1:listenPort on what they store: A the proxy's address, B its own.
        store_hosts={endpoint.addr: endpoint.name for endpoint in endpoints},
        kinds=kinds,
        other_ports_of_a=other_ports,
    )


async def run_cancellable(setup: Setup, check: Callable[[], None], seed: int) -> dict[str, Any]:
    """:func:`scenario`, cancelled by SIGTERM (so that every ``finally`` runs and the servers are stopped)."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGTERM)
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await scenario(setup, check, seed)
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, previous)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.integration.netfaults.scenario")
    parser.add_argument("--work", required=True, help="folder for stores, configs and logs")
    parser.add_argument("--toxiproxy", required=True, help="the Toxiproxy server binary")
    parser.add_argument("--iptables", required=True, help="the iptables binary")
    parser.add_argument("--test-netns", required=True, help="the test's network namespace (no rules there)")
    parser.add_argument(
        "--ledger", required=True, help="file listing every process started (pid, start time)"
    )
    parser.add_argument("--broker-b", default="python", help="'python' or an Apache version for broker B")
    parser.add_argument("--seed", type=int, default=None)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for noisy in ("producer", "consumer", "rocketmq_wire", "admin"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    began = time.monotonic()
    result: dict[str, Any] = {"error": None, "seed": seed, "broker_b": args.broker_b}
    work = Path(args.work)
    launch = LedgerLaunch(work / "work", work / "logs", Path(args.ledger))
    try:
        # SIGTERM before the event loop runs (while servers start) ends the program the same way.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(f"stopped by signal {signum}"))
        netns = this_netns()
        if netns == args.test_netns:
            raise RuntimeError(f"not in a network namespace of its own ({netns}); run it under unshare --net")
        loopback_up()
        result["netns"] = netns
        result["toxiproxy"] = toxiproxy.VERSION
        setup = start_servers(launch, args)
        result["brokers"] = {
            setup.label[b.name]: {"name": b.name, "addr": b.addr, "kind": b.kind}
            for b in setup.cluster.brokers
        }
        result["proxy"] = setup.proxy.info()
        result["other_ports_of_a"] = setup.other_ports_of_a
        result["startup_s"] = round(time.monotonic() - began, 2)
        result.update(asyncio.run(run_cancellable(setup, launch.check_alive, seed)))
    except BaseException as exc:  # the test reads the reason from the result line
        result["error"] = "".join(traceback.format_exception(exc)).strip()
    finally:
        # Stopping the servers is bounded (their grace, then SIGKILL): a second signal must not cut it short.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # discard: the stores go with the run, so Apache's broker is killed rather than left to spend 15 s
        # in its shutdown hooks; the project's servers still get SIGTERM and their grace.
        leftovers = launch.stop(discard=True)
        result["leftovers"] = leftovers
        result["total_s"] = round(time.monotonic() - began, 2)
        print(RESULT_MARKER + json.dumps(result), flush=True)
    return 0 if result["error"] is None and not result["leftovers"] else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
