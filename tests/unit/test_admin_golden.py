"""Every request the admin client sends is one mqadmin 4.9.8 sent: same code, same ext entries in the same
order, and -- signed with the credentials of the capture (Apache's tools.yml) -- the same signature.

The admin talks to a stand-in that answers as NameServer and broker at once; each request it records is
compared, byte for byte, with the captured mqadmin frames of that code (language and opaque aside, which
name the sender and the moment rather than the request).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from admin import Admin, ConsumerNotOnlineError
from rocketmq_wire import ExtFields, LanguageCode, RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.acl import ACCESS_KEY
from rocketmq_wire.bodies import (
    BrokerData,
    ClusterInfo,
    KVTable,
    QueueData,
    TopicList,
    TopicRouteData,
    TopicStatsTable,
)
from rocketmq_wire.headers.admin import GetBrokerConfigResponseHeader
from rocketmq_wire.transport import Connection, RemotingServer
from tests.golden import load_golden

ACCESS, SECRET = "rocketmq2", "12345678"  # the capture's mqadmin credentials
CAPTURE = "java498-json"


def _normalised(cmd: RemotingCommand) -> bytes:
    cmd.language = LanguageCode.JAVA
    cmd.opaque = 0
    return cmd.encode()


def _mqadmin_frames() -> dict[int, set[bytes]]:
    frames: dict[int, set[bytes]] = {}
    for golden in load_golden():
        if golden.capture != CAPTURE or golden.kind != "request" or not golden.direction.startswith("to-"):
            continue
        cmd = RemotingCommand.decode(golden.frame)
        if cmd.language == LanguageCode.JAVA and ACCESS_KEY in cmd.fields():
            frames.setdefault(cmd.code, set()).add(_normalised(cmd))
    return frames


class StandIn:
    def __init__(self) -> None:
        self.server = RemotingServer("127.0.0.1", 0)
        self.server.register_default(self.handle)
        self.requests: list[RemotingCommand] = []

    async def handle(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.requests.append(request)
        me = self.server.address
        broker = BrokerData(cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: me})
        code = request.code
        if code == RequestCode.GET_BROKER_CLUSTER_INFO:
            info = ClusterInfo(
                broker_addr_table={"broker-a": broker}, cluster_addr_table={"DefaultCluster": ["broker-a"]}
            )
            return request.make_response(body=info.to_json())
        if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            queues = QueueData(broker_name="broker-a", read_queue_nums=4, write_queue_nums=4, perm=6)
            return request.make_response(
                body=TopicRouteData(queue_datas=[queues], broker_datas=[broker]).to_json()
            )
        if code == RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER:
            return request.make_response(body=TopicList(topic_list=["GoldenTopic"]).to_json())
        if code == RequestCode.GET_TOPIC_STATS_INFO:
            return request.make_response(body=TopicStatsTable().to_json())
        if code == RequestCode.GET_BROKER_RUNTIME_INFO:
            return request.make_response(body=KVTable(table={"brokerVersionDesc": "V4_9_8"}).to_json())
        if code == RequestCode.GET_BROKER_CONFIG:
            header = GetBrokerConfigResponseHeader(version='{"counter":1,"timestamp":0}')
            return request.make_response(header=header, body=b"brokerName=broker-a\n")
        if code == RequestCode.QUERY_MESSAGE:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND, "can not find message")
        if code == RequestCode.GET_CONSUMER_CONNECTION_LIST:
            return request.make_response(ResponseCode.CONSUMER_NOT_ONLINE, "not online")
        return request.make_response(ResponseCode.SUCCESS)


@pytest.fixture
async def stand_in() -> AsyncIterator[StandIn]:
    server = StandIn()
    await server.server.start()
    try:
        yield server
    finally:
        await server.server.close()


async def test_admin_requests_are_mqadmins_byte_for_byte(stand_in: StandIn) -> None:
    captured = _mqadmin_frames()
    async with Admin(stand_in.server.address, access_key=ACCESS, secret_key=SECRET) as admin:
        await admin.create_topic(
            "GoldenTopic", cluster="DefaultCluster", read_queue_nums=4, write_queue_nums=4
        )
        await admin.topic_route("GoldenTopic")
        await admin.topic_list()
        await admin.topic_status("GoldenTopic")
        await admin.broker_runtime_stats(stand_in.server.address)
        await admin.broker_config(stand_in.server.address)
        await admin.kv_put("ORDER_TOPIC_CONFIG", "GoldenOrdered", "broker-a:4")
        await admin.query_by_key("GoldenTopic", "key-1")
        await admin.query_by_unique_key(
            "GoldenTopic", "FD00000000000000000000000000000257935FFD2B276CA6F6C20000"
        )
        await admin.delete_topic("GoldenDeleted", cluster="DefaultCluster")
        with pytest.raises(ConsumerNotOnlineError):
            await admin.consumer_connections("GoldenPush")

    sent_codes = {r.code for r in stand_in.requests}
    assert sent_codes == {
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.GET_TOPIC_STATS_INFO,
        RequestCode.GET_BROKER_RUNTIME_INFO,
        RequestCode.GET_BROKER_CONFIG,
        RequestCode.PUT_KV_CONFIG,
        RequestCode.QUERY_MESSAGE,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.GET_CONSUMER_CONNECTION_LIST,
    }
    for request in stand_in.requests:
        ours = _normalised(request)
        assert ours in captured.get(request.code, set()), f"no mqadmin frame like {ours!r}"


def _apache_answers(capture: str) -> dict[int, RemotingCommand]:
    """The first answer Apache's servers gave to a request of each code, in one capture."""
    frames = load_golden()
    asked = {(g.connection, g.opaque): g.code for g in frames if g.capture == capture and g.kind == "request"}
    answers: dict[int, RemotingCommand] = {}
    for golden in frames:
        if golden.capture == capture and golden.kind == "response":
            code = asked.get((golden.connection, golden.opaque))
            if code is not None:
                answers.setdefault(code, RemotingCommand.decode(golden.frame))
    return answers


