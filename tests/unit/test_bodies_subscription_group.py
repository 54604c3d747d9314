"""The subscription-group bodies and headers: Java's field names and order, Java's defaults when a field is
missing, and the request frames the group commands send."""

from __future__ import annotations

import pytest

from rocketmq_wire import CodecError, RemotingCommand, RequestCode
from rocketmq_wire.bodies import (
    ConsumeStats,
    ConsumeStatsList,
    MessageQueue,
    OffsetWrapper,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    decode_request_body,
    decode_response_body,
)
from rocketmq_wire.headers import header_for_request
from rocketmq_wire.headers.admin import (
    CloneGroupOffsetRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsInBrokerHeader,
)


def test_group_config_is_written_as_fastjson_writes_the_4_9_bean() -> None:
    config = SubscriptionGroupConfig(group_name="G", retry_max_times=3, which_broker_when_consume_slowly=2)
    assert config.to_json() == (
        b'{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,'
        b'"groupName":"G","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":3,"retryQueueNums":1,'
        b'"whichBrokerWhenConsumeSlowly":2}'
    )
    assert (
        decode_request_body(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, config.to_json(), {}) == config
    )


def test_missing_fields_keep_java_defaults_and_a_nameless_group_is_refused() -> None:
    # a 5.x broker adds fields 4.x lacks; they are ignored, missing ones keep Java's initial values
    parsed = SubscriptionGroupConfig.from_json(
        b'{"groupName":"G","consumeEnable":false,"groupRetryPolicy":{}}'
    )
    assert parsed == SubscriptionGroupConfig(group_name="G", consume_enable=False)
    with pytest.raises(CodecError, match="groupName"):
        SubscriptionGroupConfig.from_json(b'{"consumeEnable":true}')


def test_group_table_of_a_broker() -> None:
    body = (
        b'{"dataVersion":{"counter":3,"timestamp":1700000000000},"subscriptionGroupTable":'
        b'{"A":{"groupName":"A","retryMaxTimes":5},"B":{"groupName":"B","brokerId":1}}}'
    )
    wrapper = decode_response_body(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, body)
    assert isinstance(wrapper, SubscriptionGroupWrapper)
    assert wrapper.subscription_group_table == {
        "A": SubscriptionGroupConfig(group_name="A", retry_max_times=5),
        "B": SubscriptionGroupConfig(group_name="B", broker_id=1),
    }
    assert wrapper.data_version is not None and wrapper.data_version.counter == 3


def test_consume_stats_list_round_trip() -> None:
    queue = MessageQueue(topic="T", broker_name="broker-a", queue_id=0)
    stats = ConsumeStats(offset_table={queue: OffsetWrapper(broker_offset=9, consumer_offset=4)})
    body = ConsumeStatsList(consume_stats_list=[{"G": [stats]}], broker_addr="127.0.0.1:10911", total_diff=5)
    encoded = body.to_json()
    assert encoded.startswith(b'{"brokerAddr":"127.0.0.1:10911","consumeStatsList":[{"G":[{"consumeTps":0.0,')
    assert encoded.endswith(b'"totalDiff":5}')
    again = decode_response_body(RequestCode.GET_BROKER_CONSUME_STATS, encoded)
    assert isinstance(again, ConsumeStatsList)
    assert again.total_diff == 5 and again.broker_addr == "127.0.0.1:10911"
    [[(group, [back])]] = [list(entry.items()) for entry in again.consume_stats_list]
    assert group == "G" and back.offset_table == {queue: OffsetWrapper(broker_offset=9, consumer_offset=4)}
    with pytest.raises(CodecError):
        ConsumeStatsList.from_json(b'{"consumeStatsList":[{"G":{}}]}')


def test_group_request_headers() -> None:
    assert header_for_request(RequestCode.DELETE_SUBSCRIPTIONGROUP) is DeleteSubscriptionGroupRequestHeader
    assert header_for_request(RequestCode.CLONE_GROUP_OFFSET) is CloneGroupOffsetRequestHeader
    assert header_for_request(RequestCode.GET_BROKER_CONSUME_STATS) is GetConsumeStatsInBrokerHeader
    delete = RemotingCommand.request(
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        DeleteSubscriptionGroupRequestHeader(group_name="G", remove_offset=True),
    )
    assert delete.fields() == {"groupName": "G", "removeOffset": "true"}
    stats = RemotingCommand.request(
        RequestCode.GET_BROKER_CONSUME_STATS, GetConsumeStatsInBrokerHeader(is_order=False)
    )
    assert stats.fields() == {"isOrder": "false"}
    clone = CloneGroupOffsetRequestHeader.from_ext({"srcGroup": "A", "destGroup": "B"})
    assert (clone.src_group, clone.dest_group, clone.topic, clone.offline) == ("A", "B", None, None)
    with pytest.raises(CodecError):
        GetConsumeStatsInBrokerHeader.from_ext({})
