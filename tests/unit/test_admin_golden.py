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
from rocketmq_wire import LanguageCode, RemotingCommand, RequestCode, ResponseCode
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
