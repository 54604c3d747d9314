"""Routes: publish queues from route data, the TBW102 default route, refresh timer, NameServer failover."""

from __future__ import annotations

import random

import pytest

from producer import Message, MessageQueue, NoRouteError, ProducerConfig, ProducerError
from producer.routes import default_route_for, publish_info_from_route
from rocketmq_wire.bodies.route import BrokerData, QueueData, TopicRouteData
from rocketmq_wire.codes import RequestCode
from tests.unit.producer_fakes import Cluster

TOPIC = "RouteTopic"


def route(*queues: QueueData, masters: dict[str, dict[int, str]] | None = None) -> TopicRouteData:
    brokers = masters or {q.broker_name or "": {0: "10.0.0.1:10911"} for q in queues}
    return TopicRouteData(
        queue_datas=list(queues),
        broker_datas=[BrokerData(broker_name=name, broker_addrs=addrs) for name, addrs in brokers.items()],
    )


def test_publish_queues_skip_unwritable_and_masterless_brokers() -> None:
    data = route(
        QueueData(broker_name="b", read_queue_nums=2, write_queue_nums=2, perm=6),
        QueueData(broker_name="a", read_queue_nums=3, write_queue_nums=1, perm=6),
        QueueData(broker_name="readonly", read_queue_nums=4, write_queue_nums=4, perm=4),
        QueueData(broker_name="slave-only", read_queue_nums=4, write_queue_nums=4, perm=6),
        masters={"a": {0: "h:1"}, "b": {0: "h:2"}, "readonly": {0: "h:3"}, "slave-only": {1: "h:4"}},
    )
    info = publish_info_from_route("T", data, random.Random(1))
    assert info.queues == [MessageQueue("T", "a", 0), MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)]
    assert not info.order_topic


def test_order_topic_conf_lays_out_the_queues() -> None:
    data = route(QueueData(broker_name="a", read_queue_nums=8, write_queue_nums=8, perm=6))
    data.order_topic_conf = "a:2;b:1"
    info = publish_info_from_route("T", data)
    assert info.order_topic
    assert info.queues == [MessageQueue("T", "a", 0), MessageQueue("T", "a", 1), MessageQueue("T", "b", 0)]


def test_default_route_is_cut_to_default_queue_nums() -> None:
    data = route(
        QueueData(broker_name="a", read_queue_nums=8, write_queue_nums=8, perm=7),
        QueueData(broker_name="b", read_queue_nums=2, write_queue_nums=8, perm=7),
    )
    trimmed = default_route_for(data, 4)
    assert [(q.read_queue_nums, q.write_queue_nums) for q in trimmed.queue_datas] == [(4, 4), (2, 2)]
    assert [q.write_queue_nums for q in data.queue_datas] == [8, 8], "the cached TBW102 route is not changed"


def test_select_skips_the_last_broker_when_it_can() -> None:
    data = route(
        QueueData(broker_name="a", read_queue_nums=2, write_queue_nums=2, perm=6),
        QueueData(broker_name="b", read_queue_nums=1, write_queue_nums=1, perm=6),
    )
    info = publish_info_from_route("T", data, random.Random(3))
    assert all(info.select("a").broker_name == "b" for _ in range(10))
    only_a = publish_info_from_route("T", route(QueueData(broker_name="a", write_queue_nums=2, perm=6)))
    assert only_a.select("a").broker_name == "a"


async def test_unknown_topic_goes_along_the_tbw102_route_for_auto_creation() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route("TBW102", queues=8, perm=7)
        async with cluster.producer() as producer:
            queues = await producer.fetch_publish_queues("BrandNew")
            result = await producer.send(Message("BrandNew", b"auto"))
        (received,) = cluster.all_sends()
        namesrv = cluster.namesrvs[0]
        asked = [r.fields["topic"] for r in namesrv.of(RequestCode.GET_ROUTEINFO_BY_TOPIC)]
    assert asked[:2] == ["BrandNew", "TBW102"]
    assert len(queues) == 8, "at most defaultTopicQueueNums (4) queues per broker"
    assert {q.queue_id for q in queues} == {0, 1, 2, 3}
    assert received.fields["b"] == "BrandNew"
    assert received.fields["c"] == "TBW102"
    assert received.fields["d"] == "4"
    assert result.message_queue.topic == "BrandNew"


async def test_no_route_and_no_default_route_is_an_error() -> None:
    async with Cluster() as cluster, cluster.producer() as producer:
        with pytest.raises(NoRouteError):
            await producer.send(Message("Nowhere", b"x"))


async def test_routes_are_refreshed_on_a_timer() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues={"broker-a": 2})
        namesrv = cluster.namesrvs[0]
        config = ProducerConfig(poll_namesrv_interval_ms=20)
        async with cluster.producer(config=config) as producer:
            before = {q.broker_name for q in await producer.fetch_publish_queues(TOPIC)}
            cluster.route(TOPIC, queues={"broker-a": 2, "broker-b": 2})
            asked = len(namesrv.received)
            # rounds run one after another: once a second request after the change arrives, the round
            # that got the new route is over
            await namesrv.wait_for(RequestCode.GET_ROUTEINFO_BY_TOPIC, asked + 2)
            after = {q.broker_name for q in await producer.fetch_publish_queues(TOPIC)}
    assert before == {"broker-a"}
    assert after == {"broker-a", "broker-b"}


async def test_namesrv_failover_to_the_next_one() -> None:
    async with Cluster(namesrvs=2) as cluster:
        cluster.route(TOPIC)
        cluster.route("Second")
        async with cluster.producer() as producer:
            await producer.send(Message(TOPIC, b"x"))
            (answered,) = [n for n in cluster.namesrvs if n.of(RequestCode.GET_ROUTEINFO_BY_TOPIC)]
            other = next(n for n in cluster.namesrvs if n is not answered)
            await answered.server.close(grace=0.1)
            result = await producer.send(Message("Second", b"y"))
        assert other.route_requests("Second") == 1
    assert result.message_queue.topic == "Second"


async def test_all_namesrvs_down_is_an_error_that_names_them() -> None:
    async with Cluster(namesrvs=2) as cluster:
        addresses = cluster.namesrv
        async with cluster.producer() as producer:
            for namesrv in cluster.namesrvs:
                await namesrv.server.close(grace=0.1)
            with pytest.raises(ProducerError, match="no NameServer") as caught:
                await producer.send(Message(TOPIC, b"x"))
    for address in addresses.split(";"):
        assert address in str(caught.value)


async def test_topic_without_writable_queues_has_no_route() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC, perm=4)
        async with cluster.producer() as producer:
            with pytest.raises(NoRouteError, match="no writable queue"):
                await producer.send(Message(TOPIC, b"x"))
            cluster.route(TOPIC, perm=6)
            result = await producer.send(Message(TOPIC, b"y"))
        assert cluster.namesrvs[0].route_requests(TOPIC) == 2
    assert result.message_queue.topic == TOPIC
