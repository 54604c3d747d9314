"""Request-reply between the project and Apache's Java client, through Apache's brokers (4.x has it too).

Each way, 300 requests: the project's ``Producer.request`` (64 in flight) answered by Java's push consumer
with ``MessageUtil.createReplyMessage``, on every release; and Java's ``DefaultMQProducer.request`` answered
by the project's push consumer and ``Producer.reply``, on the 4.x line. Every reply must come back to the
request it answers: the same correlation id, and the body derived from that request's own body.

Not Java's requester on 5.x: with Apache 5.3.3's own client and broker, Java answering Java, no reply
arrives either. The broker drops the requester's connection from its producer table right after the
request's heartbeat and then finds no channel to push the reply to ("push reply message fail, channel of
<client> not found"); the project's requester, whose connection stays registered, gets every reply.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from consumer import ConsumeStatus, PushConsumer
from producer import Message, Producer
from rocketmq_wire.message import MessageExt
from rocketmq_wire.message import const as props
from tests.integration.apache.releases import ApacheRelease, full_releases
from tests.integration.clusters.fixture import PROVIDERS
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.java_peer.fixtures import JavaClientFactory

pytestmark = pytest.mark.integration

PYTHON = [s for s in PROVIDERS if s.id == "python"]
SETUPS = [*(s for s in PROVIDERS if s.family == "binaries" and s.release is not None), *PYTHON]
#: Where Apache's own Java requester gets replies at all (see the module's docstring): 4.x brokers, and the
#: project's broker with the 4.9.8 Java client.
JAVA_REQUESTER_SETUPS = [*(s for s in SETUPS if s.release is not None and s.release.major == 4), *PYTHON]
#: Enough concurrent requests (64 in flight) that a reply reaching the wrong request would show.
REQUESTS = 300
IN_FLIGHT = 64
REQUEST_TIMEOUT_MS = 15_000


@pytest.mark.parametrize(
    "cluster", JAVA_REQUESTER_SETUPS, ids=[s.id for s in JAVA_REQUESTER_SETUPS], indirect=True
)
async def test_hundreds_of_java_requests_each_get_the_projects_reply_to_it(
    cluster: Cluster, java_client: JavaClientFactory
) -> None:
    java = java_client(_release(cluster))
    topic = await create_on_every_broker(cluster, "ReqJava")
    async with Producer(unique_name("ReplyPg"), cluster.namesrv) as replier:
        consumer = PushConsumer(
            unique_name("ReplyCg"), cluster.namesrv, consume_from="CONSUME_FROM_FIRST_OFFSET"
        )
        consumer.subscribe(topic, "*")
        answered: list[str] = []

        async def answer(messages: list[MessageExt], context: object) -> ConsumeStatus:
            for request in messages:
                await replier.reply(request, b"reply:" + request.body)
                answered.append(request.get_property(props.CORRELATION_ID) or "")
            return ConsumeStatus.CONSUME_SUCCESS

        consumer.register_listener(answer)
        async with consumer:
            specs: list[dict[str, Any]] = [{"body": f"java request {i}"} for i in range(REQUESTS)]
            result = await asyncio.to_thread(java.request, cluster.namesrv, topic, specs, timeout=240.0)
    assert result.ok, result.describe()
    replies = result.of("reply")
    assert len(replies) == REQUESTS
    for event in replies:
        assert event["reply_correlation_id"] == event["correlation_id"]
        assert event["body"] == f"reply:java request {event['index']}"
    assert len(set(answered)) == REQUESTS


@pytest.mark.parametrize("cluster", SETUPS, ids=[s.id for s in SETUPS], indirect=True)
async def test_hundreds_of_project_requests_each_get_javas_reply_to_it(
    cluster: Cluster, java_client: JavaClientFactory
) -> None:
    java = java_client(_release(cluster))
    topic = await create_on_every_broker(cluster, "ReqPy")
    responder = java.start_responder(
        cluster.namesrv, unique_name("JavaReplyCg"), topic, REQUESTS, timeout=240.0
    )
    with responder:
        await asyncio.to_thread(responder.wait_for, "ready", 60.0)
        slots = asyncio.Semaphore(IN_FLIGHT)
        async with Producer(unique_name("RequestPg"), cluster.namesrv) as requester:

            async def one(i: int) -> tuple[int, MessageExt]:
                async with slots:
                    return i, await requester.request(
                        Message(topic, f"py request {i}".encode()), REQUEST_TIMEOUT_MS
                    )

            got = await asyncio.gather(*(one(i) for i in range(REQUESTS)))
        java_side = await asyncio.to_thread(responder.finish)
    assert java_side.ok, java_side.describe()
    assert all(r.body == f"reply:py request {i}".encode() for i, r in got), (
        "a reply reached the wrong request"
    )
    assert len({r.get_property(props.CORRELATION_ID) for _, r in got}) == REQUESTS
    assert len(java_side.of("replied")) == REQUESTS


def _release(cluster: Cluster) -> ApacheRelease:
    """The set-up's release; for the project's servers the first full one (4.9.7, its Java client 4.9.8,
    whose requester gets replies)."""
    spec = next(s for s in PROVIDERS if s.id == cluster.provider)
    return spec.release or full_releases()[0]
