"""ACL 2.0 in one cluster of Apache 5.5.0's broker and the project's broker, on the project's NameServer.

Apache's broker reads ``authenticationEnabled`` / ``authorizationEnabled`` only at start, so this module
starts a cluster of its own (``test_mixed_rocketmq5``'s runs with authentication off): both brokers get
``test_acl2``'s ACL 2.0 settings, the same initial super user and the same inner-client credentials. Then,
through the cluster rather than broker by broker, as an operator would:

* ``rmq user create -c`` and ``rmq acl create -c`` (signed as the super user) give a normal user PUB and SUB
  on one topic and SUB on one group; ``rmq user list -c`` and ``rmq acl get -c`` must show the same users and
  the same ACL on both brokers.
* The user's producer sends to the topic: its round robin lands messages on every queue of both brokers;
  the user's consumer (the granted group) reads every one back, from both.
* The same user sending to a topic it has no grant on, a wrong secret, an unsigned send and an unknown user
  are refused by each broker: the same response code and the same remark from both, which must be Apache's
  (``test_acl2``'s case table); nothing refused is stored.
* Both brokers keep registering with the NameServer while authentication is on (their own inner requests
  pass): the cluster lists both at the end, and the topics created meanwhile are routed to both.

One cluster start (one JVM: Apache's broker; the NameServer and the second broker are the project's).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from admin import Admin, RequestRefusedError, UserInfo
from consumer import ConsumeConcurrentlyContext, ConsumeStatus, PushConsumer
from producer import BrokerError, Message, Producer, SendFailedError
from rocketmq_wire import ResponseCode
from rocketmq_wire.message import MessageExt
from tests.integration.apache.releases import releases
from tests.integration.clusters.fixture import running_cluster
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.providers import all_servers_mixed_spec, selected_families
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.test_acl2 import (
    ALICE,
    ALICE_KEYS,
    ALICE_PASSWORD,
    AUTH_SETTINGS,
    AUTHENTICATION_CASES,
    INNER_PASSWORD,
    INNER_USER,
    SUPER_PASSWORD,
    SUPER_USER,
    Answers,
    Keys,
    _denied,
    _keys,
    _project_consume,
    _rmq,
)

pytestmark = pytest.mark.integration

RELEASE_55 = [r for r in releases() if r.version == "5.5.0"]
SUPER_KEYS = (SUPER_USER, SUPER_PASSWORD)
#: Messages the normal user sends through the cluster: enough for the round robin to reach every queue
#: (two queues on each of the two brokers) twice.
SENT = 8
QUEUES = 2
DEADLINE_S = 30.0
#: How long the refused consumer runs: each broker refuses its first heartbeat and pulls within a second.
REFUSED_CONSUMER_S = 2.0

#: One broker's answer to a send: (response code, remark), or "stored".
Outcome = tuple[int, str] | str


@pytest.fixture(scope="module")
def mixed_acl2(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The project's NameServer, Apache's 5.5.0 broker and the project's broker, both brokers with ACL 2.0
    on; the servers' logs are kept when a test of the module failed."""
    if "mixed" not in selected_families():
        pytest.skip("the mixed providers are not selected (ROCKETMQ_PROVIDERS)")
    if not RELEASE_55:
        pytest.skip("Apache 5.5.0 is not among the selected releases (ROCKETMQ_VERSIONS)")
    before = request.session.testsfailed
    spec = all_servers_mixed_spec(RELEASE_55[0], extra=AUTH_SETTINGS, variant="acl2")

    def failed() -> bool:
        return request.session.testsfailed > before

    with running_cluster(spec, "rmq-mixed-acl2", failed) as (running, _):
        yield running


def _one(refusals: frozenset[tuple[int, str]]) -> Outcome:
    """The one refusal a broker gave a consumer, or all of them when it gave none or several."""
    return next(iter(refusals)) if len(refusals) == 1 else f"refusals: {sorted(refusals)}"


def _broker_of(cluster: Cluster, message: MessageExt) -> str:
    """The name of the broker that stored ``message`` (its store host is the broker's address)."""
    return next(b.name for b in cluster.brokers if b.addr == message.store_host)


async def _send_to_each_broker(namesrv: str, keys: Keys, topic: str, body: bytes) -> dict[str, Outcome]:
    """One message to queue 0 of ``topic`` on each broker, signed with ``keys``: what each broker said."""
    access_key, secret_key = _keys(keys)
    outcomes: dict[str, Outcome] = {}
    async with Producer(
        unique_name("MixAcl2Pg"), namesrv, access_key=access_key, secret_key=secret_key
    ) as producer:
        for queue in await producer.fetch_publish_queues(topic):
            if queue.queue_id != 0:
                continue
            try:
                await producer.send(Message(topic, body), queue=queue)
                outcomes[queue.broker_name] = "stored"
            except BrokerError as refused:
                outcomes[queue.broker_name] = (refused.code, refused.remark or "")
            except SendFailedError as failed:  # resent, then given up: the broker's last answer is the cause
                cause = failed.__cause__
                assert isinstance(cause, BrokerError), f"a send failed without a broker's answer: {failed!r}"
                outcomes[queue.broker_name] = (cause.code, cause.remark or "")
    return outcomes


