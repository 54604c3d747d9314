"""Group administration (updateSubGroup, deleteSubGroup, getConsumerConfig, brokerConsumeStats,
cloneGroupOffset, skipAccumulatedMessage) against the project's NameServer and Broker in-process.
The broker serves these request codes through ``broker.processors.group_admin``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from admin import Admin, AdminError, BlockingAdmin
from broker.processors.topic_admin import SLAVE_REFUSAL
from cli.local_cluster import LocalCluster, LocalClusterSettings
from producer import Message, Producer
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies import SubscriptionGroupConfig
from rocketmq_wire.headers.admin import CloneGroupOffsetRequestHeader

TOPIC = "GroupAdminTopic"
GROUP = "GroupAdminGroup"


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(LocalClusterSettings(tmp_path / "store")) as cluster:
        yield cluster


@pytest.fixture
async def admin(local: LocalCluster) -> AsyncIterator[Admin]:
    async with Admin(local.namesrv_address) as client:
        yield client


async def _topic_with_messages(local: LocalCluster, admin: Admin, count: int = 8) -> dict[int, int]:
    await admin.create_topic(TOPIC, cluster="DefaultCluster", read_queue_nums=2, write_queue_nums=2)

    async def routed() -> bool:
        try:
            await admin.topic_route(TOPIC)
        except AdminError:
            return False
        return True

    await local.wait_for_route(routed)
    per_queue = {0: 0, 1: 0}
    async with Producer("GroupAdminProducer", local.namesrv_address) as producer:
        for i in range(count):
            result = await producer.send(Message(TOPIC, f"m{i}".encode()))
            per_queue[result.message_queue.queue_id] += 1
    return per_queue


async def test_update_read_and_delete_a_subscription_group(local: LocalCluster, admin: Admin) -> None:
    config = SubscriptionGroupConfig(
        group_name=GROUP, consume_broadcast_enable=False, retry_queue_nums=3, retry_max_times=5, broker_id=1
    )
    assert await admin.update_subscription_group(config, cluster="DefaultCluster") == [local.broker_address]
    held = local.broker.subscription_groups.find(GROUP)
    assert held is not None
    assert (held.retry_queue_nums, held.retry_max_times, held.broker_id, held.consume_broadcast_enable) == (
        3,
        5,
        1,
        False,
    )

    [found] = await admin.subscription_group_configs(GROUP)
    assert (found.cluster, found.broker_name, found.broker_addr) == (
        "DefaultCluster",
        "broker-a",
        local.broker_address,
    )
    assert found.config == config
    assert await admin.subscription_group_configs("NoSuchGroupAnywhere") == []

    local.broker.consumer_offsets.commit_offset(GROUP, "SomeTopic", 0, 7)
    deleted = await admin.delete_subscription_group(
        GROUP, broker_addr=local.broker_address, remove_offset=True
    )
    assert deleted.brokers == (local.broker_address,)
    assert deleted.topics_deleted == ()
    assert GROUP not in local.broker.subscription_groups.groups()
    assert local.broker.consumer_offsets.query_offset(GROUP, "SomeTopic", 0) == -1


async def test_delete_on_a_cluster_keeps_offsets_unless_asked(local: LocalCluster, admin: Admin) -> None:
    await admin.update_subscription_group(
        SubscriptionGroupConfig(group_name=GROUP), broker_addr=local.broker_address
    )
    local.broker.consumer_offsets.commit_offset(GROUP, "SomeTopic", 1, 4)
    await admin.create_topic(
        f"%RETRY%{GROUP}", cluster="DefaultCluster", read_queue_nums=1, write_queue_nums=1
    )
    assert local.broker.topic_config_manager.select(f"%RETRY%{GROUP}") is not None
    deleted = await admin.delete_subscription_group(GROUP, cluster="DefaultCluster")
    assert deleted.brokers == (local.broker_address,)
    # as mqadmin on a cluster: the group's retry and DLQ topics go too
    assert deleted.topics_deleted == (f"%RETRY%{GROUP}", f"%DLQ%{GROUP}")
    assert local.broker.topic_config_manager.select(f"%RETRY%{GROUP}") is None
    assert GROUP not in local.broker.subscription_groups.groups()
    assert local.broker.consumer_offsets.query_offset(GROUP, "SomeTopic", 1) == 4


async def test_bad_targets_and_names_are_refused(admin: Admin) -> None:
    with pytest.raises(AdminError, match="either a cluster or a broker"):
        await admin.update_subscription_group(SubscriptionGroupConfig(group_name=GROUP))
    with pytest.raises(AdminError, match="invalid group name"):
        await admin.delete_subscription_group("bad group!", cluster="DefaultCluster")


async def test_broker_consume_stats_lists_every_group(local: LocalCluster, admin: Admin) -> None:
    per_queue = await _topic_with_messages(local, admin)
    await admin.update_subscription_group(
        SubscriptionGroupConfig(group_name=GROUP), broker_addr=local.broker_address
    )
    await admin.update_consumer_offset(GROUP, TOPIC, 0, 1)
    stats = await admin.broker_consume_stats(local.broker_address)
    assert stats.broker_addr == local.broker_address
    by_group = {group: lists for entry in stats.consume_stats_list for group, lists in entry.items()}
    [topic_stats] = by_group[GROUP]
    offsets = {q.queue_id: (w.broker_offset, w.consumer_offset) for q, w in topic_stats.offset_table.items()}
    assert offsets == {0: (per_queue[0], 1), 1: (per_queue[1], 0)}
    assert stats.total_diff == sum(per_queue.values()) - 1
    # only ordered topics: this one is not
    ordered = await admin.broker_consume_stats(local.broker_address, order_only=True)
    assert {g: s for e in ordered.consume_stats_list for g, s in e.items()}[GROUP] == []
    assert ordered.total_diff == 0


async def test_clone_offsets_and_skip_accumulated(local: LocalCluster, admin: Admin) -> None:
    per_queue = await _topic_with_messages(local, admin)
    await admin.update_consumer_offset(GROUP, TOPIC, 0, 1)
    await admin.update_consumer_offset(GROUP, TOPIC, 1, 2)
    cloned = await admin.clone_group_offset(GROUP, "ClonedGroup", TOPIC)
    assert [(c.queue_id, c.offset) for c in cloned] == [(0, 1), (1, 2)]
    offsets = local.broker.consumer_offsets
    assert (offsets.query_offset("ClonedGroup", TOPIC, 0), offsets.query_offset("ClonedGroup", TOPIC, 1)) == (
        1,
        2,
    )

    rows = await admin.skip_accumulated("ClonedGroup", TOPIC)
    assert sorted((r.queue_id, r.new_offset) for r in rows) == [(0, per_queue[0]), (1, per_queue[1])]
    assert (await admin.consumer_progress("ClonedGroup", TOPIC)).total_lag == 0
    assert (await admin.consumer_progress(GROUP, TOPIC)).total_lag == sum(per_queue.values()) - 3


async def test_broker_clone_group_offset_request(local: LocalCluster, admin: Admin) -> None:
    await _topic_with_messages(local, admin)
    local.broker.consumer_offsets.commit_offset(GROUP, TOPIC, 1, 3)
    header = CloneGroupOffsetRequestHeader(src_group=GROUP, dest_group="Copy", topic=TOPIC, offline=True)
    request = RemotingCommand.request(RequestCode.CLONE_GROUP_OFFSET, header)
    response = await admin.rpc.server(local.broker_address, request)
    assert (response.code, response.remark) == (ResponseCode.SUCCESS, None)
    assert local.broker.consumer_offsets.offsets("Copy", TOPIC) == {1: 3}
    # a missing required field is answered as Java answers it
    bad = RemotingCommand.request(RequestCode.CLONE_GROUP_OFFSET, ext_fields={"srcGroup": GROUP})
    answer = await admin.rpc.server(local.broker_address, bad)
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert "destGroup" in (answer.remark or "")


async def test_a_slave_refuses_group_writes(local: LocalCluster, admin: Admin) -> None:
    local.broker.config.broker_role = "SLAVE"
    try:
        with pytest.raises(AdminError, match="slave broker"):
            await admin.update_subscription_group(
                SubscriptionGroupConfig(group_name=GROUP), broker_addr=local.broker_address
            )
    finally:
        local.broker.config.broker_role = "ASYNC_MASTER"
    assert SLAVE_REFUSAL.startswith("Can't modify")


async def test_blocking_facade(local: LocalCluster) -> None:
    def work() -> tuple[int, str | None]:
        with BlockingAdmin(local.namesrv_address) as admin:
            admin.update_subscription_group(
                SubscriptionGroupConfig(group_name=GROUP), cluster="DefaultCluster"
            )
            [found] = admin.subscription_group_configs(GROUP)
            return found.config.retry_max_times, admin.broker_consume_stats(local.broker_address).broker_addr

    assert await asyncio.to_thread(work) == (16, local.broker_address)
