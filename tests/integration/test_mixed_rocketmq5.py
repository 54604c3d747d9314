"""RocketMQ 5 features in one cluster of Apache 5.5.0's broker and the project's broker, on the project's
NameServer: every topic and group below spans both brokers, and whatever one broker does the other must do
the same (a difference is a bug in the project's broker).

* **Timer messages and recall.** The project's producer sends timer messages (a delivery time, a delay) to
  each broker and recalls one on each, and Apache's Java client (of the same release as the broker) sends
  delayed ones to both: every other one is stored in its topic on the broker it was sent to, no earlier
  than its time, once; neither recalled one ever is.
* **POP.** One group pops a topic on both brokers: it receives from both, acknowledges most, lets one
  message per broker run out of invisible time, shortens another's (CHANGE_INVISIBLE_TIME) and extends a
  third's before acknowledging it. The first two come back from their broker one delivery later; nothing is
  lost, nothing acknowledged comes back.
* **Topic attributes.** A FIFO topic's attributes read the same on both; both store a normal message sent
  to it (the message type is checked by Apache's Proxy, not its broker). A compacted topic
  (``cleanup.policy=COMPACTION``) refuses a message without keys on both with Apache's code and remark.
* **SQL92.** The same messages go to both brokers; one SQL92 subscription gets the same ones from each.
* **Request-reply.** Requests to one broker are answered with replies that the reply topic's round robin
  sends through either broker: each reaches its requester, also when the broker that stores the reply is
  not the one the request went to.

Not here: ACL 2.0. Apache reads ``authenticationEnabled`` / ``authorizationEnabled`` only at start (its
``AuthConfig`` is not among the settings ``updateBrokerConfig`` changes), so ``test_mixed_acl2.py`` starts
the same set-up with them on, and ``test_acl2.py`` holds the project's broker to Apache's case by case.

One cluster start for the module (Apache's broker; one more JVM, the Java client's sends, starts while the
timer scenario's own sends go); the scenarios run on it one after another.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from admin import Admin
from consumer import ConsumeStatus, PullConsumer, PushConsumer, SimpleConsumer
from producer import BrokerError, Message, MessageQueue, Producer, SendResult
from rocketmq_wire import ResponseCode
from rocketmq_wire.message import MessageExt
from rocketmq_wire.message import const as props
from tests.integration.apache.releases import releases
from tests.integration.clusters.fixture import running_cluster
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.providers import all_servers_mixed_spec, selected_families
from tests.integration.clusters.readback import read_topic
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.java_peer.fixtures import JavaClientFactory

pytestmark = pytest.mark.integration

#: The Apache release whose broker and Java client join the project's broker: 5.5.0, whose POP the
#: project's broker serves (5.3.3's revive, for one, does not name the group), when selected.
RELEASE_55 = [r for r in releases() if r.version == "5.5.0"]
#: A broker floors a delivery time to its ``timerPrecisionMs`` (1 s): a message may come this much early.
PRECISION_MS = 1000
#: How late a delivered timer message may be stored on a loaded 2-core machine.
LATE_MS = 10_000
#: Apache's remark for a send without keys to a compacted topic.
KEY_MISSING = "Required message key is missing"
DEADLINE_S = 60.0
#: Properties only Apache 5.x's broker stores, a known difference of the commit log's format: 5.x adds
#: MSG_REGION and TRACE_ON to every message sent (its send context is built for every request; 4.9.x built
#: it only for a send hook) and no longer strips WAIT; the project's broker writes properties as 4.9.x does.
#: docs/compatibility.md says so. Any other property one broker's copies lack fails.
STORE_FORMAT_ONLY = frozenset({props.MSG_REGION, props.TRACE_ON, props.WAIT})


@pytest.fixture(scope="module")
def mixed(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The module's own cluster: the project's NameServer, Apache's 5.5.0 broker and the project's; its
    servers' logs are kept when a test of the module failed."""
    if "mixed" not in selected_families():
        pytest.skip("the mixed providers are not selected (ROCKETMQ_PROVIDERS)")
    if not RELEASE_55:
        pytest.skip("Apache 5.5.0 is not among the selected releases (ROCKETMQ_VERSIONS)")
    before = request.session.testsfailed
    spec = all_servers_mixed_spec(RELEASE_55[0])
    with running_cluster(spec, "rmq-mixed5", lambda: request.session.testsfailed > before) as (running, _):
        yield running


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _broker_of(cluster: Cluster, message: MessageExt) -> str:
    """The name of the broker that stored ``message`` (its store host is the broker's address)."""
    return next(b.name for b in cluster.brokers if b.addr == message.store_host)


