"""The admin client against the project's NameServer and Broker, in-process on loopback."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from admin import (
    RESET_TO_LATEST,
    Admin,
    AdminError,
    BlockingAdmin,
    ConsumerNotOnlineError,
    MessageNotFoundError,
    PullStatus,
    ResetMethod,
    TopicNotFoundError,
)
from broker.testing import BrokerClient
from cli.local_cluster import LocalCluster, LocalClusterSettings
from producer import Message, Producer, SendResult

TOPIC = "AdminTopic"
GROUP = "AdminGroup"


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(LocalClusterSettings(tmp_path / "store")) as cluster:
        yield cluster


@pytest.fixture
async def admin(local: LocalCluster) -> AsyncIterator[Admin]:
    async with Admin(local.namesrv_address) as client:
        yield client


async def _has_route(admin: Admin, topic: str) -> bool:
    try:
        await admin.topic_route(topic)
    except TopicNotFoundError:
        return False
    return True


async def _create(local: LocalCluster, admin: Admin, topic: str = TOPIC, queues: int = 4) -> None:
    written = await admin.create_topic(
        topic, cluster="DefaultCluster", read_queue_nums=queues, write_queue_nums=queues
    )
    assert written == [local.broker_address]
    await local.wait_for_route(lambda: _has_route(admin, topic))


async def _send(local: LocalCluster, messages: list[Message]) -> list[SendResult]:
    async with Producer("AdminTestProducer", local.namesrv_address) as producer:
        return [await producer.send(message) for message in messages]


async def test_cluster_info_lists_the_broker(local: LocalCluster, admin: Admin) -> None:
    info = await admin.cluster_info()
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    [broker] = await admin.brokers()
    assert (broker.cluster, broker.broker_name, broker.broker_id, broker.addr) == (
        "DefaultCluster",
        "broker-a",
        0,
        local.broker_address,
    )
    with pytest.raises(AdminError, match="no cluster named 'Nope'"):
        await admin.brokers("Nope")


async def test_topic_lifecycle_route_send_status_query_delete(local: LocalCluster, admin: Admin) -> None:
    await _create(local, admin)
    route = await admin.topic_route(TOPIC)
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 4, 4, 6)
    ]
    assert TOPIC in await admin.topic_list()

    bodies = [f"body-{i}".encode() for i in range(6)]
    results = await _send(
        local,
        [Message(TOPIC, body, tags="TagA", keys=[f"key-{i}", "common"]) for i, body in enumerate(bodies)],
    )

    status = await admin.topic_status(TOPIC)
    assert [(q.broker_name, q.queue_id) for q in status.queues] == [("broker-a", i) for i in range(4)]
    expected_max = {i: sum(1 for r in results if r.message_queue.queue_id == i) for i in range(4)}
    assert {q.queue_id: q.max_offset for q in status.queues} == expected_max
    assert status.total_messages == 6
    assert all(q.last_updated_ms > 0 for q in status.queues if q.max_offset > 0)

    # by offset message id: the broker that stored it, at that commit-log offset
    first = results[0]
    assert first.offset_msg_id is not None
    viewed = await admin.view_message(first.offset_msg_id)
    assert (viewed.body, viewed.unique_id, viewed.tags) == (bodies[0], first.msg_id, "TagA")
    assert (await admin.get_message(first.offset_msg_id)).body == bodies[0]

    # by unique id (needs the topic) and by key, through every broker of the route
    assert (await admin.get_message(first.msg_id, topic=TOPIC)).body == bodies[0]
    [by_unique] = await admin.query_by_unique_key(TOPIC, results[3].msg_id)
    assert by_unique.body == bodies[3]
    [by_key] = await admin.query_by_key(TOPIC, "key-2")
    assert by_key.body == bodies[2]
    assert sorted(m.body for m in await admin.query_by_key(TOPIC, "common")) == sorted(bodies)
    assert await admin.query_by_key(TOPIC, "no-such-key") == []
    with pytest.raises(MessageNotFoundError):
        await admin.get_message(first.msg_id)  # a unique id is no offset id without the topic to search

    # pull reads a queue back without committing anything
    queue = first.message_queue.queue_id
    pulled = await admin.pull(TOPIC, queue, 0)
    assert pulled.status is PullStatus.FOUND
    assert pulled.next_begin_offset == expected_max[queue]
    assert bodies[0] in [m.body for m in pulled.messages]
    assert (await admin.pull(TOPIC, queue, expected_max[queue])).status is PullStatus.NO_NEW_MSG

    deleted = await admin.delete_topic(TOPIC, cluster="DefaultCluster")
    assert (deleted.brokers, deleted.namesrvs) == ((local.broker_address,), (local.namesrv_address,))
    with pytest.raises(TopicNotFoundError):
        await admin.topic_route(TOPIC)
    assert TOPIC not in await admin.topic_list()
    with pytest.raises(TopicNotFoundError):
        await admin.topic_status(TOPIC)


async def test_consumer_progress_follows_committed_offsets(local: LocalCluster, admin: Admin) -> None:
    await _create(local, admin, queues=2)
    results = await _send(local, [Message(TOPIC, b"x") for _ in range(4)])
    per_queue = {i: sum(1 for r in results if r.message_queue.queue_id == i) for i in range(2)}

    with pytest.raises(ConsumerNotOnlineError):
        await admin.consumer_progress(GROUP)

    await admin.update_consumer_offset(GROUP, TOPIC, 0, 1)
    progress = await admin.consumer_progress(GROUP)
    rows = {(r.topic, r.queue_id): r for r in progress.queues}
    assert set(rows) == {(TOPIC, 0), (TOPIC, 1)}
    assert (rows[TOPIC, 0].broker_offset, rows[TOPIC, 0].consumer_offset) == (per_queue[0], 1)
    assert rows[TOPIC, 0].lag == per_queue[0] - 1
    assert rows[TOPIC, 1].lag == per_queue[1]
    assert progress.total_lag == 4 - 1
    assert (await admin.consumer_progress(GROUP, TOPIC)).total_lag == 3

    # the broker cannot reset an offline group itself: offsets are searched by time and written directly
    to_end = await admin.reset_offset_by_time(GROUP, TOPIC, RESET_TO_LATEST)
    assert {(r.queue_id, r.new_offset) for r in to_end} == set(per_queue.items())
    assert {r.method for r in to_end} == {ResetMethod.DIRECT}
    assert (await admin.consumer_progress(GROUP)).total_lag == 0

    to_start = await admin.reset_offset_by_time(GROUP, TOPIC, 0)
    assert {(r.queue_id, r.previous_offset, r.new_offset) for r in to_start} == {
        (q, n, 0) for q, n in per_queue.items()
    }
    assert (await admin.consumer_progress(GROUP)).total_lag == 4

    # without force an offset only moves back: a reset to "now" leaves the group at the start
    kept = await admin.reset_offset_by_time(GROUP, TOPIC, int(time.time() * 1000) + 60_000, force=False)
    assert {r.new_offset for r in kept} == {0}


async def test_consumer_connections_of_an_online_group(local: LocalCluster, admin: Admin) -> None:
    await _create(local, admin, queues=1)
    async with BrokerClient(local.broker_address) as client:
        reply = await client.heartbeat("10.0.0.9@test", consumer_groups={GROUP: {TOPIC: "TagA || TagB"}})
        assert reply.code == 0
        connections = await admin.consumer_connections(GROUP)
    assert [c.client_id for c in connections.connections] == ["10.0.0.9@test"]
    assert connections.subscriptions == {TOPIC: "TagA || TagB"}
    assert connections.message_model == "CLUSTERING"
    with pytest.raises(ConsumerNotOnlineError):
        await admin.consumer_connections("NobodyHome")


async def test_producer_table_of_a_broker(local: LocalCluster, admin: Admin) -> None:
    await _create(local, admin, queues=1)
    assert (await admin.producer_table(local.broker_address)).data == {}
    async with Producer("AdminTableProducer", local.namesrv_address) as producer:
        await producer.send(Message(TOPIC, b"x"))  # the producer has a connection to the broker now
        for _ in range(100):  # its first heartbeat follows the connection
            table = await admin.producer_table(local.broker_address)
            if "AdminTableProducer" in table.data:
                break
            await asyncio.sleep(0.05)
        [mine] = table.data["AdminTableProducer"]
        assert mine.client_id == producer.client_id
        assert mine.language == "PYTHON" and mine.remote_ip and mine.remote_ip.startswith("/127.0.0.1:")
        # as Java's client, the project's announces its inner group on the same connection
        assert [i.client_id for i in table.data["CLIENT_INNER_PRODUCER"]] == [producer.client_id]

        def blocking_table() -> list[str]:
            with BlockingAdmin(local.namesrv_address) as blocking:
                return sorted(blocking.producer_table(local.broker_address).data)

        assert await asyncio.to_thread(blocking_table) == ["AdminTableProducer", "CLIENT_INNER_PRODUCER"]


async def test_kv_config_put_get_list_delete(admin: Admin) -> None:
    assert await admin.kv_get("ns-a", "k") is None
    assert await admin.kv_put("ns-a", "k", "v1") == admin.namesrv_addresses
    await admin.kv_put("ns-a", "k2", "v2")
    assert await admin.kv_get("ns-a", "k") == "v1"
    assert await admin.kv_list("ns-a") == {"k": "v1", "k2": "v2"}
    await admin.kv_delete("ns-a", "k")
    assert await admin.kv_get("ns-a", "k") is None
    assert await admin.kv_list("nothing-here") == {}


async def test_broker_runtime_stats_and_config(local: LocalCluster, admin: Admin) -> None:
    stats = await admin.broker_runtime_stats(local.broker_address)
    assert stats["brokerVersionDesc"].startswith("V")
    assert int(stats["commitLogMaxOffset"]) >= 0
    config = await admin.broker_config(local.broker_address)
    assert config["brokerName"] == "broker-a"
    assert config["brokerClusterName"] == "DefaultCluster"
    assert config["listenPort"] == local.broker_address.rsplit(":", 1)[1]


async def test_update_broker_config_takes_effect_live(local: LocalCluster, admin: Admin) -> None:
    before = await admin.broker_config(local.broker_address)
    assert before["flushConsumerOffsetInterval"] != "1234"
    await admin.update_broker_config(local.broker_address, {"flushConsumerOffsetInterval": "1234"})
    after = await admin.broker_config(local.broker_address)
    assert after["flushConsumerOffsetInterval"] == "1234"
    assert after["brokerName"] == before["brokerName"]
    with pytest.raises(AdminError, match="no setting"):
        await admin.update_broker_config(local.broker_address, {})


async def test_refusals_and_bad_input_are_admin_errors(local: LocalCluster, admin: Admin) -> None:
    with pytest.raises(TopicNotFoundError, match="NoSuchTopic"):
        await admin.topic_route("NoSuchTopic")
    with pytest.raises(AdminError, match="invalid topic name"):
        await admin.create_topic("bad topic!", cluster="DefaultCluster")
    with pytest.raises(AdminError, match="either a cluster or a broker address"):
        await admin.create_topic("Fine")
    with pytest.raises(AdminError, match="conflict with system topic"):
        await admin.create_topic("TBW102", broker_addr=local.broker_address)
    with pytest.raises(AdminError, match="not an offset message id"):
        await admin.view_message("zz")


async def test_order_topic_records_its_layout_in_the_namesrv(local: LocalCluster, admin: Admin) -> None:
    await admin.create_topic(
        "Ordered", cluster="DefaultCluster", read_queue_nums=3, write_queue_nums=3, order=True
    )
    assert await admin.kv_get("ORDER_TOPIC_CONFIG", "Ordered") == "broker-a:3"


async def test_blocking_admin_from_another_thread(local: LocalCluster) -> None:
    def work() -> tuple[list[str], str | None]:
        with BlockingAdmin(local.namesrv_address) as blocking:
            blocking.kv_put("ns-b", "key", "value")
            return [b.addr for b in blocking.brokers()], blocking.kv_get("ns-b", "key")

    addrs, value = await asyncio.to_thread(work)
    assert (addrs, value) == ([local.broker_address], "value")
