"""Typed bodies built in Python: the exact JSON Java would write, reading it back, and malformed input."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_wire.bodies import (
    BrokerData,
    CheckClientRequestBody,
    ClusterInfo,
    ConsumerConnection,
    ConsumerData,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    DataVersion,
    GroupList,
    HeartbeatData,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    OffsetWrapper,
    ProducerData,
    QueueData,
    RegisterBrokerBody,
    ResetOffsetBody,
    SubscriptionData,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicOffset,
    TopicQueueMappingDetail,
    TopicQueueMappingInfo,
    TopicRouteData,
    TopicStatsTable,
)
from rocketmq_wire.bodies.consumer import Connection, OffsetSerializeWrapper, ProducerConnection
from rocketmq_wire.bodies.properties_text import PropertiesBody
from rocketmq_wire.bodies.registry import decode_request_body, decode_response_body
from rocketmq_wire.bodies.static_topic import LogicQueueMappingItem
from rocketmq_wire.bodies.subscription import build_subscription
from rocketmq_wire.errors import CodecError

# ---------------------------------------------------------------------------------------------- route


def _route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[QueueData(broker_name="broker-a", read_queue_nums=4, write_queue_nums=4, perm=6)],
        broker_datas=[
            BrokerData(
                cluster="DefaultCluster", broker_name="broker-a", broker_addrs={1: "10.0.0.2:10911", 16: "x"}
            )
        ],
    )


def test_route_plain_form_has_bare_keys_in_hash_map_order() -> None:
    # Long 16 lands in bucket 0 of the 16-slot HashMap, ahead of 1.
    assert _route().to_json() == (
        b'{"brokerDatas":[{"brokerAddrs":{16:"x",1:"10.0.0.2:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a",'
        b'"perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )


def test_route_standard_form_quotes_and_sorts_keys_and_escapes_non_ascii() -> None:
    route = _route()
    route.order_topic_conf = "broker-é:4"
    route.filter_server_table = {"b": ["2"], "a": ["1"]}
    assert route.to_json(standard_json=True) == (
        b'{"brokerDatas":[{"brokerAddrs":{"1":"10.0.0.2:10911","16":"x"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}],"filterServerTable":{"a":["1"],"b":["2"]},'
        b'"orderTopicConf":"broker-\\u00E9:4","queueDatas":[{"brokerName":"broker-a","perm":6,'
        b'"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )


def test_route_reads_both_dialects_to_the_same_value() -> None:
    route = _route()
    assert TopicRouteData.from_json(route.to_json()) == route
    assert TopicRouteData.from_json(route.to_json(standard_json=True)) == route
    assert route.broker_datas[0].master_addr() is None
    route.broker_datas[0].broker_addrs[0] = "m"
    assert route.broker_datas[0].master_addr() == "m"


def test_route_5x_fields_are_written_only_when_set() -> None:
    data = BrokerData(cluster="c", broker_name="b", broker_addrs={0: "a"}, enable_acting_master=False)
    assert (
        data.to_json() == b'{"brokerAddrs":{0:"a"},"brokerName":"b","cluster":"c","enableActingMaster":false}'
    )
    route = TopicRouteData(
        topic_queue_mapping_by_broker={
            "b": TopicQueueMappingInfo(
                topic="T", total_queues=2, bname="b", epoch=9, curr_id_map={1: 0, 0: 1}
            )
        }
    )
    assert route.to_json() == (
        b'{"brokerDatas":[],"filterServerTable":{},"queueDatas":[],"topicQueueMappingByBroker":{"b":'
        b'{"bname":"b","currIdMap":{0:1,1:0},"dirty":false,"epoch":9,"scope":"__global__","topic":"T",'
        b'"totalQueues":2}}}'
    )
    assert TopicRouteData.from_json(route.to_json()) == route


# ---------------------------------------------------------------------------------------------- cluster


def test_cluster_info_exact_json_and_addresses() -> None:
    info = ClusterInfo(
        broker_addr_table={
            "broker-b": BrokerData(cluster="C", broker_name="broker-b", broker_addrs={0: "b:1"}),
            "broker-a": BrokerData(cluster="C", broker_name="broker-a", broker_addrs={0: "a:1", 1: "a:2"}),
        },
        cluster_addr_table={"C": ["broker-b", "broker-a"]},
    )
    # hashCode("broker-a") = 372697965, "broker-b" one more; spread, that is bucket 91 against 88 of the
    # 256-slot map and 11 against 8 of the 16-slot set, so "broker-b" comes first in both.
    assert info.to_json() == (
        b'{"brokerAddrTable":{"broker-b":{"brokerAddrs":{0:"b:1"},"brokerName":"broker-b","cluster":"C"},'
        b'"broker-a":{"brokerAddrs":{0:"a:1",1:"a:2"},"brokerName":"broker-a","cluster":"C"}},'
        b'"clusterAddrTable":{"C":["broker-b","broker-a"]}}'
    )
    swapped = ClusterInfo(
        broker_addr_table=dict(reversed(list(info.broker_addr_table.items()))),
        cluster_addr_table={"C": ["broker-a", "broker-b"]},
    )
    assert swapped.to_json() == info.to_json()
    assert ClusterInfo.from_json(info.to_json()) == info
    assert sorted(info.broker_addrs_of_cluster("C")) == ["a:1", "a:2", "b:1"]
    assert info.broker_addrs_of_cluster("nope") == []


# ---------------------------------------------------------------------------------------------- topics


def test_topic_config_4x_and_5x_json() -> None:
    config = TopicConfig(topic_name="T", read_queue_nums=8, write_queue_nums=8)
    assert config.to_json() == (
        b'{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T",'
        b'"topicSysFlag":0,"writeQueueNums":8}'
    )
    config.attributes = {"+message.type": "FIFO"}
    assert config.to_json().startswith(b'{"attributes":{"+message.type":"FIFO"},"order":false')
    assert TopicConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize(
    ("config", "with_attributes", "line", "attributes_read"),
    [
        (
            TopicConfig(topic_name="T", read_queue_nums=8, write_queue_nums=4, perm=7),
            False,
            "T 8 4 7 SINGLE_TAG",
            None,
        ),
        (TopicConfig(topic_name="T", attributes={}), True, "T 16 16 6 SINGLE_TAG {}", {}),
        (
            TopicConfig(topic_name="T", attributes={"a": "b"}),
            True,
            'T 16 16 6 SINGLE_TAG {"a":"b"}',
            {"a": "b"},
        ),
        # 5.x with no attribute map: a trailing separator, which String.split drops again.
        (TopicConfig(topic_name="T", topic_filter_type="MULTI_TAG"), True, "T 16 16 6 MULTI_TAG ", None),
    ],
)
def test_topic_config_line_encoding(
    config: TopicConfig, with_attributes: bool, line: str, attributes_read: dict[str, str] | None
) -> None:
    assert config.encode_line(with_attributes=with_attributes) == line
    decoded = TopicConfig.decode_line(line)
    assert (decoded.topic_name, decoded.read_queue_nums, decoded.write_queue_nums, decoded.perm) == (
        "T",
        config.read_queue_nums,
        config.write_queue_nums,
        config.perm,
    )
    assert decoded.topic_filter_type == config.topic_filter_type
    assert decoded.attributes == attributes_read


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("T 1 2 6", "at least 5"),
        ("T x 2 6 SINGLE_TAG", "'x' is not a Java int"),
        ("T 1 2147483648 6 SINGLE_TAG", "'2147483648' is not a Java int"),
        ("T 1 2 -2147483649 SINGLE_TAG", "'-2147483649' is not a Java int"),
        ("T 1 2 1_0 SINGLE_TAG", "'1_0' is not a Java int"),
        ("T 1 2 6 NO_SUCH", "unknown topic filter type"),
    ],
)
def test_bad_topic_config_line_raises(line: str, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        TopicConfig.decode_line(line)


def test_unparsable_attributes_in_a_line_are_ignored_as_java_does() -> None:
    assert TopicConfig.decode_line("T 1 1 6 SINGLE_TAG {broken").attributes == {}


def test_data_version_4x_and_5x() -> None:
    assert DataVersion(timestamp=5, counter=2).to_json() == b'{"counter":2,"timestamp":5}'
    assert DataVersion(timestamp=5, counter=2, state_version=0).to_json() == (
        b'{"counter":2,"stateVersion":0,"timestamp":5}'
    )


def test_4x_topic_table_iterates_a_2048_slot_table_and_5x_a_grown_copy() -> None:
    names = [f"topic-{i}" for i in range(14)]
    configs = {n: TopicConfig(topic_name=n) for n in names}
    old = TopicConfigSerializeWrapper(topic_config_table=configs, data_version=DataVersion(timestamp=1))
    new = TopicConfigAndMappingSerializeWrapper(
        topic_config_table=configs, data_version=DataVersion(timestamp=1)
    )
    old_order = list(TopicConfigSerializeWrapper.from_json(old.to_json()).topic_config_table)
    new_order = list(TopicConfigAndMappingSerializeWrapper.from_json(new.to_json()).topic_config_table)
    assert sorted(old_order) == sorted(new_order) == sorted(names)
    assert old_order != new_order
    # Given in any order, the same topics come out in the same order: it is computed from the names.
    reversed_configs = dict(reversed(list(configs.items())))
    table_only = TopicConfigSerializeWrapper(
        topic_config_table=reversed_configs, data_version=old.data_version
    )
    assert table_only.to_json() == old.to_json()


def test_topic_list() -> None:
    topics = TopicList(topic_list=["b", "a"], broker_addr="1.2.3.4:10911")
    assert topics.to_json() == b'{"brokerAddr":"1.2.3.4:10911","topicList":["a","b"]}'
    assert TopicList.from_json(topics.to_json()) == TopicList(
        topic_list=["a", "b"], broker_addr="1.2.3.4:10911"
    )


# ---------------------------------------------------------------------------------------------- register


def _register_body(wrapper_type: type[TopicConfigSerializeWrapper]) -> RegisterBrokerBody:
    configs = {
        "TopicA": TopicConfig(topic_name="TopicA", read_queue_nums=4, write_queue_nums=4, topic_sys_flag=0),
        "TopicB": TopicConfig(topic_name="TopicB", perm=7),
    }
    if wrapper_type is TopicConfigAndMappingSerializeWrapper:
        for config in configs.values():
            config.attributes = {}
        wrapper: TopicConfigSerializeWrapper = TopicConfigAndMappingSerializeWrapper(
            topic_config_table=configs,
            data_version=DataVersion(timestamp=1795315557527, counter=3, state_version=0),
            topic_queue_mapping_info_map={
                "TopicA": TopicQueueMappingInfo(topic="TopicA", bname="b", total_queues=4)
            },
        )
    else:
        wrapper = TopicConfigSerializeWrapper(
            topic_config_table=configs, data_version=DataVersion(timestamp=1795314036515, counter=3)
        )
    return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=["f:1"])


@pytest.mark.parametrize("wrapper_type", [TopicConfigSerializeWrapper, TopicConfigAndMappingSerializeWrapper])
def test_register_body_json_form_round_trips(wrapper_type: type[TopicConfigSerializeWrapper]) -> None:
    body = _register_body(wrapper_type)
    data = body.encode(compressed=False)
    assert data.startswith(b'{"filterServerList":["f:1"],"topicConfigSerializeWrapper":{"dataVersion":')
    decoded = RegisterBrokerBody.decode(data, compressed=False)
    assert type(decoded.topic_config_serialize_wrapper) is wrapper_type
    assert decoded == body
    assert decoded.encode(compressed=False) == data


@pytest.mark.parametrize("wrapper_type", [TopicConfigSerializeWrapper, TopicConfigAndMappingSerializeWrapper])
def test_register_body_compressed_form_layout_and_round_trip(
    wrapper_type: type[TopicConfigSerializeWrapper],
) -> None:
    body = _register_body(wrapper_type)
    data = body.encode(compressed=True)
    inflated = zlib.decompress(data)
    assert data[:2] == b"\x78\xda"  # zlib header of Deflater(BEST_COMPRESSION)
    # First part: the data version's JSON behind its big-endian length.
    (length,) = struct.unpack_from(">i", inflated, 0)
    assert inflated[4 : 4 + length] == body.topic_config_serialize_wrapper.data_version.to_json()
    (count,) = struct.unpack_from(">i", inflated, 4 + length)
    assert count == 2
    is_5x = wrapper_type is TopicConfigAndMappingSerializeWrapper
    expected_line = b"TopicB 16 16 7 SINGLE_TAG {}" if is_5x else b"TopicB 16 16 7 SINGLE_TAG"
    assert expected_line in inflated
    assert (
        inflated.endswith(
            b'{"bname":"b","currIdMap":{},"dirty":false,"epoch":0,"scope":"__global__",'
            b'"topic":"TopicA","totalQueues":4}'
        )
        == is_5x
    )
    decoded = RegisterBrokerBody.decode(data, compressed=True)
    assert type(decoded.topic_config_serialize_wrapper) is wrapper_type
    assert decoded.filter_server_list == ["f:1"]
    assert (
        decoded.topic_config_serialize_wrapper.data_version
        == body.topic_config_serialize_wrapper.data_version
    )
    assert (
        decoded.topic_config_serialize_wrapper.topic_config_table
        == body.topic_config_serialize_wrapper.topic_config_table
    )
    assert decoded.encode(compressed=True) == data


def test_compressed_form_drops_sys_flag_and_order_as_java_does() -> None:
    body = _register_body(TopicConfigSerializeWrapper)
    body.topic_config_serialize_wrapper.topic_config_table["TopicA"].order = True
    body.topic_config_serialize_wrapper.topic_config_table["TopicA"].topic_sys_flag = 3
    decoded = RegisterBrokerBody.decode(body.encode(compressed=True), compressed=True)
    topic = decoded.topic_config_serialize_wrapper.topic_config_table["TopicA"]
    assert (topic.order, topic.topic_sys_flag) == (False, 0)


def _deflate(payload: bytes) -> bytes:
    return zlib.compress(payload, 9)


def _part(blob: bytes) -> bytes:
    return struct.pack(">i", len(blob)) + blob


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not zlib at all", "does not inflate"),
        (_deflate(b"")[:-4], "truncated"),
        (_deflate(b"\x00\x00"), "ends inside the length of the data version"),
        (_deflate(struct.pack(">i", 50) + b"{}"), "needs 50 bytes"),
        (_deflate(struct.pack(">i", -1)), "negative length"),
        (_deflate(_part(b'{"counter":1}') + struct.pack(">i", 1) + _part(b"T 1")), "at least 5"),
        (_deflate(_part(b"[]")), "expected a JSON object"),
        (
            _deflate(_part(b"{}") + struct.pack(">i", 0) + _part(b"[]") + struct.pack(">i", 0) + b"x"),
            "after its last part",
        ),
    ],
)
def test_malformed_compressed_register_body_raises(data: bytes, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        RegisterBrokerBody.decode(data, compressed=True)


# ---------------------------------------------------------------------------------------------- heartbeat


def test_subscription_hash_matches_javas_formula() -> None:
    # 31-chain of 1237 (false), 0 (no codes), "*", 0 (no tags), "T", "TAG", worked out by hand.
    assert SubscriptionData(topic="T", sub_string="*").java_hash() == 1943361736


def test_heartbeat_json_sets_in_hash_order_identity_sets_as_given() -> None:
    tagged = SubscriptionData(
        topic="T", sub_string="b||a", tags_set=["b", "a"], code_set=[98, 97], sub_version=1
    )
    subs = [SubscriptionData(topic="%RETRY%G", sub_string="*", sub_version=2), tagged]
    heartbeat = HeartbeatData(
        client_id="c@1",
        producer_data_set=[ProducerData(group_name="P2"), ProducerData(group_name="P1")],
        consumer_data_set=[
            ConsumerData(
                group_name="G",
                consume_type="CONSUME_PASSIVELY",
                message_model="CLUSTERING",
                consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                subscription_data_set=subs,
            )
        ],
    )
    text = heartbeat.to_json()
    assert text.startswith(
        b'{"clientID":"c@1","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET"'
    )
    assert b'"tagsSet":["a","b"]' in text and b'"codeSet":[97,98]' in text
    assert text.endswith(b'"producerDataSet":[{"groupName":"P2"},{"groupName":"P1"}]}')
    # The subscription set is in HashSet order whatever order it was given in.
    flipped = HeartbeatData.from_json(text)
    written_order = [s.topic for s in flipped.consumer_data_set[0].subscription_data_set]
    flipped.consumer_data_set[0].subscription_data_set = list(reversed(subs))
    assert flipped.to_json() == text
    heartbeat.consumer_data_set[0].subscription_data_set.sort(key=lambda s: written_order.index(s.topic))
    tagged.tags_set, tagged.code_set = ["a", "b"], [97, 98]  # as the sets iterate
    assert HeartbeatData.from_json(text) == heartbeat


def test_heartbeat_5x_fields() -> None:
    heartbeat = HeartbeatData(client_id="c", heartbeat_fingerprint=0, without_sub=False)
    assert heartbeat.to_json() == (
        b'{"clientID":"c","consumerDataSet":[],"heartbeatFingerprint":0,"producerDataSet":[],"withoutSub":false}'
    )


def test_cpp_style_heartbeat_reads_ordinals_and_numeric_strings() -> None:
    data = (
        b'{"clientID":"1-127.0.0.1@DEFAULT","consumerDataSet":[{"consumeFromWhere":4,"consumeType":1,'
        b'"groupName":"G","messageModel":0,"subscriptionDataSet":[{"subString":"*","subVersion":"17","topic":"T"}]}]}\n'
    )
    heartbeat = HeartbeatData.from_json(data)
    consumer = heartbeat.consumer_data_set[0]
    assert (consumer.consume_type, consumer.message_model, consumer.consume_from_where) == (
        "CONSUME_PASSIVELY",
        "BROADCASTING",
        "CONSUME_FROM_FIRST_OFFSET",
    )
    assert consumer.subscription_data_set[0].sub_version == 17
    assert heartbeat.producer_data_set == []


# ------------------------------------------------------------------------------------------ stats, queues


def test_topic_stats_write_queues_as_object_keys() -> None:
    queues = [MessageQueue(topic="T", broker_name="b", queue_id=i) for i in (1, 0)]
    table = TopicStatsTable(
        offset_table={q: TopicOffset(min_offset=0, max_offset=q.queue_id + 5) for q in queues},
        topic_put_tps=0.0,
    )
    assert table.to_json() == (
        b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":5,'
        b'"minOffset":0},{"brokerName":"b","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":6,'
        b'"minOffset":0}},"topicPutTps":0.0}'
    )
    assert TopicStatsTable.from_json(table.to_json()) == table


def test_consume_stats_and_offsets() -> None:
    queue = MessageQueue(topic="T", broker_name="b", queue_id=3)
    assert queue.java_hash() == 31 * (31 * (31 + 98) + 3) + 84
    stats = ConsumeStats(
        offset_table={queue: OffsetWrapper(broker_offset=10, consumer_offset=4, last_timestamp=7)},
        consume_tps=1.5,
    )
    assert stats.to_json() == (
        b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:'
        b'{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":7}}}'
    )
    assert stats.compute_total_diff() == 6
    assert ConsumeStats.from_json(stats.to_json()) == stats


def test_lock_bodies() -> None:
    # MessageQueue("T", "b", n).hashCode() = 124053 + 31n: buckets 4, 5 and 2 of 16 for n = 0, 1, 2.
    queues = [MessageQueue(topic="T", broker_name="b", queue_id=i) for i in (0, 1, 2)]
    request = LockBatchRequestBody(consumer_group="G", client_id="c", mq_set=queues, only_this_broker=True)
    text = request.to_json()
    assert text == (
        b'{"clientId":"c","consumerGroup":"G","mqSet":[{"brokerName":"b","queueId":2,"topic":"T"},'
        b'{"brokerName":"b","queueId":0,"topic":"T"},{"brokerName":"b","queueId":1,"topic":"T"}],'
        b'"onlyThisBroker":true}'
    )
    assert LockBatchRequestBody.from_json(text) == LockBatchRequestBody(
        consumer_group="G", client_id="c", mq_set=[queues[2], queues[0], queues[1]], only_this_broker=True
    )
    response = LockBatchResponseBody(lock_ok_mq_set=queues[2:])
    assert response.to_json() == b'{"lockOKMQSet":[{"brokerName":"b","queueId":2,"topic":"T"}]}'


def test_reset_offset_and_consumer_offset_wrapper() -> None:
    queue = MessageQueue(topic="T", broker_name="b", queue_id=0)
    reset = ResetOffsetBody(offset_table={queue: 42})
    assert reset.to_json() == b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:42}}'
    assert ResetOffsetBody.from_json(reset.to_json()) == reset
    offsets = ConsumerOffsetSerializeWrapper(offset_table={"T@G": {1: 7, 0: 5}})
    assert offsets.to_json() == b'{"offsetTable":{"T@G":{0:5,1:7}}}'
    assert ConsumerOffsetSerializeWrapper.from_json(offsets.to_json()) == offsets


def test_consumer_connection_and_group_list() -> None:
    connection = ConsumerConnection(
        connection_set=[Connection(client_id="c", client_addr="1.2.3.4:5", language="JAVA", version=479)],
        subscription_table={"T": SubscriptionData(topic="T", sub_string="*", sub_version=1)},
        consume_type="CONSUME_PASSIVELY",
        message_model="CLUSTERING",
        consume_from_where="CONSUME_FROM_LAST_OFFSET",
    )
    text = connection.to_json()
    assert text.startswith(
        b'{"connectionSet":[{"clientAddr":"1.2.3.4:5","clientId":"c","language":"JAVA","version":479}],'
        b'"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY"'
    )
    assert ConsumerConnection.from_json(text) == connection
    assert Connection.from_json(b'{"language":1}').language == "CPP"
    assert GroupList(group_list=["b", "a"]).to_json() == b'{"groupList":["a","b"]}'


def test_kv_table_in_hash_map_order() -> None:
    assert KVTable(table={"b": "2", "a": "1"}).to_json() == b'{"table":{"a":"1","b":"2"}}'
    assert KVTable.from_json(b'{"table":{"x":"1"}}').table == {"x": "1"}
    assert KVTable.from_json(b"{}").table == {}


def test_static_topic_detail() -> None:
    item = LogicQueueMappingItem(gen=1, queue_id=2, bname="b", logic_offset=100)
    detail = TopicQueueMappingDetail(topic="T", bname="b", total_queues=1, hosted_queues={0: [item]})
    text = detail.to_json()
    assert b'"hostedQueues":{0:[{"bname":"b","endOffset":-1,"gen":1,"logicOffset":100,"queueId":2,' in text
    assert TopicQueueMappingDetail.from_json(text) == detail


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("body_type", "data", "message"),
    [
        (TopicRouteData, b"[]", r"TopicRouteData: expected a JSON object, got an array"),
        (TopicRouteData, b'{"queueDatas":{}}', r"TopicRouteData.queueDatas: expected a JSON array"),
        (
            TopicRouteData,
            b'{"brokerDatas":[{"brokerAddrs":{"x":"a"}}]}',
            r"brokerDatas\[0\].brokerAddrs key 'x'",
        ),
        (TopicRouteData, b'{"brokerDatas":[{"brokerAddrs":{0:5.5}}]}', r"expected a string, got a number"),
        (TopicRouteData, b'{"queueDatas":[{"perm":1099511627776}]}', r"queueDatas\[0\].perm: .* Java int"),
        (TopicRouteData, b'{"queueDatas":[{"perm":true}]}', r"expected an integer, got a boolean"),
        (DataVersion, b'{"counter":"x"}', r"DataVersion.counter: expected an integer, got the string 'x'"),
        (ConsumerData, b'{"consumeType":7}', r"ordinal 7 is out of range"),
        (ConsumerData, b'{"unitMode":"maybe"}', r"expected a boolean"),
        (TopicStatsTable, b'{"offsetTable":{"q":{}}}', r"offsetTable key 'q': expected a JSON object"),
        (ConsumeStats, b'{"consumeTps":"fast"}', r"expected a number"),
        (KVTable, b'{"table":{"a":null}}', r"expected a string, got null"),
        (HeartbeatData, b'{"clientID":{}}', r"HeartbeatData.clientID: expected a string, got an object"),
        (HeartbeatData, b'{"clientID":"a"', r"malformed JSON"),
    ],
)
def test_malformed_bodies_raise_codec_error_naming_the_field(
    body_type: Any, data: bytes, message: str
) -> None:
    with pytest.raises(CodecError, match=message):
        body_type.from_json(data)


def test_lenient_scalars_as_fastjson_accepts_them() -> None:
    version = DataVersion.from_json(b'{"counter":"12","timestamp":3.0}')
    assert (version.counter, version.timestamp) == (12, 3)
    assert QueueData.from_json(b'{"brokerName":7}').broker_name == "7"
    assert ConsumerData.from_json(b'{"unitMode":"true"}').unit_mode is True


# ---------------------------------------------------------------------------------------------- round trips

_names = st.text(alphabet=st.characters(codec="utf-8"), max_size=10)
_longs = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
_ints = st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)
_broker_datas = st.builds(
    BrokerData,
    cluster=st.none() | _names,
    broker_name=st.none() | _names,
    broker_addrs=st.dictionaries(_longs, _names, max_size=5),
    enable_acting_master=st.none() | st.booleans(),
)
_routes = st.builds(
    TopicRouteData,
    order_topic_conf=st.none() | _names,
    queue_datas=st.lists(
        st.builds(QueueData, broker_name=_names, read_queue_nums=_ints, write_queue_nums=_ints, perm=_ints),
        max_size=3,
    ),
    broker_datas=st.lists(_broker_datas, max_size=3),
    filter_server_table=st.dictionaries(_names, st.lists(_names, max_size=2), max_size=3),
)


@settings(max_examples=150)
@given(_routes, st.booleans())
def test_route_round_trip_and_stable_rewrite(route: TopicRouteData, standard: bool) -> None:
    data = route.to_json(standard_json=standard)
    parsed = TopicRouteData.from_json(data)
    assert parsed == route
    assert parsed.to_json(standard_json=standard) == data


@settings(max_examples=150)
@given(
    st.dictionaries(_names, _broker_datas, max_size=6),
    st.dictionaries(_names, st.lists(_names, unique=True, max_size=6), max_size=4),
)
def test_cluster_info_round_trip_and_stable_rewrite(
    brokers: dict[str, BrokerData], clusters: dict[str, list[str]]
) -> None:
    info = ClusterInfo(broker_addr_table=brokers, cluster_addr_table=clusters)
    data = info.to_json()
    parsed = ClusterInfo.from_json(data)
    assert parsed.broker_addr_table == brokers
    assert {k: sorted(v) for k, v in parsed.cluster_addr_table.items()} == {
        k: sorted(v) for k, v in clusters.items()
    }
    assert parsed.to_json() == data


@settings(max_examples=100)
@given(st.dictionaries(_names, _names, max_size=30))
def test_kv_table_round_trip_and_stable_rewrite(table: dict[str, str]) -> None:
    data = KVTable(table=table).to_json()
    parsed = KVTable.from_json(data)
    assert parsed.table == table
    assert parsed.to_json() == data


@settings(max_examples=60)
@given(st.lists(_names, unique=True, max_size=40))
def test_register_body_round_trips_in_both_forms(names: list[str]) -> None:
    names = [n for n in names if n and " " not in n]
    configs = {n: TopicConfig(topic_name=n, attributes={}) for n in names}
    body = RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigAndMappingSerializeWrapper(
            topic_config_table=configs, data_version=DataVersion(timestamp=1, state_version=0)
        )
    )
    data = body.encode(compressed=False)
    decoded = RegisterBrokerBody.decode(data, compressed=False)
    assert decoded.topic_config_serialize_wrapper.topic_config_table == configs
    assert decoded.encode(compressed=False) == data
    # Java's own decode-encode of the compressed form reorders topics (it re-inserts them into fresh
    # ConcurrentHashMaps), so only the content must survive the trip.
    decoded = RegisterBrokerBody.decode(body.encode(compressed=True), compressed=True)
    assert decoded.topic_config_serialize_wrapper.topic_config_table == configs
    again = RegisterBrokerBody.decode(decoded.encode(compressed=True), compressed=True)
    assert again.topic_config_serialize_wrapper.topic_config_table == configs


# ---------------------------------------------------------------------------------------------- registry


def test_registry_decodes_by_request_code() -> None:
    body = _register_body(TopicConfigSerializeWrapper)
    compressed = decode_request_body(103, body.encode(compressed=True), {"compressed": "true"})
    plain = decode_request_body(103, body.encode(compressed=False), {"compressed": "false"})
    assert isinstance(compressed, RegisterBrokerBody) and isinstance(plain, RegisterBrokerBody)
    assert plain == body
    assert compressed.filter_server_list == ["f:1"]
    assert decode_request_body(10, b"raw message bytes", {}) is None  # SEND_MESSAGE: not JSON
    assert decode_request_body(34, b"", {}) is None
    check = b'{"clientId":"c","group":"G"}'
    assert decode_request_body(46, check, {}) == CheckClientRequestBody(client_id="c", group="G")


def test_registry_tells_the_two_topic_config_wrappers_apart() -> None:
    old = _register_body(TopicConfigSerializeWrapper).topic_config_serialize_wrapper
    new = _register_body(TopicConfigAndMappingSerializeWrapper).topic_config_serialize_wrapper
    assert type(decode_response_body(21, old.to_json())) is TopicConfigSerializeWrapper
    assert type(decode_response_body(21, new.to_json())) is TopicConfigAndMappingSerializeWrapper
    assert decode_response_body(21, new.to_json()) == new
    assert isinstance(decode_response_body(105, _route().to_json()), TopicRouteData)
    assert decode_response_body(9999, b"{}") is None
    with pytest.raises(CodecError):
        decode_response_body(106, b"{broken")


# ---------------------------------------------------------------------------------------------- more bodies


def test_producer_connection_and_local_offsets() -> None:
    producers = ProducerConnection(connection_set=[Connection(client_id="p", language="CPP", version=63)])
    assert producers.to_json() == b'{"connectionSet":[{"clientId":"p","language":"CPP","version":63}]}'
    assert ProducerConnection.from_json(producers.to_json()) == producers
    queue = MessageQueue(topic="T", broker_name="b", queue_id=1)
    offsets = OffsetSerializeWrapper(offset_table={queue: 12})
    assert offsets.to_json() == b'{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:12}}'
    assert OffsetSerializeWrapper.from_json(offsets.to_json()) == offsets


@pytest.mark.parametrize(
    ("expression", "tags", "sub_string"),
    [
        (None, [], "*"),
        ("", [], "*"),
        ("*", [], "*"),
        ("TagA", ["TagA"], "TagA"),
        (" TagA || TagB ||TagA", ["TagA", "TagB"], " TagA || TagB ||TagA"),
        (" || ", [], " || "),  # Java keeps it: parts exist, all blank
        ("TagA||", ["TagA"], "TagA||"),
    ],
)
def test_build_subscription_follows_filter_api(
    expression: str | None, tags: list[str], sub_string: str
) -> None:
    subscription = build_subscription("T", expression)
    assert subscription.tags_set == tags
    assert subscription.sub_string == sub_string
    assert subscription.expression_type == "TAG"


def test_build_subscription_codes_are_signed_java_hashes() -> None:
    # "TagA".hashCode() = 2598919; "TagZZZZZ" overflows into a negative int.
    assert build_subscription("T", "TagA").code_set == [2598919]
    (code,) = build_subscription("T", "TagZZZZZ").code_set
    assert code == -704586080
    assert -(1 << 31) <= code < 0


def test_check_client_body_is_written_as_fastjson_writes_it() -> None:
    sql = build_subscription("T", "a > 5 AND region = 'eu'", "SQL92")
    sql.sub_version = 1_700_000_000_123
    body = CheckClientRequestBody(client_id="127.0.0.1@9#1", group="G", subscription_data=sql)
    assert body.to_json() == (
        b'{"clientId":"127.0.0.1@9#1","group":"G","subscriptionData":{"classFilterMode":false,"codeSet":[],'
        b'"expressionType":"SQL92","subString":"a > 5 AND region = \'eu\'","subVersion":1700000000123,'
        b'"tagsSet":[],"topic":"T"}}'
    )
    assert CheckClientRequestBody.from_json(body.to_json()) == body


def test_check_client_body_namespace_is_written_only_when_set() -> None:
    body = CheckClientRequestBody(client_id="c", group="G", namespace="ns")
    assert body.to_json() == b'{"clientId":"c","group":"G","namespace":"ns"}'
    assert CheckClientRequestBody.from_json(body.to_json()) == body
    assert CheckClientRequestBody.from_json(b"{}") == CheckClientRequestBody()


def test_build_subscription_sql_and_refusals() -> None:
    sql = build_subscription("T", "a > 1", "SQL92")
    assert (sql.sub_string, sql.expression_type, sql.tags_set) == ("a > 1", "SQL92", [])
    with pytest.raises(CodecError, match="needs an expression"):
        build_subscription("T", "", "SQL92")
    with pytest.raises(CodecError, match="splits into no tags"):
        build_subscription("T", "||||")


def test_properties_text_parses_java_properties_syntax() -> None:
    text = "# comment\n! also\n\n  a = 1 \\\n   2\nb:x\\ty\nc \\u0041\nk\\=q=v\r\nempty\n"
    body = PropertiesBody.from_text(text)
    assert body.properties == {"a": "1 2", "b": "x\ty", "c": "A", "k=q": "v", "empty": ""}
    with pytest.raises(CodecError, match="uxxxx"):
        PropertiesBody.from_text("a=\\u12")
    with pytest.raises(CodecError, match="not UTF-8"):
        PropertiesBody.from_text(b"a=\xff")


def test_properties_text_written_sorted_or_in_hash_order() -> None:
    body = PropertiesBody(properties={"b": "2", "B": "3", "a": "1"})
    assert body.to_text() == b"B=3\na=1\nb=2\n"
    unsorted = PropertiesBody.from_text(b"b=2\na=1\n")
    assert not unsorted.sorted_keys  # "b" before "a" is a hash order, not a sorted one
    assert unsorted.to_text() == b"b=2\na=1\n"
    assert PropertiesBody.from_text(body.to_text()).sorted_keys
