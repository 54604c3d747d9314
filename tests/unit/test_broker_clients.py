"""Producer and consumer groups: heartbeats, membership, rebalance nudges, connection lists, queue locks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import Broker, ManualClock
from broker.processors.producer_admin import java_socket_address
from broker.testing import BrokerClient, running_broker
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.consumer import (
    ConsumerConnection,
    GetConsumerListByGroupResponseBody,
    GroupList,
    ProducerConnection,
    ProducerTableInfo,
)
from rocketmq_wire.bodies.lock import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.stats import ConsumeStats
from rocketmq_wire.headers.admin import GetAllProducerInfoRequestHeader
from rocketmq_wire.headers.consumer import (
    GetConsumerConnectionListRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    UnregisterClientRequestHeader,
)
from rocketmq_wire.headers.topic import QueryTopicConsumeByWhoRequestHeader
from rocketmq_wire.transport import Connection

LIMIT_S = 5


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def broker(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Broker]:
    async with running_broker(tmp_path / "store", clock=clock) as running:
        yield running


class Nudges:
    """Records NOTIFY_CONSUMER_IDS_CHANGED requests a client receives."""

    def __init__(self) -> None:
        self.groups: list[str] = []
        self.arrived = asyncio.Event()

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        self.groups.append(request.fields()["consumerGroup"])
        self.arrived.set()
        return None

    async def next(self) -> str:
        async with asyncio.timeout(LIMIT_S):
            await self.arrived.wait()
        self.arrived.clear()
        return self.groups[-1]


async def _members(client: BrokerClient, group: str) -> RemotingCommand:
    return await client.request(
        RequestCode.GET_CONSUMER_LIST_BY_GROUP, GetConsumerListByGroupRequestHeader(consumer_group=group)
    )


async def test_consumer_membership_and_rebalance_nudges(broker: Broker) -> None:
    nudges = Nudges()
    first = BrokerClient(broker.address, {RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: nudges})
    second = BrokerClient(broker.address)
    try:
        nobody = await _members(first, "Readers")
        assert (
            nobody.code == ResponseCode.SYSTEM_ERROR
            and nobody.remark == "no consumer for this group, Readers"
        )

        joined = await first.heartbeat("client-1", consumer_groups={"Readers": {"Topic": "*"}})
        assert joined.code == ResponseCode.SUCCESS and joined.remark is None
        assert await nudges.next() == "Readers"  # a new member: everyone (itself included) rebalances
        await second.heartbeat("client-2", consumer_groups={"Readers": {"Topic": "*"}})
        assert await nudges.next() == "Readers"
        listed = GetConsumerListByGroupResponseBody.from_json((await _members(first, "Readers")).body)
        assert sorted(listed.consumer_id_list) == ["client-1", "client-2"]

        # the retry topic of the group now exists
        assert broker.topic_exists("%RETRY%Readers")

        # a repeated heartbeat changes nothing and nudges nobody
        await second.heartbeat("client-2", consumer_groups={"Readers": {"Topic": "*"}})
        assert not nudges.arrived.is_set()

        left = await second.request(
            RequestCode.UNREGISTER_CLIENT,
            UnregisterClientRequestHeader(client_id="client-2", consumer_group="Readers"),
        )
        assert left.code == ResponseCode.SUCCESS
        assert await nudges.next() == "Readers"
        listed = GetConsumerListByGroupResponseBody.from_json((await _members(first, "Readers")).body)
        assert listed.consumer_id_list == ["client-1"]

        await second.heartbeat("client-2", consumer_groups={"Readers": {"Topic": "*"}})
        assert await nudges.next() == "Readers"
        await second.close()  # leaving by hanging up counts too
        assert await nudges.next() == "Readers"
        listed = GetConsumerListByGroupResponseBody.from_json((await _members(first, "Readers")).body)
        assert listed.consumer_id_list == ["client-1"]
    finally:
        await first.close()
        await second.close()


async def test_connection_list_consume_stats_and_who_consumes(broker: Broker) -> None:
    async with BrokerClient(broker.address) as client:
        await client.create_topic("Stats", 2)
        for _ in range(3):
            await client.send("Stats", b"x", queue_id=0)
        await client.heartbeat("client-1", consumer_groups={"Readers": {"Stats": "TagA || TagB"}})
        await client.pull("Readers", "Stats", 0, 2, commit_offset=2)

        connections = await client.request(
            RequestCode.GET_CONSUMER_CONNECTION_LIST,
            GetConsumerConnectionListRequestHeader(consumer_group="Readers"),
        )
        body = ConsumerConnection.from_json(connections.body)
        assert [c.client_id for c in body.connection_set] == ["client-1"]
        assert body.connection_set[0].language == "PYTHON"
        assert body.message_model == "CLUSTERING"
        assert sorted(body.subscription_table["Stats"].tags_set) == ["TagA", "TagB"]

        offline = await client.request(
            RequestCode.GET_CONSUMER_CONNECTION_LIST,
            GetConsumerConnectionListRequestHeader(consumer_group="Nobody"),
        )
        assert offline.code == ResponseCode.CONSUMER_NOT_ONLINE
        assert offline.remark == "the consumer group[Nobody] not online"

        stats = await client.request(
            RequestCode.GET_CONSUME_STATS,
            GetConsumeStatsRequestHeader(consumer_group="Readers", topic="Stats"),
        )
        table = ConsumeStats.from_json(stats.body)
        by_queue = {queue.queue_id: wrapper for queue, wrapper in table.offset_table.items()}
        assert by_queue[0].broker_offset == 3 and by_queue[0].consumer_offset == 2
        assert by_queue[1].broker_offset == 0
        assert table.compute_total_diff() == 1

        who = await client.request(
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, QueryTopicConsumeByWhoRequestHeader(topic="Stats")
        )
        assert GroupList.from_json(who.body).group_list == ["Readers"]


async def test_producer_groups_track_connections(broker: Broker) -> None:
    async with BrokerClient(broker.address) as client:
        await client.heartbeat("producer-1", producer_groups=["Writers"])
        [member] = broker.producer_manager.members("Writers")
        assert member.client_id == "producer-1" and member.language == "PYTHON"
        listing = GetProducerConnectionListRequestHeader(producer_group="Writers")
        listed = await client.request(RequestCode.GET_PRODUCER_CONNECTION_LIST, listing)
        [connection] = ProducerConnection.from_json(listed.body).connection_set
        assert connection.client_id == "producer-1" and connection.language == "PYTHON"
        await client.request(
            RequestCode.UNREGISTER_CLIENT,
            UnregisterClientRequestHeader(client_id="producer-1", producer_group="Writers"),
        )
        assert broker.producer_manager.members("Writers") == []
        gone = await client.request(RequestCode.GET_PRODUCER_CONNECTION_LIST, listing)
        assert (
            gone.code == ResponseCode.SYSTEM_ERROR and gone.remark == "the producer group[Writers] not exist"
        )


async def _producer_table(client: BrokerClient) -> ProducerTableInfo:
    answer = await client.request(RequestCode.GET_ALL_PRODUCER_INFO, GetAllProducerInfoRequestHeader())
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
    return ProducerTableInfo.from_json(answer.body)


async def test_all_producer_info_lists_every_connected_producer_by_group(
    broker: Broker, clock: ManualClock
) -> None:
    async with BrokerClient(broker.address) as first, BrokerClient(broker.address) as second:
        assert (await _producer_table(first)).data == {}  # nobody yet: an empty map, still SUCCESS

        clock.advance(1000)
        await first.heartbeat("10.0.0.1@first", producer_groups=["Writers", "CLIENT_INNER_PRODUCER"])
        await second.heartbeat("10.0.0.2@second", producer_groups=["Writers"])
        await second.heartbeat("10.0.0.2@second", consumer_groups={"Readers": {"T": "*"}})
        table = await _producer_table(first)
        assert sorted(table.data) == ["CLIENT_INNER_PRODUCER", "Writers"]  # consumer groups are not listed
        writers = {info.client_id: info for info in table.data["Writers"]}
        assert sorted(writers) == ["10.0.0.1@first", "10.0.0.2@second"]
        [inner] = table.data["CLIENT_INNER_PRODUCER"]
        assert inner.client_id == "10.0.0.1@first"
        mine = writers["10.0.0.1@first"]
        # Java's remoteAddress().toString(): this client's end of the connection, after a slash
        local = (await first.client.connection(broker.address)).local_address
        assert mine.remote_ip == f"/{local}" and mine.remote_ip.startswith("/127.0.0.1:")
        assert (mine.language, mine.version) == ("PYTHON", 409)
        assert mine.last_update_timestamp == clock.now_ms()

        # a producer that hangs up leaves its groups; a group without members is not listed
        await first.close()
        for _ in range(100):
            if not broker.producer_manager.members("CLIENT_INNER_PRODUCER"):
                break
            await asyncio.sleep(0.01)
        table = await _producer_table(second)
        assert list(table.data) == ["Writers"]
        assert [info.client_id for info in table.data["Writers"]] == ["10.0.0.2@second"]


def test_java_socket_address_matches_inet_socket_address_to_string() -> None:
    assert java_socket_address("127.0.0.1:54321") == "/127.0.0.1:54321"
    assert java_socket_address("::1:54321") == "/[0:0:0:0:0:0:0:1]:54321"
    assert java_socket_address("fe80::1:0:a:7") == "/[fe80:0:0:0:0:1:0:a]:7"
    assert java_socket_address("") == "/"


async def test_queue_locks_are_exclusive_until_they_expire(broker: Broker, clock: ManualClock) -> None:
    queues = [MessageQueue(topic="Ordered", broker_name="broker-a", queue_id=i) for i in range(3)]

    async def lock(client: BrokerClient, client_id: str, wanted: list[MessageQueue]) -> list[MessageQueue]:
        body = LockBatchRequestBody(
            consumer_group="OrderlyGroup", client_id=client_id, mq_set=wanted
        ).to_json()
        answer = await client.request(RequestCode.LOCK_BATCH_MQ, body=body)
        assert answer.code == ResponseCode.SUCCESS
        return sorted(LockBatchResponseBody.from_json(answer.body).lock_ok_mq_set, key=lambda q: q.queue_id)

    async with BrokerClient(broker.address) as a, BrokerClient(broker.address) as b:
        assert await lock(a, "A", queues[:2]) == queues[:2]
        assert await lock(b, "B", queues) == queues[2:]
        clock.advance(30_000)
        assert await lock(a, "A", queues[:1]) == queues[:1]  # renewed
        clock.advance(31_000)
        # queue 1 was last renewed 61 s ago: it lapsed and B may take it; queue 0 is still A's
        assert await lock(b, "B", queues[:2]) == queues[1:2]
        unlock = UnlockBatchRequestBody(
            consumer_group="OrderlyGroup", client_id="A", mq_set=queues[:1]
        ).to_json()
        assert (await a.request(RequestCode.UNLOCK_BATCH_MQ, body=unlock)).code == ResponseCode.SUCCESS
        assert await lock(b, "B", queues[:1]) == queues[:1]


async def test_silent_clients_are_dropped_after_the_expiry_timeout(
    broker: Broker, clock: ManualClock
) -> None:
    async with BrokerClient(broker.address) as client:
        await client.heartbeat("quiet", consumer_groups={"Sleepy": {"Topic": "*"}})
        assert broker.consumer_manager.group("Sleepy") is not None
        closed = asyncio.Event()
        client.client.on_connection_closed(lambda conn: closed.set())
        clock.advance(130_000)  # past the 120 s expiry; the idle scan runs every 10 s
        async with asyncio.timeout(LIMIT_S):
            await closed.wait()
        assert broker.consumer_manager.group("Sleepy") is None
