"""Admin processors built from broker parts: broker settings and runtime info, topic create/delete/lookup,
subscription-group administration. Each takes only the parts its constructor names; a slave is a config."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.parts import BrokerParts
from broker.processors.broker_admin import (
    GetBrokerConfigProcessor,
    GetBrokerRuntimeInfoProcessor,
    UpdateBrokerConfigProcessor,
)
from broker.processors.group_admin import (
    CloneGroupOffsetProcessor,
    DeleteSubscriptionGroupProcessor,
    GetSubscriptionGroupConfigProcessor,
    UpdateAndCreateSubscriptionGroupProcessor,
)
from broker.processors.topic_admin import (
    SLAVE_REFUSAL,
    UNSET_REMARK,
    DeleteTopicProcessor,
    GetTopicConfigProcessor,
    GetTopicStatsInfoProcessor,
    UpdateAndCreateTopicProcessor,
)
from broker.subscription_groups import SubscriptionGroupConfig as BrokerGroupConfig
from broker.testing import open_parts
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies import SubscriptionGroupConfig as GroupConfigBody
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.bodies.properties_text import PropertiesBody
from rocketmq_wire.bodies.stats import TopicStatsTable
from rocketmq_wire.bodies.topic_config import TopicConfig, TopicConfigAndQueueMapping
from rocketmq_wire.headers.admin import (
    CloneGroupOffsetRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetBrokerConfigResponseHeader,
    GetSubscriptionGroupConfigRequestHeader,
)
from rocketmq_wire.headers.topic import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
)
from tests.unit.broker_processor_helpers import call, wire_request

TOPIC = "AdminTopic"


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[BrokerParts]:
    async with open_parts(tmp_path / "store") as opened:
        yield opened


def create_topic_request(topic: str, queues: int = 4) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    return wire_request(RequestCode.UPDATE_AND_CREATE_TOPIC, header)


# -- broker settings and runtime info ----------------------------------------------------------------------


async def test_the_config_is_answered_as_properties_with_its_version(parts: BrokerParts) -> None:
    processor = GetBrokerConfigProcessor(config=parts.config, config_version=parts.config_version)
    answer = await call(processor, wire_request(RequestCode.GET_BROKER_CONFIG))
    assert answer.code == ResponseCode.SUCCESS
    properties = PropertiesBody.from_text(answer.body).properties
    assert properties["brokerName"] == parts.config.broker_name
    assert (
        answer.read_header(GetBrokerConfigResponseHeader).version == parts.config_version.to_json().decode()
    )


async def test_an_update_changes_the_config_and_says_which_keys_changed(parts: BrokerParts) -> None:
    changed: list[list[str]] = []
    processor = UpdateBrokerConfigProcessor(
        config=parts.config, announcer=parts.services.announcer, on_config_changed=changed.append
    )
    body = b"brokerPermission=4\n"
    answer = await call(processor, wire_request(RequestCode.UPDATE_BROKER_CONFIG, body=body))
    assert answer.code == ResponseCode.SUCCESS
    assert parts.config.broker_permission == 4
    assert changed == [["brokerPermission"]]


async def test_a_blacklisted_setting_is_not_changed(parts: BrokerParts) -> None:
    changed: list[list[str]] = []
    processor = UpdateBrokerConfigProcessor(
        config=parts.config, announcer=parts.services.announcer, on_config_changed=changed.append
    )
    body = b"brokerConfigPath=/elsewhere\n"
    answer = await call(processor, wire_request(RequestCode.UPDATE_BROKER_CONFIG, body=body))
    assert (answer.code, answer.remark) == (
        ResponseCode.NO_PERMISSION,
        "Can not update config in black list.",
    )
    assert changed == []


async def test_runtime_info_reports_the_store_and_the_queues_in_front_of_it(parts: BrokerParts) -> None:
    processor = GetBrokerRuntimeInfoProcessor(
        config=parts.config,
        stats=parts.stats,
        store=parts.storage.store,
        send_flow_control=parts.services.send_flow_control,
        pull_holder=parts.services.pull_holder,
    )
    answer = await call(processor, wire_request(RequestCode.GET_BROKER_RUNTIME_INFO))
    table = KVTable.from_json(answer.body).table
    assert table["commitLogMaxOffset"] == "0"
    assert table["sendThreadPoolQueueSize"] == "0"
    assert table["pullThreadPoolQueueSize"] == "0"
    assert table["sendThreadPoolQueueCapacity"] == str(parts.config.send_thread_pool_queue_capacity)


# -- topics ------------------------------------------------------------------------------------------------


def create_topic(parts: BrokerParts) -> UpdateAndCreateTopicProcessor:
    return UpdateAndCreateTopicProcessor(
        config=parts.config,
        topics=parts.metadata.topics,
        announcer=parts.services.announcer,
        stats=parts.stats,
    )


async def test_a_created_topic_is_in_the_table_and_can_be_looked_up(parts: BrokerParts) -> None:
    answer = await call(create_topic(parts), create_topic_request(TOPIC, queues=3))
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, UNSET_REMARK)
    lookup = GetTopicConfigProcessor(topics=parts.metadata.topics)
    found = await call(
        lookup, wire_request(RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic=TOPIC))
    )
    config = TopicConfigAndQueueMapping.from_json(found.body)
    assert (config.topic_name, config.read_queue_nums, config.write_queue_nums) == (TOPIC, 3, 3)


async def test_a_topic_named_like_a_system_topic_is_refused(parts: BrokerParts) -> None:
    answer = await call(create_topic(parts), create_topic_request("TBW102"))
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == "The topic[TBW102] is conflict with system topic."


async def test_a_slave_takes_no_topic_change(tmp_path: Path) -> None:
    async with open_parts(tmp_path / "store", broker_role="SLAVE", broker_id=1) as parts:
        answer = await call(create_topic(parts), create_topic_request(TOPIC))
        assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, SLAVE_REFUSAL)
        assert TOPIC not in parts.metadata.topics


async def test_a_deleted_topic_leaves_the_table_and_the_store(parts: BrokerParts) -> None:
    topics: TopicConfigManager = parts.metadata.topics
    topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=1, write_queue_nums=1))
    delete = DeleteTopicProcessor(config=parts.config, topics=topics, store=parts.storage.store)
    header = DeleteTopicRequestHeader(topic=TOPIC)
    answer = await call(delete, wire_request(RequestCode.DELETE_TOPIC_IN_BROKER, header))
    assert answer.code == ResponseCode.SUCCESS
    assert TOPIC not in topics
    assert TOPIC not in parts.storage.store.topics()


async def test_topic_stats_list_every_write_queue(parts: BrokerParts) -> None:
    parts.metadata.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=2, write_queue_nums=2))
    stats = GetTopicStatsInfoProcessor(
        config=parts.config, topics=parts.metadata.topics, store=parts.storage.store
    )
    header = GetTopicStatsInfoRequestHeader(topic=TOPIC)
    answer = await call(stats, wire_request(RequestCode.GET_TOPIC_STATS_INFO, header))
    table = TopicStatsTable.from_json(answer.body).offset_table
    assert sorted(queue.queue_id for queue in table) == [0, 1]
    missing = await call(
        stats, wire_request(RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic="Nowhere"))
    )
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST


# -- subscription groups -----------------------------------------------------------------------------------


async def test_a_group_is_created_then_deleted_with_its_offsets(parts: BrokerParts) -> None:
    groups, offsets = parts.metadata.groups, parts.metadata.offsets
    create = UpdateAndCreateSubscriptionGroupProcessor(config=parts.config, groups=groups, stats=parts.stats)
    body = GroupConfigBody(group_name="AdminGroup", retry_max_times=3).to_json()
    answer = await call(create, wire_request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body))
    assert answer.code == ResponseCode.SUCCESS
    found = groups.find("AdminGroup")
    assert found is not None and found.retry_max_times == 3

    offsets.commit_offset("AdminGroup", TOPIC, 0, 7)
    delete = DeleteSubscriptionGroupProcessor(config=parts.config, groups=groups, offsets=offsets)
    header = DeleteSubscriptionGroupRequestHeader(group_name="AdminGroup", remove_offset=True)
    answer = await call(delete, wire_request(RequestCode.DELETE_SUBSCRIPTIONGROUP, header))
    assert answer.code == ResponseCode.SUCCESS
    assert "AdminGroup" not in groups.groups()
    assert offsets.query_offset("AdminGroup", TOPIC, 0) == -1


async def test_one_groups_config_is_read_and_an_unknown_one_created_or_refused(parts: BrokerParts) -> None:
    """GET_SUBSCRIPTIONGROUP_CONFIG, which Apache's Proxy asks for each consumer group it serves."""
    groups = parts.metadata.groups
    groups.put(BrokerGroupConfig(group_name="Known", retry_max_times=5, consume_broadcast_enable=False))
    read = GetSubscriptionGroupConfigProcessor(groups=groups)

    async def ask(group: str) -> RemotingCommand:
        header = GetSubscriptionGroupConfigRequestHeader(group=group)
        return await call(read, wire_request(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, header))

    known = await ask("Known")
    body = GroupConfigBody.from_json(known.body)
    assert known.code == ResponseCode.SUCCESS
    assert (body.group_name, body.retry_max_times, body.consume_broadcast_enable) == ("Known", 5, False)
    created = await ask("Fresh")  # autoCreateSubscriptionGroup is on, as Apache's default
    assert created.code == ResponseCode.SUCCESS and "Fresh" in groups.groups()
    groups.auto_create = False
    refused = await ask("Unknown")
    assert (refused.code, refused.remark) == (
        ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
        "No group in this broker",
    )


async def test_cloning_copies_a_groups_offsets_on_a_topic(parts: BrokerParts) -> None:
    topics, offsets = parts.metadata.topics, parts.metadata.offsets
    topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=2, write_queue_nums=2))
    offsets.commit_offset("Source", TOPIC, 0, 5)
    offsets.commit_offset("Source", TOPIC, 1, 9)
    clone = CloneGroupOffsetProcessor(topics=topics, offsets=offsets, consumers=parts.clients.consumers)
    header = CloneGroupOffsetRequestHeader(src_group="Source", dest_group="Copy", topic=TOPIC, offline=True)
    answer = await call(clone, wire_request(RequestCode.CLONE_GROUP_OFFSET, header))
    assert answer.code == ResponseCode.SUCCESS
    assert offsets.offsets("Copy", TOPIC) == {0: 5, 1: 9}
