"""The compatibility matrix (see :mod:`tests.integration.matrix`): every applicable (client, operation,
serialization) cell against every set-up the ``cluster`` fixture provides.

Each cell checks its result against something the client under test did not produce: messages sent are read
back by the project's PULL reader, messages consumed were sent by the project's producer, routes and cluster
tables are compared with what the set-up itself registered.
"""

from __future__ import annotations

import asyncio
import collections
import functools
from collections.abc import Iterator

import pytest

from producer import Message, Producer, SendStatus
from rocketmq_wire.codes import SerializeType
from tests.integration.apache.releases import ApacheRelease, full_releases, releases
from tests.integration.clusters.fixture import skip_or_fail
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import read_topic
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.cpp_peer import runner as cpp_runner
from tests.integration.go_peer import build as go_build
from tests.integration.java_peer import build as java_build
from tests.integration.matrix.cells import cell_id, cells
from tests.integration.matrix.clients import (
    Got,
    JavaStepsMatrixClient,
    MatrixClient,
    MqadminClient,
    PeerMatrixClient,
    ProjectClient,
    RmqClient,
)

pytestmark = [pytest.mark.integration]

MESSAGES = 4
QUEUES = 4


def release_for(cluster: Cluster) -> ApacheRelease:
    """The Apache release whose Java client and mqadmin a cell uses: the set-up's own, else (the project's
    servers alone) the newest full release."""
    known = {r.version: r for r in releases()}
    for version in (cluster.version, cluster.namesrv_version, *(b.kind for b in cluster.brokers)):
        if version in known:
            return known[version]
    return full_releases()[-1]


#: Whether a peer runs here is asked once per run (each answer starts a peer process).
_cpp_unavailable = functools.cache(cpp_runner.binding_unavailable_reason)
_java_unavailable = functools.cache(java_build.java_peer_unavailable)


def _peer_client(client_name: str, cluster: Cluster) -> MatrixClient:
    if client_name == "cpp":
        reason = _cpp_unavailable()
        if reason is not None:
            skip_or_fail(reason)
        cpp = cpp_runner.CppClient()
        return PeerMatrixClient("cpp", {SerializeType.JSON: cpp})
    if client_name == "go":
        reason = go_build.go_peer_unavailable()
        if reason is not None:
            skip_or_fail(reason)
        go = go_build.GoClient()
        return PeerMatrixClient(
            "go",
            {SerializeType.JSON: go, SerializeType.ROCKETMQ: go},
            serialize_args={s: ["--serialize", s.name] for s in (SerializeType.JSON, SerializeType.ROCKETMQ)},
            consume_args=["--consume-from", "first"],
        )
    release = release_for(cluster)
    reason = _java_unavailable(release)
    if reason is not None:
        skip_or_fail(reason)
    return JavaStepsMatrixClient(
        {s: java_build.JavaClient(release, s.name) for s in (SerializeType.JSON, SerializeType.ROCKETMQ)},
        consume_args=["--from", "first"],
    )


@pytest.fixture
def matrix_client(request: pytest.FixtureRequest, cluster: Cluster) -> Iterator[MatrixClient]:
    name: str = request.node.callspec.params["client_name"]
    client: MatrixClient
    if name == "project":
        client = ProjectClient()
    elif name == "rmq":
        client = RmqClient()
    elif name == "mqadmin":
        client = MqadminClient(release_for(cluster))
    else:
        client = _peer_client(name, cluster)
    yield client
    if isinstance(client, PeerMatrixClient | JavaStepsMatrixClient):
        survivors = [pid for peer in client.peers() for pid in peer.close()]
        assert not survivors, f"{name} peer processes left behind: {survivors}"


def sample(topic: str, client: str, serialize: SerializeType, count: int = MESSAGES) -> list[Message]:
    # mqadmin's sendMessage sets no user property, and each of its sends is a JVM start: two will do.
    properties = {} if client == "mqadmin" else {"origin": client}
    count = min(count, 2) if client == "mqadmin" else count
    return [
        Message(
            topic,
            f"{client} {serialize.name} {i}: grüße".encode(),
            tags=f"Tag{i % 2}",
            keys=[f"{client}-{i}"],
            properties=properties,
        )
        for i in range(count)
    ]


async def topic_on_every_broker(cluster: Cluster) -> str:
    return await create_on_every_broker(cluster, "Matrix", QUEUES)