async def _queue_per_broker(producer: Producer, topic: str) -> dict[str, MessageQueue]:
    """Queue 0 of ``topic`` on each broker, by broker name: sends to it land on that broker."""
    return {q.broker_name: q for q in await producer.fetch_publish_queues(topic) if q.queue_id == 0}


def _assert_same_property_names(
    cluster: Cluster, messages: list[MessageExt], kind_of: Callable[[MessageExt], str]
) -> None:
    """Messages of one kind (``kind_of``) have the same property names whichever broker they came from."""
    names: dict[str, dict[str, set[str]]] = {}
    for message in messages:
        by_broker = names.setdefault(kind_of(message), {})
        found = set(message.properties) - STORE_FORMAT_ONLY
        by_broker.setdefault(_broker_of(cluster, message), set()).update(found)
    differences: dict[str, dict[str, list[str]]] = {}
    for kind, by_broker in names.items():
        common = set.intersection(*(set(found) for found in by_broker.values()))
        extra = {broker: sorted(found - common) for broker, found in by_broker.items() if found - common}
        if len(by_broker) > 1 and extra:
            differences[kind] = extra
    assert not differences, f"property names only one broker's copies have: {differences}"


async def _set_on_every_broker(cluster: Cluster, settings: dict[str, str]) -> None:
    """A broker setting changed live, as an operator would (``updateBrokerConfig``)."""
    async with Admin(cluster.namesrv) as admin:
        for broker in cluster.brokers:
            await admin.update_broker_config(broker.addr, settings)


async def test_timer_messages_land_on_time_on_both_brokers_and_recalled_ones_never(
    mixed: Cluster, java_client: JavaClientFactory
) -> None:
    cluster = mixed
    # Apache's brokers refuse recalls unless the operator allows them (off by default).
    await _set_on_every_broker(cluster, {"recallMessageEnable": "true"})
    topic = await create_on_every_broker(cluster, "MixTimer", queues=2)
    absolute: dict[bytes, int] = {}
    delayed: dict[bytes, int] = {}
    sent_to: dict[bytes, str] = {}
    # Apache's 5.5.0 Java client sends timer messages too, one per queue (its round robin: both brokers),
    # in one JVM that starts while the project's producer sends.
    java_specs: list[dict[str, Any]] = [{"body": f"java delay {i}", "delay_time_sec": 2} for i in range(4)]
    java_sent = asyncio.ensure_future(
        asyncio.to_thread(java_client(RELEASE_55[0], "JSON").send_sync, cluster.namesrv, topic, java_specs)
    )
    async with Producer(unique_name("MixTimerPg"), cluster.namesrv) as producer:
        queues = await _queue_per_broker(producer, topic)
        assert sorted(queues) == sorted(b.name for b in cluster.brokers)
        start = _now_ms()
        recalled_due = start + 5_000
        for broker, queue in queues.items():
            at, after, doomed = (f"{broker} {what}".encode() for what in ("deliver-at", "delay", "recalled"))
            absolute[at] = start + 4_000
            delayed[after] = 3_000
            results: list[SendResult] = [
                await producer.send(Message(topic, at, deliver_time_ms=absolute[at]), queue=queue),
                await producer.send(Message(topic, after, delay_time_sec=3), queue=queue),
                await producer.send(Message(topic, doomed, deliver_time_ms=recalled_due), queue=queue),
            ]
            assert [r.message_queue.broker_name for r in results] == [broker] * 3
            sent_to.update({at: broker, after: broker})
            victim = results[2]
            assert victim.recall_handle, f"{broker} answered a timer message without a recall handle"
            assert await producer.recall(topic, victim.recall_handle) == victim.msg_id
    java = await java_sent
    assert java.ok, java.describe()
    for result in java.of("send_result"):
        body = java_specs[result["index"]]["body"].encode()
        sent_to[body], delayed[body] = result["broker_name"], 2_000
    assert len(java.of("send_result")) == len(java_specs)
    assert {sent_to[s["body"].encode()] for s in java_specs} == set(queues), "Java's went to both brokers"

    # What the topic holds once every delivery time, the recalled ones' included, is well past.
    await asyncio.sleep(max(0.0, (recalled_due + 2 * PRECISION_MS - _now_ms()) / 1000))
    stored = await read_topic(cluster.namesrv, topic, len(sent_to), timeout_s=LATE_MS / 1000)
    bodies = [m.body for m in stored]
    assert sorted(bodies) == sorted(sent_to), "every timer message once, no recalled one"
    for message in stored:
        assert _broker_of(cluster, message) == sent_to[message.body], "delivered by the broker it was sent to"
        due_ms = absolute.get(message.body) or message.born_timestamp + delayed[message.body]
        early, late = due_ms - message.store_timestamp, message.store_timestamp - due_ms
        assert early <= PRECISION_MS, f"{message.body!r} stored {early} ms before its time"
        assert late <= LATE_MS, f"{message.body!r} stored {late} ms after its time"
    # The delivered copies carry the same properties on both brokers (their values differ: times, ids).
    _assert_same_property_names(
        cluster,
        stored,
        lambda m: ("java " if m.body.startswith(b"java") else "") + m.body.decode().split(" ")[1],
    )


