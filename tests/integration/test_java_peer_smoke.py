"""Apache's Java client (the ``rmqit.Peer`` program) against the project's servers and Apache's own.

Each server set runs once per module: the project's NameServer and Broker (``rmq namesrv``/``rmq broker``
subprocesses), Apache 5.3.3 and Apache 4.9.7 (NameServer + Broker from Maven Central). The Java client of the
servers' line talks to them (5.3.3; 4.9.8 for the 4.9.7 servers, for which Maven Central has no 4.9.7 client
of its own); the sync send also runs with the other client releases (4.9.8, 5.3.3, 5.5.0) and with both
header serializations. The last tests check the peer program itself, without servers: usage errors, client
errors, its own deadline, and exiting when its parent dies.

What the Java client sends is read back by the project's pull consumer; what the project's producer sends
is received by the Java push consumer and the Java lite pull consumer; the Java client's view of routes and
clusters is compared with what the project's admin client sees.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest

from admin import Admin, TopicNotFoundError
from producer import BlockingProducer, Message, SendResult
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.message import MessageExt
from tests.integration.apache import servers as apache_servers
from tests.integration.apache.cache import peers_required
from tests.integration.apache.releases import DEFAULT_RELEASES, ApacheRelease
from tests.integration.clusters import python_servers
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import BROKER_NAME, CLUSTER_NAME, ProviderUnavailable, unique_name
from tests.integration.clusters.probe import eventually, wait_for_broker_sync
from tests.integration.clusters.readback import read_topic
from tests.integration.cpp_peer.runner import (
    KILL_GRACE_S,
    PARENT_PID_ENV,
    PeerResult,
    ReceivedMessage,
    message,
    process_gone,
)
from tests.integration.java_peer.build import Step, client_version_name
from tests.integration.java_peer.fixtures import JavaClientFactory

pytestmark = pytest.mark.integration

RELEASES = {r.version: r for r in DEFAULT_RELEASES}
APACHE_5 = RELEASES["5.3.3"]
APACHE_4 = RELEASES["4.9.7"]  # servers 4.9.7, client and tools 4.9.8
CLIENTS = {"5.5.0": RELEASES["5.5.0"], "5.3.3": APACHE_5, "4.9.8": APACHE_4}
SERIALIZATIONS = ("JSON", "ROCKETMQ")
#: Generous: a JVM per command on a busy 2-core machine.
PEER_TIMEOUT_S = 90.0
READ_TIMEOUT_S = 30.0
QUEUES = 4
BODY_TEXT = "héllo wörld ✓ 你好 {i}"
BINARY_BODY = b"\x00\x01binary\x00body\xff\xfe"
PROPERTIES = {"origin": "java-peer", "naïve": "ünïcode ✓"}


@dataclasses.dataclass(frozen=True)
class Servers:
    """A running NameServer with one broker, and the Java client release that goes with it."""

    label: str
    namesrv: str
    broker_addr: str
    client: ApacheRelease


def _unavailable(reason: str) -> NoReturn:
    if peers_required():
        pytest.fail(reason)
    pytest.skip(reason)


#: The project's servers, and Apache's 5.3.3 as the reference every assertion must also hold on (4.9.x and
#: the other set-ups are the compatibility matrix's; ``ROCKETMQ_JAVA_SMOKE_4X=1`` adds Apache 4.9.7 here).
SERVER_SETS = ["python", "apache-5.3.3"] + (
    ["apache-4.9.7"] if os.environ.get("ROCKETMQ_JAVA_SMOKE_4X") else []
)


#: For what the Java peer does on its own (send kinds, consumer kinds, its timeouts), the project's servers
#: only: Apache's servers meet the same Java client in the compatibility matrix, and the tests that stay on
#: both sets are those whose answer is the broker's (transactions, ACL, route views). The committed-offsets
#: run (four JVMs, a minute on Apache's) is the project's only: Apache's keeping of offsets is the matrix's.
PEER_ONLY = pytest.mark.parametrize("servers", ["python"], indirect=True)


@pytest.fixture(scope="module", params=SERVER_SETS)
def servers(
    request: pytest.FixtureRequest, java_client_unavailable: Callable[[ApacheRelease], str | None]
) -> Iterator[Servers]:
    """The project's servers or Apache's of one release, stopped by pid at the end (nothing may survive)."""
    label: str = request.param
    release = APACHE_4 if label == "apache-4.9.7" else APACHE_5
    reason = java_client_unavailable(release)
    if reason is not None:
        _unavailable(reason)
    root = Path(tempfile.mkdtemp(prefix=f"java-peer-{label}-"))
    launch = Launch(root / "work", root / "logs")
    failures_before = request.session.testsfailed
    try:
        if label == "python":
            namesrv = python_servers.start_namesrv(launch).addr
            python_servers.start_broker(launch, namesrv)
            register_s = 30.0
        else:
            namesrv = apache_servers.start_namesrv(launch, release).addr
            apache_servers.start_broker(launch, release, namesrv)
            register_s = 120.0
        data = wait_for_broker_sync(namesrv, CLUSTER_NAME, BROKER_NAME, register_s, launch.check_alive)
    except ProviderUnavailable as exc:
        leftovers = launch.stop(discard=True)
        shutil.rmtree(root, ignore_errors=True)
        assert not leftovers, f"{label} servers left behind: {leftovers}"
        _unavailable(str(exc))
    except BaseException:
        leftovers = launch.stop(discard=True)
        print(f"{label} servers' logs kept in {root / 'logs'}")
        assert not leftovers, f"{label} servers left behind: {leftovers}"
        raise
    addr = data.master_addr()
    assert addr is not None
    try:
        yield Servers(label, namesrv, addr, release)
    finally:
        leftovers = launch.stop(discard=True)
        if request.session.testsfailed > failures_before:
            print(f"{label} servers' logs kept in {root / 'logs'}")
            shutil.rmtree(root / "work", ignore_errors=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    assert leftovers == [], f"{label} servers left behind: {leftovers}"


# ------------------------------------------------------------------------------------------------ helpers


async def _create_topic(namesrv: str, topic: str, queues: int = QUEUES) -> TopicRouteData:
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, cluster=CLUSTER_NAME, read_queue_nums=queues, write_queue_nums=queues)
        return await eventually(
            lambda: admin.topic_route(topic),
            lambda route: sum(q.write_queue_nums for q in route.queue_datas) == queues,
            timeout_s=30,
            what=f"route of {topic} with {queues} queues",
            retry_on=(TopicNotFoundError,),
        )


def create_topic(servers: Servers, prefix: str, queues: int = QUEUES) -> str:
    topic = unique_name(prefix)
    asyncio.run(_create_topic(servers.namesrv, topic, queues))
    return topic


def read_back(servers: Servers, topic: str, expected: int) -> list[MessageExt]:
    return asyncio.run(read_topic(servers.namesrv, topic, expected, timeout_s=READ_TIMEOUT_S))


def project_send(servers: Servers, messages: Sequence[Message]) -> list[SendResult]:
    with BlockingProducer(unique_name("ProjectProducer"), servers.namesrv) as producer:
        return [producer.send(m) for m in messages]


def by_id(messages: Sequence[MessageExt]) -> dict[str, MessageExt]:
    found: dict[str, MessageExt] = {}
    for m in messages:
        assert m.unique_id is not None, f"message without UNIQ_KEY: {m}"
        assert m.unique_id not in found, f"message {m.unique_id} read twice"
        found[m.unique_id] = m
    return found


def assert_no_noise(result: PeerResult) -> None:
    """stdout held JSON lines only (the client's logging went elsewhere)."""
    assert not result.noise, f"non-JSON lines on the Java peer's stdout: {result.noise[:5]}"


def sent_specs() -> list[dict[str, Any]]:
    return [
        message(BODY_TEXT, tags="TagA", keys=["k1", "k2"], properties=PROPERTIES),
        message(BINARY_BODY, tags="TagB", keys="kb"),
    ]


def expected_body(index: int) -> bytes:
    """What :func:`sent_specs` sent ``--count`` times produces at ``index``."""
    if index % 2:
        return BINARY_BODY
    return BODY_TEXT.replace("{i}", str(index)).encode("utf-8")


def check_received(received: Sequence[ReceivedMessage], results: Sequence[SendResult], topic: str) -> None:
    """Each message the project sent arrived exactly once, intact, where the SendResult said it went."""
    ids = [m.msg_id for m in received]
    assert len(ids) == len(set(ids)), f"delivered more than once: {sorted(ids)}"
    sent = {r.msg_id: (n, r) for n, r in enumerate(results)}
    assert set(ids) == set(sent), f"received {sorted(ids)}, sent {sorted(sent)}"
    for m in received:
        n, result = sent[m.msg_id]
        assert m.topic == topic
        assert (m.queue_id, m.queue_offset) == (result.message_queue.queue_id, result.queue_offset)
        assert m.body == f"project → java {n} ✓".encode() and m.body_exact
        assert m.tags == f"Tag{n % 2}"
        assert m.keys == f"key-{n} order-{n}"
        assert m.properties["origin"] == "project"
        assert m.properties["ünï"] == f"värde {n}"
        assert m.properties["UNIQ_KEY"] == m.msg_id
        assert m.reconsume_times == 0
        assert m.store_timestamp >= m.born_timestamp > 0


def project_messages(topic: str, count: int) -> list[Message]:
    return [
        Message(
            topic,
            f"project → java {n} ✓".encode(),
            tags=f"Tag{n % 2}",
            keys=[f"key-{n}", f"order-{n}"],
            properties={"origin": "project", "ünï": f"värde {n}"},
        )
        for n in range(count)
    ]


# --------------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("client_version", sorted(CLIENTS))
def test_java_peer_reports_its_client_version(java_client: JavaClientFactory, client_version: str) -> None:
    for serialize in SERIALIZATIONS:
        result = java_client(CLIENTS[client_version], serialize).probe().check()
        [library] = result.of("library")
        assert library["client_version"] == client_version_name(client_version)
        assert library["serialize_type"] == serialize
        assert f"rocketmq-client-{client_version}.jar" in library["client_jar"]
        assert_no_noise(result)


@PEER_ONLY
@pytest.mark.parametrize("serialize", SERIALIZATIONS)
@pytest.mark.parametrize("client_version", sorted(CLIENTS))
def test_java_sync_send_is_read_back_intact(
    servers: Servers, java_client: JavaClientFactory, client_version: str, serialize: str
) -> None:
    """Tags, keys, user properties, a non-ASCII body and a binary one with NUL bytes, through either header
    serialization and each client release (4.9.8, 5.3.3, 5.5.0); every SendResult names where the message
    really is."""
    client = java_client(CLIENTS[client_version], serialize)
    topic = create_topic(servers, "JavaSync")
    result = client.send_sync(
        servers.namesrv, topic, sent_specs(), extra=["--count", "2"], timeout=PEER_TIMEOUT_S
    )
    result.check()
    assert_no_noise(result)
    outcomes = result.of("send_result")
    assert [o["index"] for o in outcomes] == [0, 1, 2, 3]
    assert {o["status"] for o in outcomes} == {"SEND_OK"}
    assert {(o["topic"], o["broker_name"]) for o in outcomes} == {(topic, BROKER_NAME)}
    stored = by_id(read_back(servers, topic, 4))
    assert set(stored) == {o["msg_id"] for o in outcomes}
    for n, outcome in enumerate(outcomes):
        m = stored[outcome["msg_id"]]
        assert m.body == expected_body(n)
        assert (m.queue_id, m.queue_offset) == (outcome["queue_id"], outcome["offset"])
        assert 0 <= outcome["queue_id"] < QUEUES
        if n % 2 == 0:
            assert (m.tags, m.keys) == ("TagA", ["k1", "k2"])
            assert {k: m.properties.get(k) for k in PROPERTIES} == PROPERTIES
        else:
            assert (m.tags, m.keys) == ("TagB", ["kb"])
            assert "origin" not in m.properties
        assert outcome["offset_msg_id"] and outcome["offset_msg_id"] != outcome["msg_id"]


@PEER_ONLY
@pytest.mark.parametrize("mode", ["concurrently", "orderly", "broadcast"])
def test_project_producer_to_java_push_consumer(
    servers: Servers, java_client: JavaClientFactory, mode: str
) -> None:
    """Every message exactly once (nothing more during a 3 s linger), all properties, its queue position;
    an orderly consumer gets each queue in offset order."""
    client = java_client(servers.client)
    topic = create_topic(servers, "JavaPush")
    group = unique_name("JavaPushGroup")
    count = 8
    extra = ["--linger", "3", *({"orderly": ["--orderly"], "broadcast": ["--broadcast"]}.get(mode, []))]
    consumer = client.start_push_consumer(
        servers.namesrv, group, topic, count, extra=extra, timeout=PEER_TIMEOUT_S
    )
    with consumer:
        consumer.wait_for("ready", timeout=PEER_TIMEOUT_S)
        results = project_send(servers, project_messages(topic, count))
        finished = consumer.finish()
    finished.check()
    assert_no_noise(finished)
    received = finished.messages()
    assert len(finished.messages(acknowledged_only=False)) == count
    check_received(received, results, topic)
    assert {e["broker_name"] for e in finished.of("message")} == {BROKER_NAME}
    if mode == "orderly":
        for queue_id in {m.queue_id for m in received}:
            offsets = [m.queue_offset for m in received if m.queue_id == queue_id]
            assert offsets == sorted(offsets), f"queue {queue_id} delivered out of order: {offsets}"


@PEER_ONLY
@pytest.mark.parametrize("serialize", SERIALIZATIONS)
def test_project_producer_to_java_lite_pull_consumer(
    servers: Servers, java_client: JavaClientFactory, serialize: str
) -> None:
    """The lite pull consumer drains the topic (until 3 s without messages): each message once."""
    client = java_client(servers.client, serialize)
    topic = create_topic(servers, "JavaPull")
    count = 10
    results = project_send(servers, project_messages(topic, count))
    result = client.pull_consume(
        servers.namesrv, unique_name("JavaPullGroup"), topic, count=0, timeout=PEER_TIMEOUT_S
    ).check()
    assert_no_noise(result)
    assert sorted(q["queue_id"] for q in result.of("queue")) == list(range(QUEUES))
    check_received(result.messages(), results, topic)


@PEER_ONLY
def test_java_consumers_resume_from_committed_offsets(
    servers: Servers, java_client: JavaClientFactory
) -> None:
    """Offsets the Java consumers commit are kept by the broker: a group's second run gets only what was
    sent after the first (not a timeout that a slow consumer would pass too), and the project's admin sees
    the group caught up."""
    client = java_client(servers.client)
    topic = create_topic(servers, "JavaResume")
    count = 6
    project_send(servers, project_messages(topic, count))
    push_group, pull_group = unique_name("JavaResumePush"), unique_name("JavaResumePull")
    first = client.push_consume(servers.namesrv, push_group, topic, count, timeout=PEER_TIMEOUT_S).check()
    assert len(first.messages()) == count
    [later] = project_send(servers, [Message(topic, b"sent after the first run")])
    # The new message arrives once the consumer reads; anything old would come with it or in the linger.
    again = client.push_consume(
        servers.namesrv, push_group, topic, 1, extra=["--linger", "1"], timeout=PEER_TIMEOUT_S
    ).check()
    assert [m.msg_id for m in again.messages()] == [later.msg_id], again.describe()
    count += 1
    drained = client.pull_consume(servers.namesrv, pull_group, topic, timeout=PEER_TIMEOUT_S).check()
    assert len(drained.messages()) == count
    redrained = client.pull_consume(servers.namesrv, pull_group, topic, timeout=PEER_TIMEOUT_S).check()
    assert redrained.messages() == []

    async def lag(group: str) -> dict[int, tuple[int, int]]:
        async with Admin(servers.namesrv) as admin:
            progress = await admin.consumer_progress(group, topic)
        return {q.queue_id: (q.consumer_offset, q.broker_offset) for q in progress.queues if q.topic == topic}

    for group in (push_group, pull_group):
        offsets = asyncio.run(lag(group))
        assert sorted(offsets) == list(range(QUEUES)), offsets
        assert all(consumer == broker for consumer, broker in offsets.values()), (group, offsets)
        assert sum(broker for _, broker in offsets.values()) == count


@PEER_ONLY
def test_java_batch_send(servers: Servers, java_client: JavaClientFactory) -> None:
    """One batch of five, then batches of two: each batch lands whole, in order, in one queue."""
    client = java_client(servers.client)
    topic = create_topic(servers, "JavaBatch")
    spec = [message("batched {i}", tags="TagBatch", properties={"origin": "batch"})]
    whole = client.send_batch(
        servers.namesrv, topic, spec, extra=["--count", "5"], timeout=PEER_TIMEOUT_S
    ).check()
    [one] = whole.of("send_result")
    assert (one["status"], one["batch_size"]) == ("SEND_OK", 5)
    ids = one["msg_id"].split(",")
    assert len(ids) == 5
    split = client.send_batch(
        servers.namesrv, topic, spec, batch_size=2, extra=["--count", "5"], timeout=PEER_TIMEOUT_S
    ).check()
    assert [o["batch_size"] for o in split.of("send_result")] == [2, 2, 1]
    stored = read_back(servers, topic, 10)
    at = {(m.queue_id, m.queue_offset): m for m in stored}
    assert len(at) == len(stored) == 10, "a batch member was stored or read twice"
    assert all(m.tags == "TagBatch" and m.properties["origin"] == "batch" for m in stored)
    bodies = iter(f"batched {n}".encode() for n in [*range(5), *range(5)])
    for outcome in [one, *split.of("send_result")]:
        ids = outcome["msg_id"].split(",")
        members = [at[(outcome["queue_id"], outcome["offset"] + n)] for n in range(len(ids))]
        assert [m.body for m in members] == [next(bodies) for _ in ids]
        # The broker appends the batch's own properties to each member's; a reader takes the last UNIQ_KEY:
        # the batch's id from a 5.x client (which gives the batch one, echoed as transactionId), else the
        # member's own.
        if servers.client.major >= 5:
            assert {m.unique_id for m in members} == {outcome["transaction_id"]}
        else:
            assert [m.unique_id for m in members] == ids


@PEER_ONLY
def test_java_orderly_send(servers: Servers, java_client: JavaClientFactory) -> None:
    """The selector picks ``7 % 4``: every message in queue 3, in sending order."""
    client = java_client(servers.client)
    topic = create_topic(servers, "JavaOrderly")
    result = client.send_orderly(
        servers.namesrv,
        topic,
        [message("ordered {i}")],
        sharding_key=7,
        extra=["--count", "6"],
        timeout=PEER_TIMEOUT_S,
    ).check()
    outcomes = result.of("send_result")
    assert [(o["queue_count"], o["selected_queue"], o["queue_id"]) for o in outcomes] == [(QUEUES, 3, 3)] * 6
    offsets = [o["offset"] for o in outcomes]
    assert offsets == list(range(offsets[0], offsets[0] + 6))
    stored = read_back(servers, topic, 6)
    assert [(m.queue_id, m.body) for m in stored] == [(3, f"ordered {n}".encode()) for n in range(6)]


@PEER_ONLY
def test_java_async_and_oneway_sends(servers: Servers, java_client: JavaClientFactory) -> None:
    client = java_client(servers.client)
    topic = create_topic(servers, "JavaAsync")
    asynchronous = client.send_async(
        servers.namesrv, topic, [message("async {i}")], extra=["--count", "10"], timeout=PEER_TIMEOUT_S
    ).check()
    outcomes = asynchronous.of("send_result")
    assert sorted(o["index"] for o in outcomes) == list(range(10))
    assert {o["status"] for o in outcomes} == {"SEND_OK"}
    oneway = client.send_oneway(
        servers.namesrv, topic, [message("oneway {i}")], extra=["--count", "3"], timeout=PEER_TIMEOUT_S
    ).check()
    assert [e["index"] for e in oneway.of("sent_oneway")] == [0, 1, 2]
    stored = by_id(read_back(servers, topic, 13))
    assert sorted(m.body for m in stored.values()) == sorted(
        [f"async {n}".encode() for n in range(10)] + [f"oneway {n}".encode() for n in range(3)]
    )
    for outcome in outcomes:
        m = stored[outcome["msg_id"]]
        assert (m.queue_id, m.queue_offset) == (outcome["queue_id"], outcome["offset"])


def test_java_transaction_commit_is_visible_and_rollback_never(
    servers: Servers, java_client: JavaClientFactory
) -> None:
    """A committed message reaches consumers exactly once; a rolled-back one never does.

    Check-backs answer ROLLBACK: Apache 5.x may check back a half message it already has a verdict for (it
    batches the op messages that record verdicts, ``transactionOpBatchInterval`` 3 s, and the test brokers
    check anything older than 1 s), and ROLLBACK then changes nothing where COMMIT would store it again.
    """
    client = java_client(servers.client)
    committed_topic = create_topic(servers, "JavaTxCommit")
    rolled_topic = create_topic(servers, "JavaTxRollback")
    commit = client.send_transaction(
        servers.namesrv,
        committed_topic,
        [message("commit {i}", keys="tx-commit", properties={"origin": "tx"})],
        local_state="COMMIT",
        check_state="ROLLBACK",
        group=unique_name("JavaTxGroup"),
        extra=["--count", "2"],
        timeout=PEER_TIMEOUT_S,
    ).check()
    outcomes = commit.of("send_result")
    assert [(o["status"], o["local_state"]) for o in outcomes] == [("SEND_OK", "COMMIT_MESSAGE")] * 2
    visible = by_id(read_back(servers, committed_topic, 2))
    assert set(visible) == {o["msg_id"] for o in outcomes}
    for outcome in outcomes:
        m = visible[outcome["msg_id"]]
        assert (m.queue_id, m.body, m.keys) == (
            outcome["queue_id"],
            f"commit {outcome['index']}".encode(),
            ["tx-commit"],
        )
        assert (m.properties.get("TRAN_MSG"), m.properties.get("origin")) == ("true", "tx")
        assert m.properties.get("REAL_TOPIC") == committed_topic

    rollback = client.send_transaction(
        servers.namesrv,
        rolled_topic,
        [message("rollback {i}")],
        local_state="ROLLBACK",
        check_state="ROLLBACK",
        group=unique_name("JavaTxGroup"),
        linger=4.0,
        extra=["--count", "2"],
        timeout=PEER_TIMEOUT_S,
    ).check()
    outcomes = rollback.of("send_result")
    assert [(o["status"], o["local_state"]) for o in outcomes] == [("SEND_OK", "ROLLBACK_MESSAGE")] * 2
    assert {c["msg_id"] for c in rollback.of("check")} <= {o["msg_id"] for o in outcomes}
    project_send(servers, [Message(rolled_topic, b"sentinel")])
    assert [m.body for m in read_back(servers, rolled_topic, 1)] == [b"sentinel"]


def test_java_transaction_unknown_is_checked_back(servers: Servers, java_client: JavaClientFactory) -> None:
    """UNKNOW at first; the broker asks the producer group, the first check-back commits, the message shows
    once (later check-backs, which Apache 5.x may still send, answer ROLLBACK: too late to matter)."""
    client = java_client(servers.client)
    topic = create_topic(servers, "JavaTxCheck")
    result = client.send_transaction(
        servers.namesrv,
        topic,
        [message("checked", keys="tx-check", properties={"origin": "tx"})],
        local_state="UNKNOW",
        check_state="COMMIT,ROLLBACK",
        wait_checks=1,
        group=unique_name("JavaTxGroup"),
        timeout=PEER_TIMEOUT_S,
    ).check()
    [outcome] = result.of("send_result")
    assert (outcome["status"], outcome["local_state"]) == ("SEND_OK", "UNKNOW")
    first, *_ = result.of("check")
    assert (first["msg_id"], first["topic"], first["state"]) == (outcome["msg_id"], topic, "COMMIT_MESSAGE")
    assert first["transaction_id"] == outcome["msg_id"]
    assert base64.b64decode(first["body_b64"]) == b"checked"
    assert first["properties"].get("origin") == "tx" and first["keys"] == "tx-check"
    assert first["properties"].get("TRAN_MSG") == "true"
    [visible] = read_back(servers, topic, 1)
    assert (visible.unique_id, visible.body, visible.keys) == (outcome["msg_id"], b"checked", ["tx-check"])
    assert visible.queue_id == outcome["queue_id"]


def test_checked_back_half_message_is_stored_without_wait(
    servers: Servers, java_client: JavaClientFactory
) -> None:
    """Apache (4.9.7 and 5.3.3 alike) stores a half message with ``WAIT=false``, whatever the producer sent,
    and a check-back hands it over as stored."""
    client = java_client(servers.client)
    topic = create_topic(servers, "JavaTxWait")
    result = client.send_transaction(
        servers.namesrv,
        topic,
        [message("half")],
        local_state="UNKNOW",
        check_state="ROLLBACK",
        wait_checks=1,
        group=unique_name("JavaTxGroup"),
        timeout=PEER_TIMEOUT_S,
    ).check()
    first, *_ = result.of("check")
    assert (first["properties"].get("TRAN_MSG"), first["properties"].get("WAIT")) == ("true", "false")


def test_java_namespace_and_acl_signing(servers: Servers, java_client: JavaClientFactory) -> None:
    """``--namespace`` puts ``ns%`` before topic and group on the wire (and takes it off received messages);
    ``--access-key`` signs every request (brokers without ACL accept signed requests)."""
    client = java_client(servers.client)
    namespace = unique_name("ns").replace("-", "")
    topic = unique_name("JavaNs")
    wire_topic = f"{namespace}%{topic}"
    asyncio.run(_create_topic(servers.namesrv, wire_topic))
    acl = ["--namespace", namespace, "--access-key", "JavaPeerAK", "--secret-key", "JavaPeerSK"]
    sent = client.send_sync(
        servers.namesrv,
        topic,
        [message("spaced {i}", tags="TagNs")],
        extra=[*acl, "--count", "2"],
        timeout=PEER_TIMEOUT_S,
    ).check()
    assert {o["topic"] for o in sent.of("send_result")} == {topic}
    stored = by_id(read_back(servers, wire_topic, 2))
    assert set(stored) == {o["msg_id"] for o in sent.of("send_result")}
    assert {m.topic for m in stored.values()} == {wire_topic}
    pulled = client.pull_consume(
        servers.namesrv, unique_name("JavaNsGroup"), topic, extra=acl, timeout=PEER_TIMEOUT_S
    ).check()
    assert {(m.topic, m.tags) for m in pulled.messages()} == {(topic, "TagNs")}
    assert sorted(m.body for m in pulled.messages()) == [b"spaced 0", b"spaced 1"]


def test_java_route_and_cluster_views_match_the_project_admin(
    servers: Servers, java_client: JavaClientFactory
) -> None:
    client = java_client(servers.client)
    topic = create_topic(servers, "JavaRoute")

    async def project_view() -> tuple[Any, TopicRouteData]:
        async with Admin(servers.namesrv) as admin:
            return await admin.cluster_info(), await admin.topic_route(topic)

    info, route = asyncio.run(project_view())

    [fetched] = client.route(servers.namesrv, topic, timeout=PEER_TIMEOUT_S).check().of("route")
    assert [(q["broker_name"], q["queue_id"]) for q in fetched["queues"]] == [
        (BROKER_NAME, n) for n in range(QUEUES)
    ]

    [clusters] = client.clusters(servers.namesrv, timeout=PEER_TIMEOUT_S).check().of("clusters")
    assert clusters["clusters"] == {
        name: sorted(brokers) for name, brokers in info.cluster_addr_table.items()
    }
    assert clusters["clusters"] == {CLUSTER_NAME: [BROKER_NAME]}
    assert clusters["brokers"] == {
        name: {
            "broker_name": data.broker_name,
            "cluster": data.cluster,
            "addrs": {str(k): v for k, v in sorted(data.broker_addrs.items())},
        }
        for name, data in info.broker_addr_table.items()
    }
    assert clusters["brokers"][BROKER_NAME]["addrs"] == {"0": servers.broker_addr}

    [java_route] = (
        client.topic_route(servers.namesrv, topic, timeout=PEER_TIMEOUT_S).check().of("topic_route")
    )
    assert java_route["queue_datas"] == [
        {
            "broker_name": q.broker_name,
            "read_queue_nums": q.read_queue_nums,
            "write_queue_nums": q.write_queue_nums,
            "perm": q.perm,
            "topic_sys_flag": q.topic_sys_flag,
        }
        for q in route.queue_datas
    ]
    assert [
        (q["broker_name"], q["read_queue_nums"], q["write_queue_nums"], q["perm"])
        for q in java_route["queue_datas"]
    ] == [(BROKER_NAME, QUEUES, QUEUES, 6)]
    assert [(b["broker_name"], b["cluster"], b["addrs"]) for b in java_route["brokers"]] == [
        (BROKER_NAME, CLUSTER_NAME, {"0": servers.broker_addr})
    ]


@PEER_ONLY
def test_java_route_of_an_unknown_topic_is_a_client_error(
    servers: Servers, java_client: JavaClientFactory
) -> None:
    client = java_client(servers.client)
    result = client.route(servers.namesrv, unique_name("NoSuchTopic"), timeout=PEER_TIMEOUT_S)
    assert result.returncode == 4, result.describe()
    [error] = result.errors
    assert error["error_type"] == "MQClientException"
    assert result.done is not None and result.done["shutdown"] == "ok"


@PEER_ONLY
def test_java_steps_run_in_one_jvm_each_as_it_would_alone(
    servers: Servers, java_client: JavaClientFactory
) -> None:
    """``steps`` (what the compatibility matrix runs): a failing step ends as it would alone (client error,
    exit code 4, its client shut down) and the next steps still run; each step's lines are its own, the
    consumer receives exactly what the step before it sent, and one JVM ran them all."""
    client = java_client(servers.client)
    topic = create_topic(servers, "JavaSteps")
    group = unique_name("JavaStepsGroup")
    spec = json.dumps([message("step {i}", tags="TagSteps")])
    consume = ["--group", group, "--topic", topic, "--count", "3", "--linger", "1", "--from", "first"]
    steps = [
        Step(command, args, servers.namesrv, PEER_TIMEOUT_S)
        for command, args in [
            ("route", ["--topic", unique_name("NoSuchTopic")]),
            ("send-sync", ["--topic", topic, "--spec", spec, "--count", "3"]),
            ("push-consume", consume),
        ]
    ]
    missing, sent, consumed = client.steps(steps, timeout=3 * PEER_TIMEOUT_S)
    assert missing.returncode == 4, missing.describe()
    [error] = missing.errors
    assert error["error_type"] == "MQClientException"
    assert [e["event"] for e in missing.events] == ["error", "done"]
    assert missing.done is not None and missing.done["shutdown"] == "ok"
    outcomes = sent.check().send_results()
    assert [o.status for o in outcomes] == ["SEND_OK"] * 3 and not sent.errors
    assert sent.done is not None and sent.done["count"] == 3
    received = consumed.check().messages()
    assert sorted(m.msg_id for m in received) == sorted(o.msg_id for o in outcomes)
    assert sorted(m.body for m in received) == [f"step {i}".encode() for i in range(3)]
    assert consumed.done is not None and consumed.done["count"] == 3
    assert missing.pid == sent.pid == consumed.pid
    assert_no_noise(consumed)


@PEER_ONLY
def test_java_push_consume_times_out_readably(servers: Servers, java_client: JavaClientFactory) -> None:
    """Nothing to consume: a ``timeout`` line, then ``done``, exit 3; the JVM is gone afterwards."""
    client = java_client(servers.client)
    topic = create_topic(servers, "JavaEmpty")
    started = time.monotonic()
    result = client.push_consume(servers.namesrv, unique_name("JavaEmptyGroup"), topic, 1, timeout=8)
    assert time.monotonic() - started < 8 + 30
    assert result.returncode == 3, result.describe()
    assert [e["event"] for e in result.events] == ["ready", "timeout", "done"]
    assert result.errors[0]["expected"] == 1 and result.messages() == []


# ------------------------------------------------------------------------ the peer program, no servers


def test_a_bad_message_spec_is_a_usage_error(java_client: JavaClientFactory, refused_namesrv: str) -> None:
    client = java_client(APACHE_5)
    result = client.run(
        "send-sync", ["--topic", "T", "--spec", "-"], namesrv=refused_namesrv, stdin="{not json", timeout=60
    )
    assert result.returncode == 2, result.describe()
    [error] = result.errors
    assert error["error_type"] == "UsageError" and "not JSON" in error["message"]
    unknown = client.run("send-sync", ["--topic", "T", "--no-such-option", "1"], namesrv=refused_namesrv)
    assert unknown.returncode == 2 and "--no-such-option" in unknown.errors[0]["message"]
    assert_no_noise(result)


@pytest.mark.parametrize("client_version", ["4.9.8", "5.3.3"])
def test_send_without_a_listening_namesrv_is_a_client_error(
    java_client: JavaClientFactory, refused_namesrv: str, client_version: str
) -> None:
    result = java_client(CLIENTS[client_version]).send_sync(
        refused_namesrv, "T", [message("hello")], timeout=PEER_TIMEOUT_S
    )
    assert result.returncode == 4, result.describe()
    assert not result.killed and result.done is not None and result.done["shutdown"] == "ok"
    assert [e["event"] for e in result.events] == ["ready", "error", "done"]
    assert "connect to" in result.errors[0]["message"]
    assert "rocketmq_client.log" in result.stderr or "peer.log" in result.stderr, (
        "no client log tail on stderr"
    )


def test_send_to_a_namesrv_that_never_answers_times_out(
    java_client: JavaClientFactory, silent_namesrv: str
) -> None:
    """The peer's own deadline (2 s, before the client's 3 s route request times out) ends a send that is
    still waiting for the NameServer: a ``timeout`` line, exit 3, no kill needed."""
    started = time.monotonic()
    result = java_client(APACHE_5).send_sync(silent_namesrv, "T", [message("hello")], timeout=2)
    assert time.monotonic() - started < 2 + KILL_GRACE_S
    assert result.returncode == 3, result.describe()
    assert not result.killed, "the peer's watchdog should have ended it before the runner had to"
    [timeout] = result.errors
    assert timeout["event"] == "timeout" and timeout["after_s"] == 2.0
    # "starting" (before the command began) or "start" (the producer starting) when the JVM itself was slow:
    # the deadline counts from the JVM's start, and a loaded machine can spend 2 s there (seen in CI).
    assert timeout["stage"] in ("starting", "start", "send"), timeout


def test_a_peer_whose_parent_dies_exits_by_itself(
    java_client: JavaClientFactory, refused_namesrv: str, tmp_path: Path
) -> None:
    """A test run killed without cleaning up must not leave JVMs running: the peer notices and exits."""
    client = java_client(APACHE_5)
    argv = [*(client.program or []), "push-consume", "--namesrv", refused_namesrv, "--topic", "T"]
    argv += ["--count", "1", "--timeout", "300"]
    launcher = (
        "import os, subprocess, sys\n"
        f"env = dict(os.environ, HOME={str(tmp_path)!r}, {PARENT_PID_ENV}=str(os.getpid()))\n"
        f"p = subprocess.Popen({argv!r}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,\n"
        "    start_new_session=True, env=env)\n"
        "print(p.pid)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", launcher],
        capture_output=True,
        text=True,
        timeout=60,
        env=client.env,
        check=True,
    )
    pid = int(out.stdout.strip())
    try:
        deadline = time.monotonic() + 30
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(pid), f"orphaned Java peer {pid} still running"
    finally:
        if _running(pid):
            os.killpg(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie left for a reaper that is not us counts as gone)."""
    if process_gone(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
