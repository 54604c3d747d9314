"""RocketMQ 5.5's lite-topic admin reads on the wire: codes, headers (Java's field order, ``@CFNotNull``,
primitives always sent, the client-info ``maxCount`` check) and the fastjson bodies of the answers.

What Apache's mqadmin 5.5.0 and broker actually send is checked at test time by
``tests/integration/test_lite_admin.py``; these tests hold the layout facts read off the 5.5.0 classes.
"""

from __future__ import annotations

import pytest

from rocketmq_wire.bodies import decode_response_body
from rocketmq_wire.bodies.java_collections import in_table_order, string_hash
from rocketmq_wire.bodies.lite import (
    ClientGroup,
    GetBrokerLiteInfoResponseBody,
    GetLiteClientInfoResponseBody,
    GetLiteGroupInfoResponseBody,
    GetLiteTopicInfoResponseBody,
    GetParentTopicInfoResponseBody,
    LiteLagInfo,
)
from rocketmq_wire.bodies.stats import OffsetWrapper, TopicOffset
from rocketmq_wire.codes import RequestCode, ResponseCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers import header_for_request, header_for_response
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.headers.lite import (
    GetLiteClientInfoRequestHeader,
    GetLiteGroupInfoRequestHeader,
    GetLiteTopicInfoRequestHeader,
    GetParentTopicInfoRequestHeader,
    TriggerLiteDispatchRequestHeader,
)
from rocketmq_wire.topics import lite_queue_name
from tests.header_checks import HEADER_PACKAGE, java_field_walk

# -- codes and registries ----------------------------------------------------------------------------------


def test_codes_are_apaches() -> None:
    assert [RequestCode(c).name for c in range(200070, 200080)] == [
        "POP_LITE_MESSAGE",
        "LITE_SUBSCRIPTION_CTL",
        "ACK_LITE_MESSAGE",
        "NOTIFY_UNSUBSCRIBE_LITE",
        "GET_BROKER_LITE_INFO",
        "GET_PARENT_TOPIC_INFO",
        "GET_LITE_TOPIC_INFO",
        "GET_LITE_CLIENT_INFO",
        "GET_LITE_GROUP_INFO",
        "TRIGGER_LITE_DISPATCH",
    ]
    assert (ResponseCode.LMQ_QUOTA_EXCEEDED, ResponseCode.LITE_SUBSCRIPTION_QUOTA_EXCEEDED) == (2017, 2018)


_HEADERS: dict[int, type[CommandHeader] | None] = {
    RequestCode.GET_BROKER_LITE_INFO: None,
    RequestCode.GET_PARENT_TOPIC_INFO: GetParentTopicInfoRequestHeader,
    RequestCode.GET_LITE_TOPIC_INFO: GetLiteTopicInfoRequestHeader,
    RequestCode.GET_LITE_GROUP_INFO: GetLiteGroupInfoRequestHeader,
    RequestCode.GET_LITE_CLIENT_INFO: GetLiteClientInfoRequestHeader,
    RequestCode.TRIGGER_LITE_DISPATCH: TriggerLiteDispatchRequestHeader,
}


def test_registries_know_the_lite_headers_and_answers() -> None:
    for code, cls in _HEADERS.items():
        assert header_for_request(code) is cls
        assert header_for_response(code) is None  # every answer is a body, or its code alone
    assert decode_response_body(RequestCode.TRIGGER_LITE_DISPATCH, b"") is None
    answers = {
        RequestCode.GET_BROKER_LITE_INFO: GetBrokerLiteInfoResponseBody(),
        RequestCode.GET_PARENT_TOPIC_INFO: GetParentTopicInfoResponseBody(),
        RequestCode.GET_LITE_TOPIC_INFO: GetLiteTopicInfoResponseBody(),
        RequestCode.GET_LITE_GROUP_INFO: GetLiteGroupInfoResponseBody(),
        RequestCode.GET_LITE_CLIENT_INFO: GetLiteClientInfoResponseBody(),
    }
    for code, body in answers.items():
        assert type(decode_response_body(code, body.to_json())) is type(body)


