"""The producer against the project's own NameServer (both Apache profiles) and an in-test broker.

The broker registers over the wire (REGISTER_BROKER, as a Java broker does); the producer then finds routes,
including the TBW102 default for a topic the NameServer does not know, in the NameServer's own encoding.
"""

from __future__ import annotations

import random

import pytest

from nameserver.profile import APACHE_4_9_8, APACHE_5_3_3, ApacheProfile
from nameserver.server import NameServer
from producer import Message, Producer, SendStatus
from rocketmq_wire.bodies.register_broker import RegisterBrokerBody
from rocketmq_wire.bodies.topic_config import TopicConfig, TopicConfigSerializeWrapper
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.namesrv import RegisterBrokerRequestHeader
from rocketmq_wire.transport import RemotingClient
from tests.unit.producer_fakes import FakeBroker

pytestmark = pytest.mark.integration


async def register(
    client: RemotingClient, namesrv: str, broker: FakeBroker, topics: dict[str, tuple[int, int]]
) -> None:
    """REGISTER_BROKER for ``broker`` with ``topics`` (name -> (queues, perm)) over ``client``, whose
    connection must stay open: the NameServer forgets a broker when its connection closes."""
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table={
            name: TopicConfig(topic_name=name, read_queue_nums=n, write_queue_nums=n, perm=perm)
            for name, (n, perm) in topics.items()
        }
    )
    header = RegisterBrokerRequestHeader(
        broker_name=broker.name,
        broker_addr=broker.address,
        cluster_name="DefaultCluster",
        ha_server_addr=broker.address,
        broker_id=0,
        compressed=False,
        body_crc32=0,
    )
    body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).encode(compressed=False)
    response = await client.invoke(
        namesrv, RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body), 3000
    )
    assert response.code == ResponseCode.SUCCESS, response


@pytest.mark.parametrize("profile", [APACHE_4_9_8, APACHE_5_3_3], ids=lambda p: p.name)
async def test_send_through_the_project_nameserver(profile: ApacheProfile) -> None:
    async with (
        NameServer("127.0.0.1", 0, profile=profile) as namesrv,
        FakeBroker("broker-a") as broker,
        RemotingClient() as broker_side,
    ):
        await register(broker_side, namesrv.address, broker, {"TBW102": (8, 7), "KnownTopic": (2, 6)})
        async with Producer("IntegrationGroup", namesrv.address, rng=random.Random(5)) as producer:
            known = await producer.send(Message("KnownTopic", b"known"))
            queues = await producer.fetch_publish_queues("AutoCreated")
            auto = await producer.send(Message("AutoCreated", b"auto"))
    assert known.status is SendStatus.SEND_OK
    assert known.message_queue.queue_id in (0, 1)
    assert len(queues) == 4, "TBW102's 8 queues cut to defaultTopicQueueNums"
    assert auto.message_queue.topic == "AutoCreated"
    topics = [s.topic for s in broker.stored]
    assert topics == ["KnownTopic", "AutoCreated"]
