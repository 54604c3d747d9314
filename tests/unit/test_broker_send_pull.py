"""A broker on a temporary store, driven over loopback: sending, pulling, offsets, lookups, bad input."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import Broker
from broker.testing import BrokerClient, message_properties, running_broker
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.headers.offset import (
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_wire.headers.pull import PullMessageRequestHeader
from rocketmq_wire.headers.query import QueryMessageRequestHeader, ViewMessageRequestHeader
from rocketmq_wire.headers.topic import CreateTopicRequestHeader
from rocketmq_wire.message import decode_messages, sysflag
from rocketmq_wire.message.ids import decode_offset_msg_id


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with running_broker(tmp_path / "store") as running:
        yield running


@pytest.fixture
async def client(broker: Broker) -> AsyncIterator[BrokerClient]:
    async with BrokerClient(broker.address) as connected:
        yield connected


async def test_send_v2_then_pull_returns_body_properties_and_offsets(
    broker: Broker, client: BrokerClient
) -> None:
    properties = message_properties("TagA", ["k1", "k2"], {"color": "blue", "unicode": "你好-é"})
    sent = await client.send("Orders", b"hello", queue_id=1, properties=properties)
    assert sent.code == ResponseCode.SUCCESS
    fields = sent.fields()
    assert fields["queueId"] == "1" and fields["queueOffset"] == "0"
    assert fields["MSG_REGION"] == "DefaultRegion" and fields["TRACE_ON"] == "true"
    offset_id = decode_offset_msg_id(fields["msgId"])
    assert offset_id.address == broker.address and offset_id.offset == 0

    pulled = await client.pull("g1", "Orders", 1, 0)
    assert pulled.code == ResponseCode.SUCCESS and pulled.remark == "FOUND"
    assert pulled.fields()["nextBeginOffset"] == "1"
    assert pulled.fields()["minOffset"] == "0" and pulled.fields()["maxOffset"] == "1"
    [message] = decode_messages(pulled.body)
    assert message.body == b"hello"
    assert message.tags == "TagA" and message.keys == ["k1", "k2"]
    assert message.properties["color"] == "blue" and message.properties["unicode"] == "你好-é"
    assert message.properties["CLUSTER"] == "DefaultCluster"
    assert "WAIT" not in message.properties  # not stored, as Apache 4.9 drops it
    assert message.store_host == broker.address and message.queue_offset == 0
    assert message.unique_id == fields["transactionId"]


async def test_v1_send_from_a_cpp_style_header_is_stored_too(client: BrokerClient) -> None:
    sent = await client.send("Orders", b"from v1", queue_id=2, tags="Cpp", v1=True)
    assert sent.code == ResponseCode.SUCCESS and sent.fields()["queueId"] == "2"
    [message] = decode_messages((await client.pull("g1", "Orders", 2, 0)).body)
    assert message.body == b"from v1" and message.tags == "Cpp"


async def test_offsets_grow_per_queue_and_new_topic_gets_min_of_client_and_default_queues(
    broker: Broker, client: BrokerClient
) -> None:
    for expected in range(3):
        sent = await client.send("Orders", b"x", queue_id=3)
        assert sent.fields()["queueOffset"] == str(expected)
    config = broker.topic_config_manager.select("Orders")
    assert config is not None and config.write_queue_nums == 4 and config.perm == 6


async def test_batch_is_stored_as_consecutive_messages_with_joined_ids(client: BrokerClient) -> None:
    entries = [(f"batch {i}".encode(), message_properties("Batch", [f"key-{i}"])) for i in range(3)]
    sent = await client.send_batch("Orders", entries, queue_id=0)
    assert sent.code == ResponseCode.SUCCESS
    assert sent.fields()["queueOffset"] == "0"
    ids = sent.fields()["msgId"].split(",")
    assert len(ids) == 3
    messages = decode_messages((await client.pull("g1", "Orders", 0, 0)).body)
    assert [m.body for m in messages] == [b"batch 0", b"batch 1", b"batch 2"]
    assert [m.queue_offset for m in messages] == [0, 1, 2]
    assert [m.keys for m in messages] == [["key-0"], ["key-1"], ["key-2"]]
    assert [m.msg_id for m in messages] == ids
    assert all(m.properties["CLUSTER"] == "DefaultCluster" for m in messages)


async def test_tag_filtering_by_subscription(client: BrokerClient) -> None:
    for tags in ("TagA", "TagB", None, "TagC", "TagA"):
        await client.send("Tagged", b"m", queue_id=0, tags=tags)
    only_a = decode_messages((await client.pull("g1", "Tagged", 0, 0, subscription="TagA")).body)
    assert [m.queue_offset for m in only_a] == [0, 4]
    a_or_c = decode_messages((await client.pull("g1", "Tagged", 0, 0, subscription="TagA || TagC")).body)
    assert [m.tags for m in a_or_c] == ["TagA", "TagC", "TagA"]
    nothing = await client.pull("g1", "Tagged", 0, 0, subscription="TagZ")
    assert nothing.code == ResponseCode.PULL_RETRY_IMMEDIATELY and nothing.remark == "NO_MATCHED_MESSAGE"
    assert nothing.fields()["nextBeginOffset"] == "5"


async def test_pull_statuses_follow_apache(client: BrokerClient) -> None:
    await client.send("Orders", b"one", queue_id=0)
    caught_up = await client.pull("g1", "Orders", 0, 1)
    assert caught_up.code == ResponseCode.PULL_NOT_FOUND and caught_up.remark == "OFFSET_OVERFLOW_ONE"
    assert caught_up.fields()["nextBeginOffset"] == "1"
    beyond = await client.pull("g1", "Orders", 0, 7)
    assert beyond.code == ResponseCode.PULL_OFFSET_MOVED and beyond.remark == "OFFSET_OVERFLOW_BADLY"
    assert beyond.fields()["nextBeginOffset"] == "1"
    empty_queue = await client.pull("g1", "Orders", 1, 0)
    assert empty_queue.code == ResponseCode.PULL_NOT_FOUND
    moved = await client.pull("g1", "Orders", 1, 5)
    assert moved.code == ResponseCode.PULL_OFFSET_MOVED
    missing = await client.pull("g1", "NoSuchTopic", 0, 0)
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST
    assert missing.remark is not None and missing.remark.startswith(
        "topic[NoSuchTopic] not exist, apply first please!"
    )
    bad_queue = await client.pull("g1", "Orders", 9, 0)
    assert bad_queue.code == ResponseCode.SYSTEM_ERROR and "queueId[9] is illegal" in (bad_queue.remark or "")


async def test_pull_without_subscription_needs_the_group_heartbeat(client: BrokerClient) -> None:
    await client.send("Orders", b"one", queue_id=0)
    unknown = await client.pull("g1", "Orders", 0, 0, subscription=None)
    assert unknown.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    await client.heartbeat("c1", consumer_groups={"g1": {"Orders": "*"}})
    known = await client.pull("g1", "Orders", 0, 0, subscription=None)
    assert known.code == ResponseCode.SUCCESS
    stale = await client.pull("g1", "Orders", 0, 0, subscription=None, sub_version=99)
    assert stale.code == ResponseCode.SUBSCRIPTION_NOT_LATEST


async def test_pull_commit_offset_flag_and_offset_requests(client: BrokerClient) -> None:
    await client.send("Orders", b"one", queue_id=0)
    query = QueryConsumerOffsetRequestHeader(consumer_group="g1", topic="Orders", queue_id=0)
    first = await client.request(RequestCode.QUERY_CONSUMER_OFFSET, query)
    assert first.code == ResponseCode.SUCCESS and first.fields() == {"offset": "0"}
    await client.pull("g1", "Orders", 0, 1, commit_offset=1)
    assert (await client.request(RequestCode.QUERY_CONSUMER_OFFSET, query)).fields() == {"offset": "1"}
    update = UpdateConsumerOffsetRequestHeader(
        consumer_group="g1", topic="Orders", queue_id=0, commit_offset=42
    )
    updated = await client.request(RequestCode.UPDATE_CONSUMER_OFFSET, update)
    assert updated.code == ResponseCode.SUCCESS and updated.fields() == {}
    assert (await client.request(RequestCode.QUERY_CONSUMER_OFFSET, query)).fields() == {"offset": "42"}
    strict = QueryConsumerOffsetRequestHeader(
        consumer_group="other", topic="Orders", queue_id=0, set_zero_if_not_found=False
    )
    assert (
        await client.request(RequestCode.QUERY_CONSUMER_OFFSET, strict)
    ).code == ResponseCode.QUERY_NOT_FOUND


async def test_queue_bounds_time_search_and_earliest_store_time(broker: Broker, client: BrokerClient) -> None:
    for _ in range(3):
        await client.send("Orders", b"x", queue_id=0)
    low = await client.request(
        RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic="Orders", queue_id=0)
    )
    high = await client.request(
        RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic="Orders", queue_id=0)
    )
    assert low.fields() == {"offset": "0"} and high.fields() == {"offset": "3"}
    earliest = await client.request(
        RequestCode.GET_EARLIEST_MSG_STORETIME,
        GetEarliestMsgStoretimeRequestHeader(topic="Orders", queue_id=0),
    )
    stored_at = int(earliest.fields()["timestamp"])
    assert stored_at > 0
    found = await client.request(
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
        SearchOffsetRequestHeader(topic="Orders", queue_id=0, timestamp=stored_at),
    )
    assert found.fields() == {"offset": "0"}
    later = await client.request(
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
        SearchOffsetRequestHeader(topic="Orders", queue_id=0, timestamp=stored_at + 10**9),
    )
    assert later.fields() == {"offset": "3"}


async def test_view_by_offset_id_and_query_by_key_and_unique_key(client: BrokerClient) -> None:
    sent = await client.send("Orders", b"findable", queue_id=0, tags="T", keys=["order-7"])
    offset = decode_offset_msg_id(sent.fields()["msgId"]).offset
    viewed = await client.request(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=offset))
    assert viewed.code == ResponseCode.SUCCESS and decode_messages(viewed.body)[0].body == b"findable"
    gone = await client.request(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=offset + 3))
    assert (
        gone.code == ResponseCode.SYSTEM_ERROR
        and gone.remark == f"can not find message by the offset, {offset + 3}"
    )

    def query(key: str, unique: bool) -> RemotingCommand:
        header = QueryMessageRequestHeader(
            topic="Orders", key=key, max_num=32, begin_timestamp=0, end_timestamp=2**62
        )
        return RemotingCommand.request(
            RequestCode.QUERY_MESSAGE, header, ext_fields={"_UNIQUE_KEY_QUERY": "true" if unique else "false"}
        )

    by_key = await client.client.invoke(client.address, query("order-7", False), 3000)
    assert by_key.code == ResponseCode.SUCCESS
    assert set(by_key.fields()) == {"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"}
    assert decode_messages(by_key.body)[0].body == b"findable"
    by_unique = await client.client.invoke(client.address, query(sent.fields()["transactionId"], True), 3000)
    assert decode_messages(by_unique.body)[0].keys == ["order-7"]
    missing = await client.client.invoke(client.address, query("nope", False), 3000)
    assert missing.code == ResponseCode.QUERY_NOT_FOUND
    assert missing.remark == "can not find message, maybe time range not correct"


async def test_send_refusals_use_apache_codes_and_remarks(tmp_path: Path) -> None:
    async with (
        running_broker(tmp_path / "store", auto_create_topic_enable=False, max_message_size=1024) as broker,
        BrokerClient(broker.address) as client,
    ):
        unknown = await client.send("Fresh", b"x")
        assert unknown.code == ResponseCode.TOPIC_NOT_EXIST
        assert unknown.remark == (
            "topic[Fresh] not exist, apply first please!\n"
            "See http://rocketmq.apache.org/docs/faq/ for further details."
        )
        assert unknown.fields() == {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
        system = await client.send("SCHEDULE_TOPIC_XXXX", b"x")
        assert system.code == ResponseCode.NO_PERMISSION
        assert system.remark == "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."
        illegal = await client.send("bad topic!", b"x")
        assert illegal.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in (illegal.remark or "")
        await client.request(RequestCode.UPDATE_AND_CREATE_TOPIC, _create_topic("Small", 2))
        too_big = await client.send("Small", b"x" * 4096)
        assert too_big.code == ResponseCode.MESSAGE_ILLEGAL
        assert (too_big.remark or "").startswith("the message is illegal")
        bad_queue = await client.send("Small", b"x", queue_id=5)
        assert bad_queue.code == ResponseCode.SYSTEM_ERROR
        assert (bad_queue.remark or "").startswith(
            "request queueId[5] is illegal, TopicConfig [topicName=Small"
        )
        assert (await client.send("Small", b"fits")).code == ResponseCode.SUCCESS


async def test_a_header_missing_a_required_field_is_answered_not_crashed(client: BrokerClient) -> None:
    broken = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext_fields={"a": "group", "c": "TBW102"})
    answer = await client.client.invoke(client.address, broken, 3000)
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == (
        "org.apache.rocketmq.remoting.exception.RemotingCommandException: the custom field <b> is null"
    )
    garbage = RemotingCommand.request(
        RequestCode.PULL_MESSAGE, ext_fields={"consumerGroup": "g", "queueId": "x"}
    )
    assert (await client.client.invoke(client.address, garbage, 3000)).code == ResponseCode.SYSTEM_ERROR
    unknown = await client.client.invoke(client.address, RemotingCommand.request(9999), 3000)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    # the connection survived all of it
    assert (await client.send("Orders", b"still fine")).code == ResponseCode.SUCCESS


async def test_messages_survive_a_restart(tmp_path: Path) -> None:
    async with running_broker(tmp_path / "store") as broker, BrokerClient(broker.address) as client:
        await client.send("Durable", b"kept", queue_id=0)
        await client.pull("g1", "Durable", 0, 1, commit_offset=1)
    async with running_broker(tmp_path / "store") as broker, BrokerClient(broker.address) as client:
        assert broker.topic_exists("Durable")
        [message] = decode_messages((await client.pull("g1", "Durable", 0, 0)).body)
        assert message.body == b"kept"
        query = QueryConsumerOffsetRequestHeader(consumer_group="g1", topic="Durable", queue_id=0)
        assert (await client.request(RequestCode.QUERY_CONSUMER_OFFSET, query)).fields() == {"offset": "1"}


def _create_topic(name: str, queues: int) -> CreateTopicRequestHeader:
    return CreateTopicRequestHeader(
        topic=name,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        order=False,
    )


async def test_lite_pull_is_served_like_a_pull(client: BrokerClient) -> None:
    await client.send("Orders", b"lite", queue_id=0)
    header = PullMessageRequestHeader(
        consumer_group="lite",
        topic="Orders",
        queue_id=0,
        queue_offset=0,
        max_msg_nums=8,
        sys_flag=sysflag.build_pull_sys_flag(subscription=True, lite_pull=True),
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    answer = await client.request(RequestCode.LITE_PULL_MESSAGE, header)
    assert answer.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_messages(answer.body)] == [b"lite"]


async def test_sql92_subscriptions_are_refused_as_apache_does_by_default(client: BrokerClient) -> None:
    await client.send("Orders", b"x", queue_id=0)

    def pull(expression: str) -> PullMessageRequestHeader:
        return PullMessageRequestHeader(
            consumer_group="sql",
            topic="Orders",
            queue_id=0,
            queue_offset=0,
            max_msg_nums=8,
            sys_flag=sysflag.build_pull_sys_flag(subscription=True),
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription=expression,
            sub_version=0,
            expression_type="SQL92",
        )

    refused = await client.request(RequestCode.PULL_MESSAGE, pull("a > 5"))
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert refused.remark == "The broker does not support consumer to filter message by SQL92"
    unparsable = await client.request(RequestCode.PULL_MESSAGE, pull(""))
    assert unparsable.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
