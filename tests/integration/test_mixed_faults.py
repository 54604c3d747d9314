"""Faults in a mixed cluster: one Apache broker and the project's broker serve the same topic, and one of them
is killed with SIGKILL while the project's producer and Apache's Java producer send.

What must hold (for either broker killed):

* every send that starts after the kill (once the producer noticed) is acknowledged, by the other broker;
* the killed broker leaves the topic's route when its connection to the NameServer drops;
* once it is back (same store), every acknowledged message is consumed by a new group, none lost; a message
  delivered twice is an at-least-once duplicate, counted and reported, never hidden.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterator

import pytest

from admin import Admin
from consumer import PushConsumer
from consumer.testing import Received
from producer import Message, Producer, SendStatus
from producer.errors import ProducerError
from tests.integration.apache.releases import ApacheRelease, full_releases
from tests.integration.clusters.fixture import dedicated_cluster, skip_or_fail
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.probe import eventually
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.cpp_peer.runner import PeerClient
from tests.integration.java_peer import build as java_build

pytestmark = [pytest.mark.integration]
log = logging.getLogger("tests.mixed_faults")

SEND_WINDOW_S = 6.0
KILL_AFTER_S = 2.0
#: Sends that were in flight when the broker died, or started before the producer noticed, may fail.
NOTICE_S = 3.5
ROUTE_CONVERGE_S = 40.0
CONSUME_S = 90.0


@pytest.fixture(params=["apache", "python"], ids=lambda kind: f"kill-{kind}-broker")
def two_broker_cluster(request: pytest.FixtureRequest) -> Iterator[tuple[Cluster, Launch, str]]:
    release: ApacheRelease = full_releases()[-1]
    with dedicated_cluster(f"mixed-apache-{release.version}-and-python-brokers") as (cluster, launch, _):
        yield cluster, launch, request.param


async def send_for(
    producer: Producer, topic: str, seconds: float, log_: list[tuple[float, str, str | None]]
) -> None:
    """Send sequentially for ``seconds``; record (start time, body, broker or None for a failed send)."""
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        body = f"python {i}"
        started = time.monotonic()
        try:
            result = await producer.send(Message(topic, body.encode()))
        except ProducerError as exc:
            log.info("send %s failed: %s", body, exc)
            log_.append((started, body, None))
        else:
            ok = result.status is SendStatus.SEND_OK
            log_.append((started, body, result.message_queue.broker_name if ok else None))
        i += 1
        await asyncio.sleep(0.01)


async def test_kill_one_broker_while_both_producers_send(
    two_broker_cluster: tuple[Cluster, Launch, str],
) -> None:
    cluster, launch, victim_kind = two_broker_cluster
    [victim] = [b for b in cluster.brokers if (b.kind == "python") == (victim_kind == "python")]
    [survivor] = [b for b in cluster.brokers if b is not victim]
    victim_process = next(
        p
        for p in launch.processes
        if p.name == ("python-broker" if victim_kind == "python" else "apache-broker")
    )
    release = full_releases()[-1]
    reason = java_build.java_peer_unavailable(release)
    if reason is not None:
        skip_or_fail(reason)
    java: PeerClient = java_build.JavaClient(release, "JSON")

    topic = await create_on_every_broker(cluster, "Faults")

    sent: list[tuple[float, str, str | None]] = []
    java_run = asyncio.to_thread(
        java.run,
        "send-sync",
        ["--topic", topic, "--count", "400", "--body", "java {i}", "--keep-going", "--retry-times", "4"],
        namesrv=cluster.namesrv,
        timeout=60.0,
    )
    java_task = asyncio.ensure_future(java_run)
    async with Producer(unique_name("FaultPg"), cluster.namesrv, retry_times=4) as producer:
        sender = asyncio.ensure_future(send_for(producer, topic, SEND_WINDOW_S, sent))
        await asyncio.sleep(KILL_AFTER_S)
        killed_at = time.monotonic()
        for member in victim_process.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(member.pid, signal.SIGKILL)
        await sender
    java_result = await java_task

    # Every project send started once the producer could have noticed went to the survivor.
    late = [(body, broker) for started, body, broker in sent if started > killed_at + NOTICE_S]
    assert late, "no send started late enough to judge fail-over"
    assert all(broker == survivor.name for _, broker in late), late
    acked = {body for _, body, broker in sent if broker is not None}
    failed = [body for _, body, broker in sent if broker is None]
    java_acked = {f"java {o.index}" for o in java_result.send_results() if o.status == "SEND_OK"}
    assert len(java_acked) > 0, java_result.describe()
    log.info(
        "killed %s: project %d acked / %d failed, java %d acked",
        victim.name,
        len(acked),
        len(failed),
        len(java_acked),
    )

    # The NameServer drops the dead broker from the route when its connection closes.
    async with Admin(cluster.namesrv) as admin:
        await eventually(
            lambda: admin.topic_route(topic),
            lambda r: {q.broker_name for q in r.queue_datas} == {survivor.name},
            timeout_s=ROUTE_CONVERGE_S,
            what=f"{victim.name} gone from the route of {topic}",
        )

    # Back on its store, the killed broker serves what it had acknowledged; a new group reads everything.
    restarted = launch.process(
        f"{victim_process.name}-restarted",
        victim_process.argv,
        env=victim_process.env,
        cwd=victim_process.cwd,
    )
    del restarted
    async with Admin(cluster.namesrv) as admin:
        await eventually(
            lambda: admin.topic_route(topic),
            lambda r: {q.broker_name for q in r.queue_datas} == cluster.broker_names,
            timeout_s=ROUTE_CONVERGE_S * 3,
            what=f"{victim.name} back in the route of {topic}",
        )
    expected = acked | java_acked
    received = Received()
    consumer = PushConsumer(unique_name("FaultCg"), cluster.namesrv, consume_from="FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_listener(received.handler("check"))
    async with consumer:
        deadline = time.monotonic() + CONSUME_S
        while not expected <= {b.decode() for b in received.bodies()} and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        await asyncio.sleep(2.0)
    bodies = collections.Counter(b.decode() for b in received.bodies())
    missing = sorted(expected - set(bodies))
    duplicates = {body: n for body, n in bodies.items() if n > 1}
    log.info(
        "consumed %d distinct, %d duplicates (at-least-once): %s", len(bodies), len(duplicates), duplicates
    )
    assert not missing, f"{len(missing)} acknowledged messages never consumed: {missing[:10]}"
    # Anything consumed that no one saw acknowledged was stored by a send whose answer was lost in the kill.
    unacknowledged = set(bodies) - expected
    extra = sum(duplicates.values()) - len(duplicates)
    print(
        f"\nfaults[{victim_kind}]: project acked {len(acked)}, failed {len(failed)}; "
        f"java acked {len(java_acked)}; consumed {len(bodies)} distinct, {extra} duplicate deliveries, "
        f"{len(unacknowledged)} stored without an acknowledgement"
    )