async def test_one_pop_group_over_both_brokers_loses_nothing_and_redelivers_only_the_unacked(
    mixed: Cluster,
) -> None:
    cluster = mixed
    topic = await create_on_every_broker(cluster, "MixPop", queues=2)
    per_broker = 6
    sent_to: dict[bytes, str] = {}
    async with Producer(unique_name("MixPopPg"), cluster.namesrv) as producer:
        for broker, queue in (await _queue_per_broker(producer, topic)).items():
            for i in range(per_broker):
                body = f"{broker} pop {i}".encode()
                result = await producer.send(Message(topic, body), queue=queue)
                assert result.message_queue.broker_name == broker
                sent_to[body] = broker
    # Per broker: message 0 is left to run out of its invisible time, message 1 is made visible again
    # sooner (CHANGE_INVISIBLE_TIME), message 2 is hidden longer and then acknowledged with its new handle.
    left = {body for body in sent_to if body.endswith(b" pop 0")}
    shortened = {body for body in sent_to if body.endswith(b" pop 1")}
    extended = {body for body in sent_to if body.endswith(b" pop 2")}
    deliveries: list[tuple[bytes, int, str]] = []
    received: list[MessageExt] = []
    acked: list[bytes] = []
    async with SimpleConsumer(
        unique_name("MixPopCg"),
        cluster.namesrv,
        consume_from="FIRST_OFFSET",
        invisible_duration=4,
        await_duration=1,
    ) as consumer:
        consumer.subscribe(topic)
        deadline = time.monotonic() + DEADLINE_S
        while set(acked) != set(sent_to) and time.monotonic() < deadline:
            done = []
            for message in await consumer.receive(16):
                received.append(message)
                deliveries.append((message.body, message.reconsume_times, _broker_of(cluster, message)))
                first = message.reconsume_times == 0
                if first and message.body in left:
                    continue
                if first and message.body in shortened:
                    await consumer.change_invisible_duration(message, 1)
                    continue
                if first and message.body in extended:
                    await consumer.change_invisible_duration(message, 30)
                done.append(message)
            if done:
                await consumer.ack(done)
                acked += [m.body for m in done]
        # One more receive: nothing acknowledged is still on its way back.
        late = await consumer.receive(16, await_duration=2)
    assert not late, f"delivered again after every message was acknowledged: {[m.body for m in late]}"
    assert sorted(acked) == sorted(sent_to), "every message acknowledged once"
    assert {broker for _, _, broker in deliveries} == {b.name for b in cluster.brokers}
    for body, _, broker in deliveries:
        assert broker == sent_to[body], f"{body!r} delivered by {broker}, sent to {sent_to[body]}"
    _assert_same_property_names(
        cluster, received, lambda m: "redelivered" if m.reconsume_times else "first delivery"
    )
    again = sorted(body for body, times, _ in deliveries if times > 0)
    assert again == sorted(left | shortened), "only the unacknowledged came back, each once"
    assert all(times == 1 for body, times, _ in deliveries if times > 0), deliveries