def test_lite_requests_travel_only_as_json() -> None:
    """The codes need 18 bits; the ROCKETMQ serialization has 16 for a code (see docs/pop.md)."""
    header = GetLiteTopicInfoRequestHeader(parent_topic="P", lite_topic="l")
    binary = RemotingCommand.request(
        RequestCode.GET_LITE_TOPIC_INFO, header, serialize_type=SerializeType.ROCKETMQ
    )
    with pytest.raises(CodecError, match="200076"):
        binary.encode()
    decoded = RemotingCommand.decode(
        RemotingCommand.request(RequestCode.GET_LITE_TOPIC_INFO, header).encode()
    )
    assert decoded.code == RequestCode.GET_LITE_TOPIC_INFO
    assert GetLiteTopicInfoRequestHeader.from_ext(decoded.fields()) == header


def test_lite_queue_names_are_lite_utils() -> None:
    assert lite_queue_name("Parent", "order-17") == "%LMQ%$Parent$order-17"


# -- headers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "fields"),
    [
        (GetParentTopicInfoRequestHeader, ["topic"]),
        (GetLiteTopicInfoRequestHeader, ["parentTopic", "liteTopic"]),
        (GetLiteGroupInfoRequestHeader, ["group", "liteTopic", "topK"]),
        (GetLiteClientInfoRequestHeader, ["parentTopic", "group", "clientId", "maxCount"]),
        (TriggerLiteDispatchRequestHeader, ["group", "clientId"]),
    ],
)
def test_fields_are_declared_in_the_order_5x_walks_them(cls: type[CommandHeader], fields: list[str]) -> None:
    """Plain ``CommandCustomHeader``\\ s: only their own fields are in the walk, no routing fields."""
    assert [f.java for f in cls.java_fields()] == java_field_walk(
        [(HEADER_PACKAGE + cls.__name__, f) for f in fields]
    )


@pytest.mark.parametrize(
    ("cls", "required"),
    [
        (GetParentTopicInfoRequestHeader, {"topic"}),
        (GetLiteTopicInfoRequestHeader, set()),
        (GetLiteGroupInfoRequestHeader, {"group"}),
        (GetLiteClientInfoRequestHeader, set()),
        (TriggerLiteDispatchRequestHeader, {"group"}),
    ],
)
def test_cfnotnull_fields_are_required(cls: type[CommandHeader], required: set[str]) -> None:
    assert {f.java for f in cls.java_fields() if f.required} == required
    if required:
        with pytest.raises(CodecError, match="is null"):
            cls.from_ext({})


def test_int_fields_are_java_ints() -> None:
    """Java always sends its ``int`` fields (0 when unset); the admin sets them on every request."""
    assert GetLiteGroupInfoRequestHeader(group="G", top_k=20).ext_items() == [("topK", "20"), ("group", "G")]
    header = GetLiteClientInfoRequestHeader(parent_topic="P", client_id="c", group="G", max_count=0)
    assert header.ext_items() == [("parentTopic", "P"), ("clientId", "c"), ("maxCount", "0"), ("group", "G")]
    assert GetLiteGroupInfoRequestHeader.from_ext({"group": "G", "topK": "20"}).top_k == 20
    with pytest.raises(CodecError, match="topK"):
        GetLiteGroupInfoRequestHeader.from_ext({"group": "G", "topK": str(2**31)})


def test_a_client_info_request_must_ask_for_at_least_one_lite_topic() -> None:
    """The 5.5.0 broker's decoding runs ``checkFields``, which refuses a ``maxCount`` below 1."""
    ext = {"parentTopic": "P", "group": "G", "clientId": "c"}
    assert GetLiteClientInfoRequestHeader.from_ext({**ext, "maxCount": "5"}).max_count == 5
    for refused in ("0", "-1"):
        with pytest.raises(CodecError, match="maxCount must be positive"):
            GetLiteClientInfoRequestHeader.from_ext({**ext, "maxCount": refused})
    # Java initialises it to 1000: what a request without one means, and what a header built here holds.
    assert GetLiteClientInfoRequestHeader.from_ext(ext).max_count == 1000
    assert GetLiteClientInfoRequestHeader().max_count == 1000


