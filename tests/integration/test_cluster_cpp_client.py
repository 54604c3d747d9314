"""Apache's C++ client (PyPI ``rocketmq`` 0.4.4, run in its own processes by ``cpp_client``) and the project's
clients on the same cluster, both directions: what one side sends, the other receives intact.
"""

from __future__ import annotations

import asyncio

import pytest

from producer import Message, Producer, SendStatus
from tests.integration.clusters.fixture import on_representative_setups
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import ReadBackError, read_topic, read_topic_raw
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.cpp_peer import runner

#: The C++ client on the servers' kinds and lines; its sends and consumption on every other set-up
#: are the compatibility matrix's C++ column.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("scenario_budget"),
    on_representative_setups(),
]

PEER_TIMEOUT_S = 20.0
#: Rounds in which oneway messages the broker does not hold are sent again.
ONEWAY_ROUNDS = 3


def sent_by_python(topic: str) -> list[Message]:
    return [
        Message(
            topic,
            f"from python {i}: grüße".encode(),
            tags=f"Tag{i % 2}",
            keys=[f"py-{i}"],
            properties={"origin": "python", "index": str(i)},
        )
        for i in range(6)
    ]


async def send_all(namesrv: str, messages: list[Message]) -> None:
    async with Producer(unique_name("pg"), namesrv) as producer:
        results = [await producer.send(message) for message in messages]
    assert all(r.status is SendStatus.SEND_OK for r in results)


def assert_received(expected: list[Message], received: list[runner.ReceivedMessage]) -> None:
    got = {m.body: m for m in received}
    assert set(got) == {m.body for m in expected}
    for message in expected:
        seen = got[message.body]
        assert seen.topic == message.topic
        assert (seen.tags, seen.keys) == (message.tags, " ".join(message.keys))
        for name, value in message.properties.items():
            assert seen.properties.get(name) == value, (name, seen.properties)


async def test_cpp_pull_consumer_reads_what_python_sent(
    cluster: Cluster, cpp_client: runner.CppClient
) -> None:
    topic = unique_name("PyToCppPull")
    messages = sent_by_python(topic)
    await send_all(cluster.namesrv, messages)
    result = await asyncio.to_thread(
        cpp_client.pull_consume,
        cluster.namesrv,
        unique_name("cpp-pull"),
        topic,
        count=len(messages),
        properties=["origin", "index"],
        timeout=PEER_TIMEOUT_S,
    )
    assert_received(messages, result.check().messages())


async def test_cpp_push_consumer_receives_what_python_sends(
    cluster: Cluster, cpp_client: runner.CppClient
) -> None:
    topic = unique_name("PyToCppPush")
    messages = sent_by_python(topic)
    # The topic must exist before the consumer subscribes; its tag keeps this one out of the subscription.
    await send_all(cluster.namesrv, [Message(topic, b"creates the topic", tags="Setup")])
    peer = cpp_client.start_push_consumer(
        cluster.namesrv,
        unique_name("cpp-push"),
        topic,
        len(messages),
        expression="Tag0 || Tag1",
        properties=["origin", "index"],
        timeout=PEER_TIMEOUT_S,
    )
    with peer:
        await asyncio.to_thread(peer.wait_for, "ready", PEER_TIMEOUT_S)
        await send_all(cluster.namesrv, messages)
        result = await asyncio.to_thread(peer.finish)
    assert_received(messages, result.check().messages())


async def test_python_reads_what_the_cpp_producer_sent(
    cluster: Cluster, cpp_client: runner.CppClient
) -> None:
    # Created on every broker first: orderly sends keep one queue only while the route stays the same.
    topic = await create_on_every_broker(cluster, "CppToPy")
    specs = [
        cpp_client.message(
            f"from c++ {i}: ünïcode",
            tags=f"CppTag{i % 2}",
            keys=[f"cpp-{i}", "shared"],
            properties={"origin": "cpp", "index": str(i)},
        )
        for i in range(6)
    ]
    sent = await asyncio.to_thread(
        cpp_client.send_sync, cluster.namesrv, topic, specs, timeout=PEER_TIMEOUT_S
    )
    outcomes = sent.check().send_results()
    assert [o.status for o in outcomes] == ["SEND_OK"] * len(specs)
    orderly = await asyncio.to_thread(
        cpp_client.send_orderly,
        cluster.namesrv,
        topic,
        [cpp_client.message(f"ordered {i}") for i in range(5)],
        sharding_key=3,
        timeout=PEER_TIMEOUT_S,
    )
    orderly.check()

    stored = await read_topic(cluster.namesrv, topic, len(specs) + 5)
    by_body = {m.body: m for m in stored}
    for i in range(6):
        message = by_body[f"from c++ {i}: ünïcode".encode()]
        assert (message.tags, message.keys) == (f"CppTag{i % 2}", [f"cpp-{i}", "shared"])
        assert (message.properties.get("origin"), message.properties.get("index")) == ("cpp", str(i))
        assert message.unique_id, "the C++ producer's unique id travels as UNIQ_KEY"
    ordered = [m for m in stored if m.body.startswith(b"ordered ")]
    assert len({m.queue_id for m in ordered}) == 1, "one sharding key, one queue"
    assert [m.body for m in ordered] == [f"ordered {i}".encode() for i in range(5)]