async def test_attributes_sql92_and_replies_are_the_same_through_either_broker(mixed: Cluster) -> None:
    cluster = mixed
    names = sorted(b.name for b in cluster.brokers)
    # -- topic attributes: read the same on both; checked on send as Apache's broker checks them
    fifo = await create_on_every_broker(cluster, "MixFifo", queues=1, attributes={"message.type": "FIFO"})
    compacted = await create_on_every_broker(
        cluster, "MixCompact", queues=1, attributes={"cleanup.policy": "COMPACTION"}
    )
    async with Admin(cluster.namesrv) as admin:
        for endpoint in cluster.brokers:
            assert (await admin.topic_config(fifo, endpoint.addr)).attributes == {"message.type": "FIFO"}
            config = await admin.topic_config(compacted, endpoint.addr)
            assert config.attributes == {"cleanup.policy": "COMPACTION"}
    async with Producer(unique_name("MixAttrPg"), cluster.namesrv) as producer:
        for broker, queue in (await _queue_per_broker(producer, fifo)).items():
            # a normal message to a FIFO topic: Apache's broker leaves the type check to its Proxy
            stored = await producer.send(Message(fifo, f"{broker} normal".encode()), queue=queue)
            assert stored.message_queue.broker_name == broker
        refusals: dict[str, tuple[int, str | None] | str] = {}
        for broker, queue in (await _queue_per_broker(producer, compacted)).items():
            try:
                await producer.send(Message(compacted, b"no key"), queue=queue)
                refusals[broker] = "stored"
            except BrokerError as refused:
                refusals[broker] = (refused.code, refused.remark)
            keyed = await producer.send(Message(compacted, b"keyed", keys=["k1"]), queue=queue)
            assert keyed.message_queue.broker_name == broker
    assert refusals == {name: (ResponseCode.MESSAGE_ILLEGAL, KEY_MISSING) for name in names}

    # -- SQL92: the same messages on both brokers, one subscription, the same selection from each
    await _set_on_every_broker(cluster, {"enablePropertyFilter": "true"})
    topic = await create_on_every_broker(cluster, "MixSql", queues=1)
    count = 12

    def properties(i: int) -> dict[str, str]:
        found = {"seq": str(i), "a": str(i % 7)}
        if i % 3:
            found["region"] = ("eu", "us")[i % 2]
        return found

    sql = "a > 2 AND region = 'eu'"
    wanted = sorted(i for i in range(count) if i % 7 > 2 and i % 3 and i % 2 == 0)
    assert wanted, "the expression selects something"
    async with Producer(unique_name("MixSqlPg"), cluster.namesrv) as producer:
        for queue in (await _queue_per_broker(producer, topic)).values():
            for i in range(count):
                await producer.send(
                    Message(topic, f"sql {i}".encode(), properties=properties(i)), queue=queue
                )
    selected: dict[str, list[int]] = {name: [] for name in names}
    consumer = PullConsumer(unique_name("MixSqlCg"), cluster.namesrv, consume_from="FIRST_OFFSET")
    consumer.subscribe(topic, sql=sql)
    async with consumer:
        deadline = time.monotonic() + DEADLINE_S
        while sum(map(len, selected.values())) < 2 * len(wanted) and time.monotonic() < deadline:
            for message in await consumer.poll(0.5):
                selected[_broker_of(cluster, message)].append(int(message.properties["seq"]))
        # more than the selection would show up by now
        for message in await consumer.poll(1.0):
            selected[_broker_of(cluster, message)].append(int(message.properties["seq"]))
    assert {name: sorted(seqs) for name, seqs in selected.items()} == {name: wanted for name in names}

    # -- request-reply: requests to one broker, replies through both (the reply topic's round robin)
    requests = await create_on_every_broker(cluster, "MixRequest", queues=1)
    reply_via: dict[bytes, str] = {}
    async with Producer(unique_name("MixReplyPg"), cluster.namesrv) as replier:
        responder = PushConsumer(unique_name("MixReplyCg"), cluster.namesrv, consume_from="FIRST_OFFSET")
        responder.subscribe(requests, "*")

        async def answer(messages: list[MessageExt], context: object) -> ConsumeStatus:
            for request in messages:
                sent = await replier.reply(request, b"reply:" + request.body)
                reply_via[request.body] = sent.message_queue.broker_name
            return ConsumeStatus.CONSUME_SUCCESS

        responder.register_listener(answer)
        async with responder, Producer(unique_name("MixRequestPg"), cluster.namesrv) as requester:
            queues = await _queue_per_broker(requester, requests)
            for broker, queue in queues.items():
                for i in range(4):
                    body = f"{broker} request {i}".encode()
                    reply = await requester.request(Message(requests, body), 15_000, queue=queue)
                    assert reply.body == b"reply:" + body
    crossings = {(body.split(b" ")[0].decode(), via) for body, via in reply_via.items()}
    assert len(reply_via) == 8
    assert crossings == {(a, b) for a in names for b in names}, "replies through both brokers, either way"