# -- bodies ----------------------------------------------------------------------------------------------


def test_broker_lite_info_json() -> None:
    body = GetBrokerLiteInfoResponseBody(
        store_type="default",
        max_lmq_num=20000,
        current_lmq_num=3,
        lite_subscription_count=2,
        order_info_count=1,
        cq_table_size=7,
        offset_table_size=9,
        event_map_size=4,
        topic_meta={"Parent": -1},
        group_meta={"Parent": ["LiteGroup"]},
    )
    text = (
        b'{"cqTableSize":7,"currentLmqNum":3,"eventMapSize":4,"groupMeta":{"Parent":["LiteGroup"]},'
        b'"liteSubscriptionCount":2,"maxLmqNum":20000,"offsetTableSize":9,"orderInfoCount":1,'
        b'"storeType":"default","topicMeta":{"Parent":-1}}'
    )
    assert body.to_json() == text
    assert GetBrokerLiteInfoResponseBody.from_json(text) == body
    # Java's ints are always there; absent maps stay absent.
    assert GetBrokerLiteInfoResponseBody().to_json() == (
        b'{"cqTableSize":0,"currentLmqNum":0,"eventMapSize":0,"liteSubscriptionCount":0,"maxLmqNum":0,'
        b'"offsetTableSize":0,"orderInfoCount":0}'
    )
    empty = GetBrokerLiteInfoResponseBody(topic_meta={}, group_meta={})
    assert b'"groupMeta":{}' in empty.to_json() and b'"topicMeta":{}' in empty.to_json()


def test_maps_and_sets_follow_the_brokers_hash_tables() -> None:
    """A value built here comes out in the broker's ``HashMap``/``HashSet`` order; one read off the wire
    keeps the order it came in, so it is written back as it was."""
    topics = {f"T{n}": n for n in range(20)}
    built = GetBrokerLiteInfoResponseBody(topic_meta=topics)
    meta = GetBrokerLiteInfoResponseBody.from_json(built.to_json()).topic_meta
    assert meta is not None
    # collected while walking the broker's topic table (a ConcurrentHashMap(1024): 2048 buckets) into a
    # HashMap, which 20 entries grow to 32 buckets
    walked = in_table_order(list(topics), string_hash, 2048)
    assert list(meta) == in_table_order(walked, string_hash, 32)
    assert list(meta) != list(topics)
    # a map whose order no HashMap of that size gives is kept as read
    odd = b'{"cqTableSize":0,"currentLmqNum":0,"eventMapSize":0,"liteSubscriptionCount":0,"maxLmqNum":0,'
    odd += b'"offsetTableSize":0,"orderInfoCount":0,"topicMeta":{"b":1,"a":2}}'
    assert GetBrokerLiteInfoResponseBody.from_json(odd).to_json() == odd

    groups = [f"G{n}" for n in range(5, 0, -1)]
    parent = GetParentTopicInfoResponseBody(topic="P", ttl=-1, groups=groups, lmq_num=2, lite_topic_count=1)
    again = GetParentTopicInfoResponseBody.from_json(parent.to_json())
    assert again.groups == in_table_order(groups, string_hash, 16)
    assert (
        again.to_json()
        == parent.to_json()
        == (b'{"groups":["G1","G2","G3","G4","G5"],"liteTopicCount":1,"lmqNum":2,"topic":"P","ttl":-1}')
    )


def test_client_groups_hash_as_javas_objects_hash() -> None:
    member = ClientGroup("10.0.0.1@4711", "LiteGroup")
    h = (31 * (31 + string_hash("10.0.0.1@4711")) + string_hash("LiteGroup")) & 0xFFFFFFFF
    assert member.java_hash() == h
    assert ClientGroup().java_hash() == 31 * 31  # Objects.hash(null, null)