def assert_same_messages(expected: list[Message], got: list[Got]) -> None:
    counts = collections.Counter(g.body for g in got)
    duplicates = sorted(body for body, n in counts.items() if n > 1)
    assert not duplicates, f"received more than once: {duplicates}"
    assert sorted(counts) == sorted(m.body for m in expected)
    by_body = {g.body: g for g in got}
    for message in expected:
        seen = by_body[message.body]
        assert seen.tags == message.tags
        assert seen.keys == " ".join(message.keys)
        for name, value in message.properties.items():
            assert seen.properties.get(name) == value, (name, seen.properties)


async def check_send(client: MatrixClient, cluster: Cluster, serialize: SerializeType) -> None:
    topic = await topic_on_every_broker(cluster)
    messages = sample(topic, client.name, serialize)
    ids = await client.send(cluster, messages, serialize)
    assert len(ids) == len(messages), f"{len(ids)} of {len(messages)} acknowledged SEND_OK"
    stored = await read_topic(cluster.namesrv, topic, len(messages))
    assert {m.unique_id for m in stored} == set(ids)
    assert_same_messages(
        messages, [Got(m.body, m.tags, " ".join(m.keys) or None, dict(m.properties)) for m in stored]
    )


async def check_consume(client: MatrixClient, cluster: Cluster, serialize: SerializeType) -> None:
    topic = await topic_on_every_broker(cluster)
    messages = sample(topic, "project", serialize, count=8)
    async with Producer(unique_name("MatrixFeed"), cluster.namesrv) as producer:
        results = [await producer.send(message) for message in messages]
    assert all(r.status is SendStatus.SEND_OK for r in results)
    got = await client.consume(cluster, topic, unique_name("MatrixGroup"), len(messages), serialize)
    assert_same_messages(messages, got)


async def check_route(client: MatrixClient, cluster: Cluster, serialize: SerializeType) -> None:
    topic = await topic_on_every_broker(cluster)
    queues = await client.route(cluster, topic, serialize)
    assert queues == {(b.name, i) for b in cluster.brokers for i in range(QUEUES)}


async def check_clusters(client: MatrixClient, cluster: Cluster, serialize: SerializeType) -> None:
    listed = await client.clusters(cluster, serialize)
    assert listed == {(cluster.cluster_name, b.name, b.addr) for b in cluster.brokers}


CHECKS = {"send": check_send, "consume": check_consume, "route": check_route, "clusters": check_clusters}

#: Clients whose every cell starts a JVM, and how many of their cells run at once. (The Java client's cells
#: share a JVM per serialization, and must all run at once: see ``JavaStepsMatrixClient``.)
JVM_CLIENTS = frozenset({"mqadmin"})
JVM_CELLS_AT_ONCE = 3

#: (provider, client, operation, serialization) -> the cell's failure, or None when it passed.
OUTCOMES: dict[tuple[str, str, str, str], BaseException | None] = {}


async def run_client_cells(client: MatrixClient, cluster: Cluster) -> None:
    """Run every cell of ``client`` on ``cluster`` at once and remember how each ended.

    A client's commands mostly wait (a JVM starting, a consumer rebalancing, a broker answering), so its
    cells overlap well; each cell still checks only its own operation, with its own topic and group.
    """
    mine = [(op, serialize) for name, op, serialize in cells() if name == client.name]
    # Not all 8 at once for the clients that start a JVM per cell: 8 JVMs starting together on 2 cores made
    # Apache's client miss its own connect and send deadlines (seen in CI); 3 still overlap the waiting.
    slots = asyncio.Semaphore(JVM_CELLS_AT_ONCE if client.name in JVM_CLIENTS else len(mine))
    if isinstance(client, JavaStepsMatrixClient):
        client.expect(mine)

    async def one(op: str, serialize: SerializeType) -> None:
        async with slots:
            try:
                await CHECKS[op](client, cluster, serialize)
            finally:
                if isinstance(client, JavaStepsMatrixClient):
                    client.cell_ended(op, serialize)

    ended = await asyncio.gather(*(one(op, serialize) for op, serialize in mine), return_exceptions=True)
    for (op, serialize), outcome in zip(mine, ended, strict=True):
        failure = outcome if isinstance(outcome, BaseException) else None
        OUTCOMES[(cluster.provider, client.name, op, serialize.name)] = failure


@pytest.mark.parametrize(
    ("client_name", "operation", "serialize"), cells(), ids=[cell_id(*cell) for cell in cells()]
)
async def test_cell(
    cluster: Cluster,
    matrix_client: MatrixClient,
    client_name: str,
    operation: str,
    serialize: SerializeType,
) -> None:
    assert matrix_client.name == client_name
    key = (cluster.provider, client_name, operation, serialize.name)
    if key not in OUTCOMES:
        await run_client_cells(matrix_client, cluster)
    failure = OUTCOMES.pop(key)
    if failure is not None:
        raise failure
