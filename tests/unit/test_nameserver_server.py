"""The NameServer over real loopback connections: liveness by connection and by clock, persistence, codecs."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from nameserver import NameServer, NamesrvConfig
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketmq_wire.bodies.register_broker import RegisterBrokerBody
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.bodies.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from rocketmq_wire.headers.namesrv import (
    GetKVConfigRequestHeader,
    GetRouteInfoRequestHeader,
    PutKVConfigRequestHeader,
    RegisterBrokerRequestHeader,
)
from rocketmq_wire.transport import RemotingClient, RemotingConnectError

TIMEOUT_MS = 3000


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def registration(topics: tuple[str, ...] = ("TopicA", "TopicB")) -> RemotingCommand:
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table={
            t: TopicConfig(topic_name=t, read_queue_nums=2, write_queue_nums=2) for t in topics
        },
        data_version=DataVersion(timestamp=1, counter=1),
    )
    body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).to_json()
    header = RegisterBrokerRequestHeader(
        broker_name="broker-a",
        broker_addr="127.0.0.1:10911",
        cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:10912",
        broker_id=0,
        compressed=False,
        body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body)


def route_request(topic: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def server(clock: FakeClock) -> AsyncIterator[NameServer]:
    async with NameServer("127.0.0.1", 0, clock=clock) as ns:
        yield ns


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    async with RemotingClient() as c:
        yield c


def closed_event(server: NameServer) -> asyncio.Event:
    """Set once the server has handled a connection going away (its own listener runs first)."""
    event = asyncio.Event()
    server.remoting.on_connection_closed(lambda conn: event.set())
    return event


async def test_binds_an_ephemeral_loopback_port(server: NameServer) -> None:
    assert server.port > 0
    assert server.address == f"127.0.0.1:{server.port}"


async def test_broker_disappears_when_its_connection_closes(
    server: NameServer, client: RemotingClient
) -> None:
    gone = closed_event(server)
    broker = RemotingClient()
    reply = await broker.invoke(server.address, registration(), TIMEOUT_MS)
    assert reply.code == ResponseCode.SUCCESS
    found = await client.invoke(server.address, route_request("TopicA"), TIMEOUT_MS)
    assert found.code == ResponseCode.SUCCESS
    assert TopicRouteData.from_json(found.body).broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}

    await broker.close()
    await asyncio.wait_for(gone.wait(), 5)
    missing = await client.invoke(server.address, route_request("TopicA"), TIMEOUT_MS)
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST


async def test_a_client_connection_closing_leaves_routes_alone(
    server: NameServer, client: RemotingClient
) -> None:
    gone = closed_event(server)
    broker = RemotingClient()
    await broker.invoke(server.address, registration(), TIMEOUT_MS)
    other = RemotingClient()
    await other.invoke(server.address, route_request("TopicA"), TIMEOUT_MS)
    await other.close()
    await asyncio.wait_for(gone.wait(), 5)
    assert (
        await client.invoke(server.address, route_request("TopicA"), TIMEOUT_MS)
    ).code == ResponseCode.SUCCESS
    await broker.close()


async def test_broker_expires_120_seconds_after_its_last_registration(
    server: NameServer, client: RemotingClient, clock: FakeClock
) -> None:
    broker = RemotingClient()
    broker_closed = asyncio.Event()
    broker.on_connection_closed(lambda conn: broker_closed.set())
    await broker.invoke(server.address, registration(), TIMEOUT_MS)

    clock.now += 100
    await broker.invoke(server.address, registration(), TIMEOUT_MS)  # re-registration renews the lease
    clock.now += 119.9
    assert server.scan_not_active_brokers() == 0
    assert (
        await client.invoke(server.address, route_request("TopicA"), TIMEOUT_MS)
    ).code == ResponseCode.SUCCESS

    clock.now += 0.2
    assert server.scan_not_active_brokers() == 1
    missing = await client.invoke(server.address, route_request("TopicA"), TIMEOUT_MS)
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST
    # Apache also closes the expired broker's channel.
    await asyncio.wait_for(broker_closed.wait(), 5)
    await broker.close()


async def test_periodic_scan_runs_by_itself(clock: FakeClock) -> None:
    config = NamesrvConfig(scan_not_active_broker_interval=100)
    async with NameServer("127.0.0.1", 0, clock=clock, config=config) as server, RemotingClient() as broker:
        broker_closed = asyncio.Event()
        broker.on_connection_closed(lambda conn: broker_closed.set())
        await broker.invoke(server.address, registration(), TIMEOUT_MS)
        clock.now += 121
        await asyncio.wait_for(broker_closed.wait(), 5)
        assert server.routes.pickup_topic_route_data("TopicA") is None


async def test_unknown_codes_are_answered_by_the_transport(
    server: NameServer, client: RemotingClient
) -> None:
    reply = await client.invoke(server.address, RemotingCommand.request(RequestCode.SEND_MESSAGE), TIMEOUT_MS)
    assert reply.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_answers_in_the_serialization_of_the_request(
    server: NameServer, client: RemotingClient
) -> None:
    request = route_request("NoSuchTopic")
    request.serialize_type = SerializeType.ROCKETMQ
    reply = await client.invoke(server.address, request, TIMEOUT_MS)
    assert reply.serialize_type == SerializeType.ROCKETMQ
    assert reply.code == ResponseCode.TOPIC_NOT_EXIST
    assert reply.remark is not None and reply.remark.startswith("No topic route info in name server")


async def test_kv_config_survives_a_restart(tmp_path: Path, clock: FakeClock) -> None:
    config = NamesrvConfig(kv_config_path=str(tmp_path / "kvConfig.json"))
    put = PutKVConfigRequestHeader(namespace="ORDER_TOPIC_CONFIG", key="T", value="broker-a:4")
    get = GetKVConfigRequestHeader(namespace="ORDER_TOPIC_CONFIG", key="T")
    async with NameServer("127.0.0.1", 0, clock=clock, config=config) as first, RemotingClient() as c:
        reply = await c.invoke(
            first.address, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, put), TIMEOUT_MS
        )
        assert reply.code == ResponseCode.SUCCESS
    second_config = NamesrvConfig(kv_config_path=str(tmp_path / "kvConfig.json"))
    async with NameServer("127.0.0.1", 0, clock=clock, config=second_config) as second, RemotingClient() as c:
        reply = await c.invoke(
            second.address, RemotingCommand.request(RequestCode.GET_KV_CONFIG, get), TIMEOUT_MS
        )
        assert (reply.code, reply.fields()) == (ResponseCode.SUCCESS, {"value": "broker-a:4"})


async def test_close_is_idempotent_and_stops_serving(clock: FakeClock) -> None:
    server = NameServer("127.0.0.1", 0, clock=clock)
    await server.start()
    address = server.address
    await server.close()
    await server.close()
    async with RemotingClient(connect_timeout_ms=1000) as c:
        with pytest.raises(RemotingConnectError):
            await c.invoke(address, route_request("TopicA"), 1000)


async def test_many_concurrent_requests_on_one_connection(server: NameServer, client: RemotingClient) -> None:
    await client.invoke(server.address, registration(), TIMEOUT_MS)
    replies = await asyncio.gather(
        *(client.invoke(server.address, route_request("TopicA"), TIMEOUT_MS) for _ in range(200))
    )
    assert {r.code for r in replies} == {ResponseCode.SUCCESS}
    assert len({r.body for r in replies}) == 1
