"""Request-reply from the producer against the fake cluster: the stamps a request carries, the reply built as
Java's ``createReplyMessage`` builds it and sent with SEND_REPLY_MESSAGE_V2, the push back to the requester
matched by correlation id, and the timeout."""

from __future__ import annotations

import asyncio
import time

import pytest

from producer import Message, MessageValidationError, RequestTimeoutError
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.message import (
    MessageExt,
    PropertiesFlavour,
    decode_properties,
    encode_java_properties,
    encode_properties,
)
from rocketmq_wire.message import const as props
from tests.unit.producer_fakes import Cluster, StoredMessage

TOPIC = "RequestTopic"
CLUSTER = "DefaultCluster"


def as_delivered(stored: StoredMessage) -> MessageExt:
    """The request as a consumer gets it: the broker adds its cluster to what the requester sent."""
    properties = decode_properties(stored.properties)
    properties[props.CLUSTER] = CLUSTER
    return MessageExt(topic=stored.topic, body=stored.body, properties_string=encode_properties(properties))


async def test_a_request_gets_the_reply_its_responder_sends() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        cluster.route(f"{CLUSTER}_REPLY_TOPIC", queues=1)
        broker = cluster.brokers["broker-a"]
        async with cluster.producer("Requester") as requester, cluster.producer("Responder") as responder:
            pending = asyncio.create_task(
                requester.request(Message(TOPIC, b"ping", tags="T", properties={"k": "v"}), 5000)
            )
            while not broker.stored:
                await asyncio.sleep(0.01)  # the request is stored; now answer it as a consumer would
            [stored] = broker.stored
            stamps = decode_properties(stored.properties)
            # Java's insertion order (which decides the order of names sharing a bucket), then its HashMap's
            order = [props.TAGS, props.WAIT, "k", props.CORRELATION_ID, props.REPLY_TO_CLIENT, props.TTL]
            assert stored.properties == encode_java_properties(
                {name: stamps[name] for name in [*order, props.UNIQ_KEY]}, PropertiesFlavour.V4
            )
            assert (stamps[props.REPLY_TO_CLIENT], stamps[props.TTL]) == (requester.client_id, "5000")

            sent = await responder.reply(as_delivered(stored), b"pong")
            reply = await asyncio.wait_for(pending, 5)
        [send] = broker.of(RequestCode.SEND_REPLY_MESSAGE_V2)
        reply_props = decode_properties(send.fields["i"])
        assert send.fields["b"] == f"{CLUSTER}_REPLY_TOPIC"
        # createReplyMessage's bare message: no tags, keys or wait flag; then the unique id
        order = [props.MSG_TYPE, props.CORRELATION_ID, props.REPLY_TO_CLIENT, props.TTL, props.UNIQ_KEY]
        assert send.fields["i"] == encode_java_properties(
            {name: reply_props[name] for name in order}, PropertiesFlavour.V4
        )
        assert reply_props[props.MSG_TYPE] == "reply"
        assert reply_props[props.CORRELATION_ID] == stamps[props.CORRELATION_ID]
        assert sent.msg_id == reply_props[props.UNIQ_KEY]
    assert reply.body == b"pong" and reply.topic == f"{CLUSTER}_REPLY_TOPIC"
    assert reply.get_property(props.CORRELATION_ID) == stamps[props.CORRELATION_ID]
    assert abs(int(reply.get_property(props.ARRIVE_TIME) or 0) - time.time() * 1000) < 10_000


async def test_concurrent_requests_each_get_their_own_reply() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        cluster.route(f"{CLUSTER}_REPLY_TOPIC", queues=1)
        broker = cluster.brokers["broker-a"]
        async with cluster.producer("Requester") as requester, cluster.producer("Responder") as responder:
            pending = [
                asyncio.create_task(requester.request(Message(TOPIC, b"q%d" % i), 5000)) for i in range(20)
            ]
            while len(broker.stored) < 20:
                await asyncio.sleep(0.01)
            for stored in reversed(broker.stored):  # answered out of order
                await responder.reply(as_delivered(stored), stored.body.replace(b"q", b"a"))
            replies = await asyncio.gather(*pending)
    assert [r.body for r in replies] == [b"a%d" % i for i in range(20)]
    assert broker.pushed_replies == 20


async def test_a_request_nobody_answers_times_out_after_it_was_stored() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer("Requester") as requester:
            begin = time.monotonic()
            with pytest.raises(RequestTimeoutError, match=r"send request message to <RequestTopic> OK"):
                await requester.request(Message(TOPIC, b"ping"), 300)
            assert time.monotonic() - begin < 3
            assert len(requester._instance.replies) == 0  # type: ignore[union-attr]
        assert len(cluster.brokers["broker-a"].stored) == 1


async def test_a_message_no_broker_stamped_cannot_be_answered() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer("Responder") as responder:
            with pytest.raises(MessageValidationError, match="CLUSTER"):
                await responder.reply(MessageExt(topic=TOPIC, body=b"x"), b"pong")
