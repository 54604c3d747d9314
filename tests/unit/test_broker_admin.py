"""Admin requests: topics, topic stats, broker runtime info and settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import Broker
from broker.config import BrokerConfig, parse_delay_levels, parse_properties
from broker.store import TopicConfigStore
from broker.testing import BrokerClient, running_broker
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RequestCode, ResponseCode
from rocketmq_wire.bodies.consumer import ConsumerOffsetSerializeWrapper
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.bodies.stats import TopicStatsTable
from rocketmq_wire.bodies.topic_config import (
    TopicConfig,
    TopicConfigAndQueueMapping,
    TopicConfigSerializeWrapper,
)
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.headers.admin import GetBrokerConfigResponseHeader
from rocketmq_wire.headers.topic import (
    DeleteTopicRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
)

#: The keys ``mqadmin brokerStatus`` printed for a 4.9.8 broker in the captured run.
BROKER_STATUS_KEYS = set(
    """
    EndTransactionQueueSize EndTransactionThreadPoolQueueCapacity bootTimestamp brokerVersion
    brokerVersionDesc commitLogDirCapacity commitLogDiskRatio commitLogMaxOffset commitLogMinOffset
    consumeQueueDiskRatio dispatchBehindBytes dispatchMaxBuffer earliestMessageTimeStamp getFoundTps
    getMessageEntireTimeMax getMissTps getTotalTps getTransferedTps msgGetTotalTodayMorning
    msgGetTotalTodayNow msgGetTotalYesterdayMorning msgPutTotalTodayMorning msgPutTotalTodayNow
    msgPutTotalYesterdayMorning pageCacheLockTimeMills pullThreadPoolQueueCapacity
    pullThreadPoolQueueHeadWaitTimeMills pullThreadPoolQueueSize putLatency99 putLatency999
    putMessageAverageSize putMessageDistributeTime putMessageEntireTimeMax putMessageFailedTimes
    putMessageSizeTotal putMessageTimesTotal putTps queryThreadPoolQueueCapacity
    queryThreadPoolQueueHeadWaitTimeMills queryThreadPoolQueueSize remainHowManyDataToFlush
    remainTransientStoreBufferNumbs runtime sendThreadPoolQueueCapacity
    sendThreadPoolQueueHeadWaitTimeMills sendThreadPoolQueueSize startAcceptSendRequestTimeStamp
    """.split()
)


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with running_broker(tmp_path / "store") as running:
        yield running


@pytest.fixture
async def client(broker: Broker) -> AsyncIterator[BrokerClient]:
    async with BrokerClient(broker.address) as connected:
        yield connected


async def test_system_topics_exist_like_apache(broker: Broker, client: BrokerClient) -> None:
    answer = await client.request(RequestCode.GET_ALL_TOPIC_CONFIG)
    assert answer.code == ResponseCode.SUCCESS
    table = TopicConfigSerializeWrapper.from_json(answer.body).topic_config_table
    assert {
        "TBW102", "SELF_TEST_TOPIC", "BenchmarkTest", "OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX",
        "DefaultCluster", "DefaultCluster_REPLY_TOPIC", "broker-a", "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC", "rmq_sys_wheel_timer",
    } <= set(table)  # fmt: skip
    assert (table["TBW102"].read_queue_nums, table["TBW102"].perm) == (8, 7)
    assert (table["SCHEDULE_TOPIC_XXXX"].write_queue_nums, table["DefaultCluster"].perm) == (18, 7)


async def test_create_update_and_delete_a_topic(broker: Broker, client: BrokerClient) -> None:
    version = broker.topic_config_manager.data_version().counter
    created = await client.create_topic("Admin", 3)
    assert created.code == ResponseCode.SUCCESS and created.remark == "not set any response code"
    assert broker.topic_config_manager.data_version().counter > version
    config = await client.request(RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic="Admin"))
    body = TopicConfigAndQueueMapping.from_json(config.body)
    assert (body.read_queue_nums, body.write_queue_nums, body.perm) == (3, 3, 6)
    updated = await client.create_topic("Admin", 5, perm=4)
    assert updated.code == ResponseCode.SUCCESS
    selected = broker.topic_config_manager.select("Admin")
    assert selected is not None and (selected.write_queue_nums, selected.perm) == (5, 4)
    system = await client.create_topic("SCHEDULE_TOPIC_XXXX", 1)
    assert system.code == ResponseCode.SYSTEM_ERROR
    assert system.remark == "The topic[SCHEDULE_TOPIC_XXXX] is conflict with system topic."

    await client.send("Admin", b"doomed", queue_id=0)
    deleted = await client.request(
        RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic="Admin")
    )
    assert deleted.code == ResponseCode.SUCCESS and deleted.remark is None
    assert not broker.topic_exists("Admin")
    assert broker.store.get_max_offset("Admin", 0) == 0
    missing = await client.request(RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic="Admin"))
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST


async def test_topic_stats_cover_every_write_queue(client: BrokerClient) -> None:
    await client.create_topic("Counted", 2)
    await client.send("Counted", b"a", queue_id=1)
    await client.send("Counted", b"b", queue_id=1)
    answer = await client.request(
        RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic="Counted")
    )
    offsets = {
        queue.queue_id: offset
        for queue, offset in TopicStatsTable.from_json(answer.body).offset_table.items()
    }
    assert offsets[0].max_offset == 0 and offsets[0].last_update_timestamp == 0
    assert offsets[1].max_offset == 2 and offsets[1].last_update_timestamp > 0
    missing = await client.request(
        RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic="Nope")
    )
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST and missing.remark == "topic[Nope] not exist"


async def test_runtime_info_has_the_keys_broker_status_prints(client: BrokerClient) -> None:
    await client.send("Counted", b"a", queue_id=0)
    answer = await client.request(RequestCode.GET_BROKER_RUNTIME_INFO)
    table = KVTable.from_json(answer.body).table
    assert set(table) >= BROKER_STATUS_KEYS
    assert table["brokerVersionDesc"] == "V5_3_3" and table["brokerVersion"] == str(MQVersion.V5_3_3)
    assert table["putMessageTimesTotal"] == "1" and table["msgPutTotalTodayNow"] == "1"
    assert int(table["commitLogMaxOffset"]) > 0 and table["commitLogMinOffset"] == "0"
    assert table["runtime"].startswith("[ 0 days, 0 hours")


async def test_broker_config_reads_and_updates_under_java_names(broker: Broker, client: BrokerClient) -> None:
    answer = await client.request(RequestCode.GET_BROKER_CONFIG)
    assert answer.code == ResponseCode.SUCCESS
    version = answer.read_header(GetBrokerConfigResponseHeader).version or ""
    assert version.startswith('{"counter":0,"timestamp":')
    settings = parse_properties(answer.body.decode())
    assert settings["brokerName"] == "broker-a" and settings["defaultTopicQueueNums"] == "8"
    assert settings["messageDelayLevel"] == "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    assert settings["maxMessageSize"] == "4194304" and settings["autoCreateTopicEnable"] == "true"

    update = await client.request(
        RequestCode.UPDATE_BROKER_CONFIG, body=b"autoCreateTopicEnable=false\nnoSuchKey=1\n"
    )
    assert update.code == ResponseCode.SUCCESS
    assert broker.config.auto_create_topic_enable is False
    assert (await client.send("AfterUpdate", b"x")).code == ResponseCode.TOPIC_NOT_EXIST
    again = await client.request(RequestCode.GET_BROKER_CONFIG)
    assert (again.read_header(GetBrokerConfigResponseHeader).version or "").startswith('{"counter":1,')

    refused = await client.request(RequestCode.UPDATE_BROKER_CONFIG, body=b"configBlackList=\n")
    assert (
        refused.code == ResponseCode.NO_PERMISSION
        and refused.remark == "Can not update config in black list."
    )


async def test_whole_offset_tables_for_admin_tools(client: BrokerClient) -> None:
    await client.create_topic("Tracked", 2)
    await client.send("Tracked", b"x", queue_id=1)
    await client.pull("Readers", "Tracked", 1, 1, commit_offset=1)
    answer = await client.request(RequestCode.GET_ALL_CONSUMER_OFFSET)
    offsets = ConsumerOffsetSerializeWrapper.from_json(answer.body).offset_table
    assert offsets["Tracked@Readers"] == {1: 1}
    delays = await client.request(RequestCode.GET_ALL_DELAY_OFFSET)
    assert delays.code == ResponseCode.SUCCESS and delays.body == b'{"offsetTable":{}}'


def test_config_properties_round_trip_and_delay_levels(tmp_path: Path) -> None:
    config = BrokerConfig(store_path_root_dir=str(tmp_path), namesrv_addr="a:1;b:2")
    text = config.to_properties()
    again = BrokerConfig.from_properties(text)
    assert again == config
    assert config.namesrv_addrs == ["a:1", "b:2"]
    assert parse_delay_levels("1s 5s 1m 2h 1d") == [1000, 5000, 60_000, 7_200_000, 86_400_000]
    with pytest.raises(ValueError):
        parse_delay_levels("1s 5x")
    assert config.update({"brokerId": "x", "listenPort": "123"}) == ["listenPort"]  # bad value skipped
    store = config.store_config()
    assert store.max_message_size == 4 * 1024 * 1024 and store.consume_queue_entries_per_file == 300_000
    assert parse_properties("# comment\n a = 1\nb:2\n\nc 3\n") == {"a": "1", "b": "2", "c": "3"}


def test_the_shared_topic_config_is_one_object_until_the_topic_changes(tmp_path: Path) -> None:
    """Sends and pulls read a topic's config per message; it is converted again only after a change."""
    manager = TopicConfigManager(BrokerConfig(store_path_root_dir=str(tmp_path)), TopicConfigStore(tmp_path))
    assert manager.select_shared("Shared") is None
    manager.update(TopicConfig(topic_name="Shared", read_queue_nums=4, write_queue_nums=4, perm=6))
    first = manager.select_shared("Shared")
    assert first is not None and first.write_queue_nums == 4
    assert manager.select_shared("Shared") is first
    assert manager.select("Shared") == first and manager.select("Shared") is not first
    manager.update(TopicConfig(topic_name="Shared", read_queue_nums=8, write_queue_nums=8, perm=4))
    changed = manager.select_shared("Shared")
    assert changed is not first and changed is not None
    assert (changed.write_queue_nums, changed.perm, first.write_queue_nums) == (8, 4, 4)
    assert manager.delete("Shared")
    assert manager.select_shared("Shared") is None


async def test_every_answer_carries_the_release_the_broker_answers_as(tmp_path: Path) -> None:
    """Clients read a broker's features off the ``version`` of its answers (Apache's brokers send their own
    release there): the project's broker answers as 5.3.3, also where it refuses."""
    async with running_broker(tmp_path / "store") as broker, BrokerClient(broker.address) as client:
        ok = await client.request(RequestCode.GET_BROKER_RUNTIME_INFO)
        refused = await client.request(999_999)
    assert ok.code == ResponseCode.SUCCESS and ok.version == MQVersion.V5_3_3
    assert refused.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED and refused.version == MQVersion.V5_3_3