def test_lite_topic_info_json() -> None:
    members = [ClientGroup(f"c{n}", "G") for n in range(3)]
    body = GetLiteTopicInfoResponseBody(
        parent_topic="P",
        lite_topic="l",
        subscriber=members,
        topic_offset=TopicOffset(min_offset=0, max_offset=2, last_update_timestamp=1700000000000),
        sharding_to_broker=True,
    )
    again = GetLiteTopicInfoResponseBody.from_json(body.to_json())
    assert again.subscriber == in_table_order(members, ClientGroup.java_hash, 16)
    assert again.to_json() == body.to_json()
    assert body.to_json().startswith(
        b'{"liteTopic":"l","parentTopic":"P","shardingToBroker":true,"subscriber":[{'
    )
    assert body.to_json().endswith(
        b'"topicOffset":{"lastUpdateTimestamp":1700000000000,"maxOffset":2,"minOffset":0}}'
    )
    # A broker without subscribers sends an empty set; the boolean is always there.
    empty = GetLiteTopicInfoResponseBody(parent_topic="P", lite_topic="l", subscriber=[])
    assert empty.to_json() == b'{"liteTopic":"l","parentTopic":"P","shardingToBroker":false,"subscriber":[]}'


def test_lite_group_info_json() -> None:
    one_topic = GetLiteGroupInfoResponseBody(
        group="G",
        parent_topic="P",
        lite_topic="l",
        earliest_unconsumed_timestamp=1700000000000,
        total_lag_count=3,
        lite_topic_offset_wrapper=OffsetWrapper(
            broker_offset=5, consumer_offset=2, pull_offset=0, last_timestamp=9
        ),
    )
    text = (
        b'{"earliestUnconsumedTimestamp":1700000000000,"group":"G","liteTopic":"l",'
        b'"liteTopicOffsetWrapper":{"brokerOffset":5,"consumerOffset":2,"lastTimestamp":9,"pullOffset":0},'
        b'"parentTopic":"P","totalLagCount":3}'
    )
    assert one_topic.to_json() == text
    assert GetLiteGroupInfoResponseBody.from_json(text) == one_topic
    top = GetLiteGroupInfoResponseBody(
        group="G",
        parent_topic="P",
        lag_count_top_k=[LiteLagInfo(lite_topic="b", lag_count=7, earliest_unconsumed_timestamp=3)],
        lag_timestamp_top_k=[],
    )
    assert top.to_json() == (
        b'{"earliestUnconsumedTimestamp":-1,"group":"G","lagCountTopK":[{"earliestUnconsumedTimestamp":3,'
        b'"lagCount":7,"liteTopic":"b"}],"lagTimestampTopK":[],"parentTopic":"P","totalLagCount":0}'
    )
    assert GetLiteGroupInfoResponseBody.from_json(top.to_json()) == top


def test_lite_client_info_json() -> None:
    body = GetLiteClientInfoResponseBody(
        parent_topic="P",
        group="G",
        client_id="c",
        last_access_time=-1,
        lite_topic_count=2,
        lite_topic_set=["x", "a"],
    )
    text = (
        b'{"clientId":"c","group":"G","lastAccessTime":-1,"lastConsumeTime":0,"liteTopicCount":2,'
        b'"liteTopicSet":["a","x"],"parentTopic":"P"}'
    )
    assert body.to_json() == text
    assert GetLiteClientInfoResponseBody.from_json(text).to_json() == text
    # no subscription at all: a count of -1 and no set
    none = GetLiteClientInfoResponseBody(parent_topic="P", group="G", client_id="c", lite_topic_count=-1)
    assert b"liteTopicSet" not in none.to_json()
    with pytest.raises(CodecError, match="liteTopicSet"):
        GetLiteClientInfoResponseBody.from_json(b'{"liteTopicSet":"a"}')