async def _rmq_async(namesrv: str, *args: str) -> Any:
    """``rmq ARGS --json`` signed as the super user; in a thread, as ``rmq`` runs an event loop of its own."""
    return await asyncio.to_thread(_rmq, *args, keys=SUPER_KEYS, namesrv=namesrv)


async def test_one_user_and_acl_made_through_the_cluster_rule_both_brokers_alike(mixed_acl2: Cluster) -> None:
    cluster = mixed_acl2
    addrs = sorted(cluster.broker_addrs)
    names = sorted(cluster.broker_names)
    allowed = await create_on_every_broker(cluster, "MixAcl2A", queues=QUEUES, keys=SUPER_KEYS)
    forbidden = await create_on_every_broker(cluster, "MixAcl2B", queues=QUEUES, keys=SUPER_KEYS)
    group = unique_name("mix-acl2-cg")

    # -- the operator's side: one user and its ACL, created through the cluster
    done = {"brokers": addrs, "success": True}
    created = await _rmq_async(
        cluster.namesrv, "user", "create", "-c", cluster.cluster_name, "-u", ALICE, "-p", ALICE_PASSWORD
    )
    assert {**created, "brokers": sorted(created["brokers"])} == done
    for resources, actions in ((f"Topic:{allowed}", "Pub,Sub"), (f"Group:{group}", "Sub")):
        made = await _rmq_async(
            cluster.namesrv,
            "acl",
            "create",
            "-c",
            cluster.cluster_name,
            "-s",
            f"User:{ALICE}",
            "-r",
            resources,
            "-a",
            actions,
            "-d",
            "Allow",
        )
        assert {**made, "brokers": sorted(made["brokers"])} == done
    users = await _rmq_async(cluster.namesrv, "user", "list", "-c", cluster.cluster_name)
    assert sorted(users) == addrs
    expected_users = [
        {"username": name, "password": password, "userType": kind, "userStatus": "enable"}
        for name, password, kind in (
            (ALICE, ALICE_PASSWORD, "Normal"),
            (INNER_USER, INNER_PASSWORD, "Super"),
            (SUPER_USER, SUPER_PASSWORD, "Super"),
        )
    ]
    assert users[addrs[0]] == users[addrs[1]], f"the brokers list different users (or orders): {users}"
    assert sorted(users[addrs[0]], key=lambda u: u["username"]) == expected_users
    acls = await _rmq_async(cluster.namesrv, "acl", "get", "-c", cluster.cluster_name, "-s", f"User:{ALICE}")
    assert sorted(acls) == addrs
    first, second = (acls[addr] for addr in addrs)
    assert first == second, f"the brokers hold different ACLs: {acls}"
    assert first["subject"] == f"User:{ALICE}"
    listed_acls = await _rmq_async(cluster.namesrv, "acl", "list", "-c", cluster.cluster_name)
    assert listed_acls == {addr: [first] for addr in addrs}, "the one ACL, the same on both brokers"
    assert [
        (e["resource"], e["actions"], e["sourceIps"], e["decision"])
        for policy in first["policies"]
        for e in policy["entries"]
    ] == [(f"Topic:{allowed}", ["Pub", "Sub"], None, "Allow"), (f"Group:{group}", ["Sub"], None, "Allow")]

    # -- the user's producer: the round robin reaches every queue of both brokers
    landed: dict[bytes, tuple[str, int]] = {}
    async with Producer(
        unique_name("MixAcl2Pg"), cluster.namesrv, access_key=ALICE, secret_key=ALICE_PASSWORD
    ) as producer:
        for i in range(SENT):
            body = f"alice {i}".encode()
            result = await producer.send(Message(allowed, body))
            landed[body] = (result.message_queue.broker_name, result.message_queue.queue_id)
    every_queue = {(name, queue_id) for name in names for queue_id in range(QUEUES)}
    assert set(landed.values()) == every_queue, f"queues the user's sends reached: {sorted(landed.values())}"

    # -- the user's push consumer, in the granted group: every message, from both brokers; the first message
    # each broker delivers is handed back once (RECONSUME_LATER): the send-back, the retry topic's route and
    # its pulls are the user's too, and it comes back from the same broker
    handed_back: dict[str, bytes] = {}
    deliveries: list[tuple[bytes, int, str]] = []
    all_done = asyncio.Event()

    async def handle(messages: list[MessageExt], context: object) -> ConsumeStatus:
        assert isinstance(context, ConsumeConcurrentlyContext)
        for message in messages:
            broker = _broker_of(cluster, message)
            deliveries.append((message.body, message.reconsume_times, broker))
            if handed_back.setdefault(broker, message.body) == message.body and message.reconsume_times == 0:
                context.delay_level_when_next_consume = 1  # one second
                return ConsumeStatus.RECONSUME_LATER
        if len({body for body, _, _ in deliveries}) == SENT and all(
            (body, 1, broker) in deliveries for broker, body in handed_back.items()
        ):
            all_done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        group,
        cluster.namesrv,
        consume_from="CONSUME_FROM_FIRST_OFFSET",
        access_key=ALICE,
        secret_key=ALICE_PASSWORD,
        consume_batch_max_size=1,
    )
    consumer.subscribe(allowed, "*")
    consumer.register_listener(handle)
    async with consumer:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_done.wait(), DEADLINE_S)
    assert sorted(handed_back) == names, f"deliveries: {deliveries}"
    firsts = {body: broker for body, times, broker in deliveries if times == 0}
    assert firsts == {body: where[0] for body, where in landed.items()}, "each message, from its broker"
    again = sorted((body, broker) for body, times, broker in deliveries if times > 0)
    assert again == sorted((body, broker) for broker, body in handed_back.items()), deliveries
    assert len(deliveries) == SENT + len(names), f"nothing else delivered twice: {deliveries}"

    # -- refusals: each broker answers each case with the same code and remark, Apache's
    outcomes = {
        "forbidden topic": await _send_to_each_broker(cluster.namesrv, ALICE_KEYS, forbidden, b"refused"),
    }
    expected: dict[str, Outcome] = {
        "forbidden topic": (ResponseCode.NO_PERMISSION, _denied(f"Topic:{forbidden}")),
    }
    for case in AUTHENTICATION_CASES:
        outcomes[case.name] = await _send_to_each_broker(cluster.namesrv, case.keys, allowed, b"refused")
        assert case.remark is not None
        expected[case.name] = (ResponseCode.NO_PERMISSION, case.remark)
    # the user's consumer in a group it has no grant on: its heartbeats and pulls, refused by each broker
    other_group = unique_name("mix-acl2-no-cg")
    on_a, on_b = (Answers(b.addr) for b in cluster.brokers)
    with on_a.installed(), on_b.installed():
        seen = await _project_consume(
            cluster.namesrv, ALICE_KEYS, other_group, allowed, list(landed), on_a, REFUSED_CONSUMER_S
        )
    assert not seen.passed
    outcomes["forbidden group"] = {
        cluster.brokers[0].name: _one(seen.refusals),
        cluster.brokers[1].name: _one(on_b.take()),
    }
    expected["forbidden group"] = (ResponseCode.NO_PERMISSION, _denied(f"Group:{other_group}"))
    # an admin request (creating a user) by the normal user, to each broker
    async with Admin(cluster.namesrv, access_key=ALICE, secret_key=ALICE_PASSWORD) as as_alice:
        refused: dict[str, Outcome] = {}
        for broker in cluster.brokers:
            try:
                await as_alice.create_user(broker.addr, UserInfo(username="mallory", password="mallory1"))
                refused[broker.name] = "stored"
            except RequestRefusedError as exc:
                refused[broker.name] = (exc.code, exc.remark or "")
    outcomes["admin request"] = refused
    expected["admin request"] = (ResponseCode.NO_PERMISSION, _denied(f"Cluster:{cluster.cluster_name}"))
    differing = {case: seen for case, seen in outcomes.items() if len(set(seen.values())) != 1}
    assert not differing, f"the brokers answered differently: {differing}"
    assert {case: seen for case, seen in outcomes.items()} == {
        case: dict.fromkeys(names, answer) for case, answer in expected.items()
    }

    # -- nothing refused was stored; both brokers still registered, routing what was created meanwhile
    async with Admin(cluster.namesrv, access_key=SUPER_USER, secret_key=SUPER_PASSWORD) as admin:
        assert (await admin.topic_status(allowed)).total_messages == SENT
        assert (await admin.topic_status(forbidden)).total_messages == 0
        info = await admin.cluster_info()
        assert sorted(info.cluster_addr_table[cluster.cluster_name]) == names
        registered = {name: info.broker_addr_table[name].broker_addrs.get(0) for name in names}
        assert registered == {b.name: b.addr for b in cluster.brokers}
        for topic in (allowed, forbidden):
            route = await admin.topic_route(topic)
            assert sorted(str(q.broker_name) for q in route.queue_datas) == names, topic