class Replayer(StandIn):
    """Routes and cluster info point at itself; everything else is answered with Apache's captured answer."""

    def __init__(self, answers: dict[int, RemotingCommand]) -> None:
        super().__init__()
        self.answers = answers

    async def handle(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        apache = self.answers.get(request.code)
        if apache is None or request.code in (
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            RequestCode.GET_BROKER_CLUSTER_INFO,
        ):
            return await super().handle(request, conn)
        response = request.make_response(apache.code, apache.remark, body=apache.body)
        response.ext_fields = ExtFields(apache.fields())
        return response


@pytest.mark.parametrize(
    ("capture", "version", "unique_id", "queue_id"),
    [
        ("java498-json", "V4_9_8", "FD00000000000000000000000000000257935FFD2B276CA6F6C20000", 0),
        ("java533-json", "V5_3_3", "FD00000000000000000000000000000237E95FFD2B276CBE45760000", 1),
    ],
)
async def test_admin_reads_apaches_answers(capture: str, version: str, unique_id: str, queue_id: int) -> None:
    answers = _apache_answers(capture)
    replayer = Replayer(answers)
    await replayer.server.start()
    try:
        async with Admin(replayer.server.address) as admin:
            status = await admin.topic_status("GoldenTopic")
            assert [(q.broker_name, q.queue_id, q.max_offset) for q in status.queues] == [
                ("broker-a", i, 0) for i in range(4)
            ]
            assert (await admin.broker_runtime_stats(replayer.server.address))["brokerVersionDesc"] == version
            config = await admin.broker_config(replayer.server.address)
            assert (config["brokerName"], config["brokerClusterName"]) == ("broker-a", "DefaultCluster")
            [by_key] = await admin.query_by_key("GoldenTopic", "key-1")
            assert (by_key.unique_id, by_key.queue_id, by_key.tags) == (unique_id, queue_id, "TagA")
            assert (by_key.keys, by_key.body) == (["key-1", "key-2"], b"hello golden")
            assert by_key.properties["unicode"] == "你好-é"
            [by_unique] = await admin.query_by_unique_key("GoldenTopic", unique_id)
            assert by_unique.commit_log_offset == by_key.commit_log_offset
            assert await admin.query_by_key("GoldenTopic", "key-that-the-index-shares") == []  # filtered out
            with pytest.raises(ConsumerNotOnlineError):
                await admin.consumer_connections("GoldenPush")
            if RequestCode.GET_CONSUME_STATS in answers:  # 5.3.3 only: an empty table, as mqadmin reported
                with pytest.raises(ConsumerNotOnlineError):
                    await admin.consumer_progress("GoldenPullGroup")
    finally:
        await replayer.server.close()
