"""Registration with NameServers: the project's own NameServer, and a recording stand-in for the wire form."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import Broker, ManualClock
from broker.registration import ChangeAnnouncer, RegistrationResult
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


class SlowNameServer(RecordingNameServer):
    """Takes ``delay_s`` to answer a registration and keeps the topics of each one it has answered."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.answered_topics: set[str] = set()

    async def _handle(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        if request.code == RequestCode.REGISTER_BROKER:
            await asyncio.sleep(self.delay_s)
            body = RegisterBrokerBody.decode(request.body, compressed=False)
            self.answered_topics |= set(body.topic_config_serialize_wrapper.topic_config_table)
        return await super()._handle(request, conn)


@pytest.fixture
async def slow_namesrv() -> AsyncIterator[SlowNameServer]:
    recorder = SlowNameServer(delay_s=0.3)
    await recorder.server.start()
    try:
        yield recorder
    finally:
        await recorder.server.close()


async def test_a_request_that_makes_a_topic_is_answered_after_the_nameservers_heard_of_it(
    tmp_path: Path, slow_namesrv: SlowNameServer
) -> None:
    """Apache registers inside the request, so a client that sends to a new topic (or creates one, or joins a
    group) and then asks the NameServer for the route finds it."""
    config = config_for_tests(tmp_path / "store", namesrv_addr=slow_namesrv.server.address)
    async with Broker(config) as broker, BrokerClient(broker.address) as client:
        assert (await client.send("MadeBySend", b"first")).code == ResponseCode.SUCCESS
        assert "MadeBySend" in slow_namesrv.answered_topics
        assert (await client.send_batch("MadeByBatch", [(b"x", "")])).code == ResponseCode.SUCCESS
        assert "MadeByBatch" in slow_namesrv.answered_topics
        assert (await client.create_topic("MadeByAdmin", 2)).code == ResponseCode.SUCCESS
        assert "MadeByAdmin" in slow_namesrv.answered_topics
        assert (await client.heartbeat("c1", consumer_groups={"joined": {"MadeBySend": "*"}})).code == 0
        assert "%RETRY%joined" in slow_namesrv.answered_topics

        # A send to a topic that exists waits for nobody, even while a registration round is under way.
        rounds_before = len(slow_namesrv.requests)
        broker.announcer.changed()
        started = asyncio.get_running_loop().time()
        assert (await client.send("MadeBySend", b"second")).code == ResponseCode.SUCCESS
        assert asyncio.get_running_loop().time() - started < slow_namesrv.delay_s / 2
        assert len(slow_namesrv.requests) == rounds_before


class GatedRounds:
    """A registration stand-in whose rounds end when the test says so (or fail, when told to)."""

    def __init__(self) -> None:
        self.started = 0
        self.gates: list[asyncio.Future[None]] = []

    async def __call__(self) -> None:
        self.started += 1
        gate = asyncio.get_running_loop().create_future()
        self.gates.append(gate)
        await gate

    def end(self, index: int, error: Exception | None = None) -> None:
        if error is None:
            self.gates[index].set_result(None)
        else:
            self.gates[index].set_exception(error)


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_change_made_during_a_round_waits_for_the_next_round() -> None:
    rounds = GatedRounds()
    announcer = ChangeAnnouncer(rounds)
    assert announcer.changes == 0
    await announcer.announced_since(0)  # nothing changed: no wait

    announcer.changed()
    first = asyncio.ensure_future(announcer.announced_since(0))
    await _settle()
    announcer.changed()  # made while the first round is under way: that round does not cover it
    second = asyncio.ensure_future(announcer.announced_since(1))
    await _settle()
    assert rounds.started == 1 and not first.done()

    rounds.end(0, OSError("the NameServer went away"))  # a failed round still lets its waiters go
    await _settle()
    assert first.done() and not second.done()
    assert rounds.started == 2

    rounds.end(1)
    await _settle()
    assert second.done()
    assert rounds.started == 2  # nothing changed meanwhile: no third round


async def test_closing_lets_every_waiter_go() -> None:
    rounds = GatedRounds()
    announcer = ChangeAnnouncer(rounds)
    announcer.changed()
    waiting = asyncio.ensure_future(announcer.announced_since(0))
    await _settle()
    await announcer.close()
    await _settle()
    assert waiting.done() and waiting.exception() is None


async def test_broker_permission_shows_in_every_route_once_the_update_is_answered(
    tmp_path: Path, namesrv: NameServer
) -> None:
    """Operators drain a broker with ``updateBrokerConfig brokerPermission=4``: clients see it read-only."""

    async def perms() -> dict[str, int]:
        found = {}
        for topic in ("Drained", "WriteOnly"):
            route = TopicRouteData.from_json((await _route(namesrv, topic)).body)
            [queues] = route.queue_datas
            found[topic] = queues.perm
        return found

    config = config_for_tests(tmp_path / "store", namesrv_addr=namesrv.address)
    async with Broker(config) as broker, BrokerClient(broker.address) as client:
        await client.create_topic("Drained", 2, perm=6)
        await client.create_topic("WriteOnly", 2, perm=2)
        assert await perms() == {"Drained": 6, "WriteOnly": 2}

        update = await client.request(RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerPermission=4\n")
        assert update.code == ResponseCode.SUCCESS
        assert await perms() == {"Drained": 4, "WriteOnly": 0}  # 5.x: what the topic forbids stays forbidden
        own = broker.topic_config_manager.select("Drained")
        assert own is not None and own.perm == 6  # the broker's own table is unchanged

        update = await client.request(RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerPermission=6\n")
        assert update.code == ResponseCode.SUCCESS
        assert await perms() == {"Drained": 6, "WriteOnly": 2}