async def test_every_cpp_send_kind_reaches_both_cpp_consumers(
    cluster: Cluster, cpp_client: runner.CppClient
) -> None:
    """The C++ client on both ends: send_sync, send_oneway, send_orderly and send_batch into the cluster,
    then its PullConsumer and PushConsumer each receive all of it with bodies, tags, keys and properties."""
    topic = unique_name("CppBothEnds")

    def spec(kind: str, i: int) -> dict[str, object]:
        return dict(
            cpp_client.message(
                f"{kind} {i}: ü",
                tags=f"{kind}-tag",
                keys=[f"{kind}-{i}"],
                properties={"kind": kind, "index": str(i)},
            )
        )

    kinds = {"sync": 3, "oneway": 3, "orderly": 3, "batch": 4}
    specs = {kind: [spec(kind, i) for i in range(n)] for kind, n in kinds.items()}
    senders = {
        "sync": lambda s: cpp_client.send_sync(cluster.namesrv, topic, s, timeout=PEER_TIMEOUT_S),
        "oneway": lambda s: cpp_client.send_oneway(cluster.namesrv, topic, s, timeout=PEER_TIMEOUT_S),
        "orderly": lambda s: cpp_client.send_orderly(
            cluster.namesrv, topic, s, sharding_key=1, timeout=PEER_TIMEOUT_S
        ),
        "batch": lambda s: cpp_client.send_batch(
            cluster.namesrv, topic, s, batch_size=len(s), timeout=PEER_TIMEOUT_S
        ),
    }
    for kind, send in senders.items():
        (await asyncio.to_thread(send, specs[kind])).check()
    expected = {(kind, i) for kind, n in kinds.items() for i in range(n)}
    # The C++ 0.4.4 client sends a "batch" as one SEND_MESSAGE with batch=1, which Java brokers (and ours)
    # store as a single message whose body is the encoded batch: it counts once.
    total = sum(kinds.values()) - (kinds["batch"] - 1)

    def check(received: list[runner.ReceivedMessage]) -> None:
        plain = [m for m in received if m.properties.get("kind") in ("sync", "oneway", "orderly")]
        got = {(m.properties["kind"], int(m.properties["index"])) for m in plain}
        assert got == {k for k in expected if k[0] != "batch"}
        for m in plain:
            kind, i = m.properties["kind"], int(m.properties["index"])
            assert m.body == f"{kind} {i}: ü".encode() and m.topic == topic
            assert (m.tags, m.keys) == (f"{kind}-tag", f"{kind}-{i}")
        assert len({m.queue_id for m in plain if m.properties["kind"] == "orderly"}) == 1
        assert len(received) == total
        (batch,) = [m for m in received if m.properties.get("kind") not in ("sync", "oneway", "orderly")]
        assert b"batch 0" in batch.body and b"batch 3" in batch.body, "the batch's entries travel in its body"

    # Every message is in the broker before the C++ consumers read. A oneway send is at most once by design:
    # a broker whose send queue is late (Apache drops requests that waited past waitTimeMillsInSendQueue, and
    # a oneway request gets no SYSTEM_BUSY back) loses it without a word. Those, and only those, are sent
    # again, a bounded number of times; anything else missing fails here by name rather than as a short pull.
    for _ in range(ONEWAY_ROUNDS):
        try:
            await read_topic(cluster.namesrv, topic, total, timeout_s=PEER_TIMEOUT_S)
            break
        except ReadBackError:
            stored = await read_topic_raw(cluster.namesrv, topic, 0)
            held = {m.properties.get("index") for m in stored if m.properties.get("kind") == "oneway"}
            missing = [s for i, s in enumerate(specs["oneway"]) if str(i) not in held]
            if not missing:
                raise
            (await asyncio.to_thread(senders["oneway"], missing)).check()
    else:
        await read_topic(cluster.namesrv, topic, total, timeout_s=PEER_TIMEOUT_S)
    pulled = await asyncio.to_thread(
        cpp_client.pull_consume,
        cluster.namesrv,
        unique_name("cpp-pull"),
        topic,
        count=total,
        properties=["kind", "index"],
        timeout=PEER_TIMEOUT_S,
    )
    check(pulled.check().messages())
    pushed = await asyncio.to_thread(
        cpp_client.push_consume,
        cluster.namesrv,
        unique_name("cpp-push"),
        topic,
        total,
        properties=["kind", "index"],
        timeout=PEER_TIMEOUT_S,
    )
    check(pushed.check().messages())
