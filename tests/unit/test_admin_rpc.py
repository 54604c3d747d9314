"""The admin client's request layer against stand-in servers: ACL signing, NameServer fail-over,
unreachable brokers, and the producer requests (one group's connections, a broker's whole producer table)
answered with the bytes a Java broker sends."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest

from admin import Admin, AdminError, OffsetResetPendingError, RequestRefusedError, UnreachableError
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketmq_wire.acl import ACCESS_KEY, verify
from rocketmq_wire.bodies import BrokerData, ProducerConnection, QueueData, TopicList, TopicRouteData
from rocketmq_wire.bodies.consumer import Connection as ConnectionBody
from rocketmq_wire.transport import Connection, RemotingServer

SECRET = "12345678"

#: GET_ALL_PRODUCER_INFO's answer as a 4.9.8 broker writes it, with one Java producer connected.
JAVA_PRODUCER_TABLE = (
    b'{"data":{"CLIENT_INNER_PRODUCER":[{"clientId":"10.0.0.7@9","language":"JAVA",'
    b'"lastUpdateTimestamp":1700000000000,"remoteIP":"/10.0.0.7:50123","version":479}],'
    b'"PG":[{"clientId":"10.0.0.7@9","language":"JAVA","lastUpdateTimestamp":1700000000000,'
    b'"remoteIP":"/10.0.0.7:50123","version":479}]}}'
)


class StandIn:
    """One server answering as NameServer and broker at once, recording what it was asked."""

    def __init__(self) -> None:
        self.server = RemotingServer("127.0.0.1", 0)
        self.requests: list[RemotingCommand] = []
        self.require_signature = False
        for code in (
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            RequestCode.GET_PRODUCER_CONNECTION_LIST,
            RequestCode.GET_ALL_PRODUCER_INFO,
            RequestCode.UPDATE_CONSUMER_OFFSET,
        ):
            self.server.register(code, self.handle)
        self.producer_table = JAVA_PRODUCER_TABLE
        #: The remark of the answer to an offset commit (a 5.2+ broker's when it dropped the commit).
        self.commit_remark: str | None = None

    async def handle(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.requests.append(request)
        if self.require_signature and not verify(request, SECRET):
            return request.make_response(ResponseCode.NO_PERMISSION, "signature mismatch")
        if request.code == RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER:
            return request.make_response(body=TopicList(topic_list=["A", "B"]).to_json())
        if request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            route = TopicRouteData(
                queue_datas=[QueueData(broker_name="b", read_queue_nums=1, write_queue_nums=1, perm=6)],
                broker_datas=[
                    BrokerData(cluster="C", broker_name="b", broker_addrs={0: self.server.address})
                ],
            )
            return request.make_response(body=route.to_json())
        if request.code == RequestCode.GET_ALL_PRODUCER_INFO:
            return request.make_response(body=self.producer_table)
        if request.code == RequestCode.UPDATE_CONSUMER_OFFSET:
            return request.make_response(remark=self.commit_remark)
        body = ProducerConnection(
            connection_set=[
                ConnectionBody(client_id="p1@x", client_addr="10.0.0.1:5", language="JAVA", version=409)
            ]
        )
        return request.make_response(body=body.to_json())


@pytest.fixture
async def stand_in() -> AsyncIterator[StandIn]:
    server = StandIn()
    await server.server.start()
    try:
        yield server
    finally:
        await server.server.close()


def _dead_address() -> str:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


async def test_requests_are_signed_when_keys_are_given(stand_in: StandIn) -> None:
    stand_in.require_signature = True
    async with Admin(stand_in.server.address, access_key="rocketmq2", secret_key=SECRET) as admin:
        assert await admin.topic_list() == ["A", "B"]
    assert stand_in.requests[-1].fields()[ACCESS_KEY] == "rocketmq2"

    async with Admin(stand_in.server.address, access_key="rocketmq2", secret_key="wrong") as admin:
        with pytest.raises(RequestRefusedError, match="NO_PERMISSION"):
            await admin.topic_list()
    async with Admin(stand_in.server.address) as admin:
        with pytest.raises(RequestRefusedError) as refused:
            await admin.topic_list()
    assert refused.value.code == ResponseCode.NO_PERMISSION


async def test_a_lone_key_is_refused() -> None:
    with pytest.raises(AdminError, match="go together"):
        async with Admin("127.0.0.1:9876", access_key="only-this"):
            pass


async def test_reads_fail_over_to_a_namesrv_that_answers(stand_in: StandIn) -> None:
    # the first NameServer is picked at random; whichever it is, the answer must come from the live one
    namesrv = f"{_dead_address()};{stand_in.server.address};{_dead_address()}"
    for _ in range(4):
        async with Admin(namesrv, timeout_ms=2000) as admin:
            assert await admin.topic_list() == ["A", "B"]


async def test_no_namesrv_answering_is_unreachable() -> None:
    async with Admin(f"{_dead_address()};{_dead_address()}", timeout_ms=1000) as admin:
        with pytest.raises(UnreachableError, match="no NameServer"):
            await admin.topic_list()
        with pytest.raises(UnreachableError, match="did not answer"):
            await admin.broker_runtime_stats(_dead_address())


async def test_producer_connections_from_the_topic_brokers(stand_in: StandIn) -> None:
    async with Admin(stand_in.server.address) as admin:
        [client] = await admin.producer_connections("PG", "T")
    assert (client.client_id, client.client_addr, client.language, client.version) == (
        "p1@x",
        "10.0.0.1:5",
        "JAVA",
        409,
    )
    asked = [r for r in stand_in.requests if r.code == RequestCode.GET_PRODUCER_CONNECTION_LIST]
    assert asked[0].fields()["producerGroup"] == "PG"


async def test_producer_table_from_a_java_broker(stand_in: StandIn) -> None:
    async with Admin(stand_in.server.address) as admin:
        table = await admin.producer_table(stand_in.server.address)
        assert sorted(table.data) == ["CLIENT_INNER_PRODUCER", "PG"]
        [producer] = table.data["PG"]
        assert (producer.client_id, producer.remote_ip, producer.language, producer.version) == (
            "10.0.0.7@9",
            "/10.0.0.7:50123",
            "JAVA",
            479,
        )
        stand_in.producer_table = b'{"data":{"PG":{}}}'
        with pytest.raises(AdminError, match=r"unreadable producer table from .*data\['PG'\]"):
            await admin.producer_table(stand_in.server.address)
    [asked, _] = [r for r in stand_in.requests if r.code == RequestCode.GET_ALL_PRODUCER_INFO]
    assert asked.fields() == {}  # Java's header has no fields


async def test_admin_needs_a_namesrv_and_a_start() -> None:
    with pytest.raises(AdminError, match="no NameServer address"):
        Admin(" ; ")
    admin = Admin("127.0.0.1:9876")
    with pytest.raises(AdminError, match="not started"):
        await admin.topic_list()


async def test_header_serialization_is_the_callers_choice(stand_in: StandIn) -> None:
    async with Admin(stand_in.server.address) as admin:
        await admin.topic_route("T")
    async with Admin(stand_in.server.address, serialize_type=SerializeType.ROCKETMQ) as admin:
        route = await admin.topic_route("T")
        assert await admin.topic_list() == ["A", "B"]
    assert [q.broker_name for q in route.queue_datas] == ["b"]
    assert [r.serialize_type for r in stand_in.requests] == [
        SerializeType.JSON,
        SerializeType.ROCKETMQ,
        SerializeType.ROCKETMQ,
    ]


async def test_an_offset_commit_a_broker_dropped_after_a_reset_is_an_error(stand_in: StandIn) -> None:
    """5.2+ brokers answer SUCCESS, remark "Offset has been previously reset", and keep the old offset while
    a server-side reset waits for the group's consumers: the caller must not believe the offset was set."""
    async with Admin(stand_in.server.address) as admin:
        assert await admin.update_consumer_offset("G", "T", 0, 1) == stand_in.server.address
        stand_in.commit_remark = "Offset has been previously reset"
        with pytest.raises(OffsetResetPendingError, match=r"ignored the offset of group 'G' on T:0"):
            await admin.update_consumer_offset("G", "T", 0, 1)
