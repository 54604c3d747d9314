"""Registration with NameServers: the project's own NameServer, and a recording stand-in for the wire form."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import Broker, ManualClock
from broker.registration import RegistrationResult
from broker.testing import BrokerClient, config_for_tests
from nameserver.server import NameServer
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.bodies.register_broker import RegisterBrokerBody
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.headers.namesrv import GetRouteInfoRequestHeader, RegisterBrokerRequestHeader
from rocketmq_wire.transport import Connection, RemotingClient, RemotingServer

LIMIT_S = 5


@pytest.fixture
async def namesrv() -> AsyncIterator[NameServer]:
    server = NameServer("127.0.0.1", 0)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def _route(namesrv: NameServer, topic: str) -> RemotingCommand:
    async with RemotingClient() as client:
        request = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
        )
        return await client.invoke(namesrv.address, request, 3000)


class Rounds:
    def __init__(self, broker: Broker) -> None:
        self.done = asyncio.Event()
        self.results: list[list[RegistrationResult]] = []
        broker.registration.on_registered(self._record)

    def _record(self, results: list[RegistrationResult]) -> None:
        self.results.append(results)
        self.done.set()

    async def next(self) -> list[RegistrationResult]:
        async with asyncio.timeout(LIMIT_S):
            await self.done.wait()
        self.done.clear()
        return self.results[-1]


async def test_broker_shows_up_in_routes_and_leaves_them_on_close(
    tmp_path: Path, namesrv: NameServer
) -> None:
    clock = ManualClock()
    broker = Broker(config_for_tests(tmp_path / "store", namesrv_addr=namesrv.address), clock=clock)
    rounds = Rounds(broker)
    await broker.start()
    try:
        [first] = await rounds.next()
        assert first.ok and first.namesrv == namesrv.address
        route = await _route(namesrv, "TBW102")
        assert route.code == ResponseCode.SUCCESS
        data = TopicRouteData.from_json(route.body)
        assert [b.broker_addrs for b in data.broker_datas] == [{0: broker.address}]
        assert data.broker_datas[0].cluster == "DefaultCluster"

        async with BrokerClient(broker.address) as client:
            await client.create_topic("Routed", 3)
        await rounds.next()  # a topic change registers again at once
        routed = TopicRouteData.from_json((await _route(namesrv, "Routed")).body)
        assert [(q.broker_name, q.read_queue_nums, q.perm) for q in routed.queue_datas] == [
            ("broker-a", 3, 6)
        ]

        clock.advance(30_000)  # and so does the periodic cycle
        assert (await rounds.next())[0].ok
    finally:
        await broker.close()
    assert (await _route(namesrv, "Routed")).code == ResponseCode.TOPIC_NOT_EXIST


class RecordingNameServer:
    """Answers REGISTER_BROKER / UNREGISTER_BROKER and keeps what it received."""

    def __init__(self) -> None:
        self.server = RemotingServer("127.0.0.1", 0)
        self.requests: list[RemotingCommand] = []
        self.server.register(RequestCode.REGISTER_BROKER, self._handle)
        self.server.register(RequestCode.UNREGISTER_BROKER, self._handle)

    async def _handle(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.requests.append(request)
        if request.code == RequestCode.REGISTER_BROKER:
            body = KVTable(table={"Ordered": "broker-a:4"}).to_json()
            return request.make_response(ResponseCode.SUCCESS, body=body)
        return request.make_response(ResponseCode.SUCCESS)


async def test_registration_wire_form_and_a_dead_nameserver(tmp_path: Path) -> None:
    recorder = RecordingNameServer()
    port = await recorder.server.start()
    dead = RemotingServer("127.0.0.1", 0)
    dead_port = await dead.start()
    await dead.close()  # nobody listens there any more
    config = config_for_tests(tmp_path / "store", namesrv_addr=f"127.0.0.1:{port};127.0.0.1:{dead_port}")
    try:
        async with Broker(config) as broker:
            good, bad = broker.registration.last_results
            assert good.ok and not bad.ok
            assert broker.topic_config_manager.is_order_topic("Ordered")
        register, unregister = recorder.requests
        header = register.read_header(RegisterBrokerRequestHeader)
        assert header.broker_addr == broker.address and header.broker_name == "broker-a"
        assert header.cluster_name == "DefaultCluster" and header.broker_id == 0
        assert header.ha_server_addr == "127.0.0.1:10912" and header.compressed is False
        assert header.body_crc32 == zlib.crc32(register.body) & 0x7FFFFFFF
        body = RegisterBrokerBody.decode(register.body, compressed=False)
        assert "TBW102" in body.topic_config_serialize_wrapper.topic_config_table
        assert unregister.code == RequestCode.UNREGISTER_BROKER
        assert unregister.fields()["brokerAddr"] == broker.address
    finally:
        await recorder.server.close()
