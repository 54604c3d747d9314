"""What the consumer sends, compared byte for byte with what Apache's Java push consumer sent in the captures.

For every request the Java ``DefaultMQPushConsumer`` made (pulls, offset queries and commits, the member
list, send-backs of failed messages, heartbeats with its subscriptions, unregistration), the same inputs go
through this consumer's request builders; stamped with the capture's opaque, version and serialization, the
command must encode to exactly the captured frame -- 4.9.8 and 5.3.3, JSON and ROCKETMQ headers alike.

(The captures' ``DefaultMQPullConsumer`` frames carry an extra ``ReqT`` entry an RPC hook of the capture
added; they are left out.)
"""

from __future__ import annotations

import pytest

from consumer import commands
from consumer.config import ConsumerConfig
from consumer.core import ConsumerCore
from rocketmq_wire.bodies.heartbeat import ConsumeFromWhere, ConsumeType, HeartbeatData, MessageModel
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.codes import LanguageCode, RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.consumer import ConsumerSendMsgBackRequestHeader
from rocketmq_wire.headers.offset import QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader
from rocketmq_wire.headers.pull import PullMessageRequestHeader
from rocketmq_wire.message import MessageExt, encode_properties
from rocketmq_wire.message import const as props
from tests.golden import GoldenFrame, load_golden

PUSH_GROUPS = ("GoldenRetryGroup", "GoldenPush")


def java_requests(code: int) -> list[GoldenFrame]:
    """Java's requests of ``code`` to the broker from the push consumers' groups."""
    found = []
    for frame in load_golden():
        if not (frame.from_java and frame.code == code and frame.direction.startswith("to-")):
            continue
        if frame.kind not in ("request", "oneway"):
            continue
        fields = RemotingCommand.decode(frame.frame).fields()
        if "ReqT" in fields:
            continue
        group = fields.get("consumerGroup") or fields.get("group")
        if group in PUSH_GROUPS or (code == RequestCode.HEART_BEAT and _push_heartbeat(frame)):
            found.append(frame)
    return found


def _push_heartbeat(frame: GoldenFrame) -> bool:
    data = HeartbeatData.from_json(frame.body)
    return any(c.group_name in PUSH_GROUPS for c in data.consumer_data_set)


def stamp(cmd: RemotingCommand, like: RemotingCommand) -> bytes:
    """Our command with the capture's transport-level attributes (language, opaque, version, flags)."""
    cmd.language = LanguageCode.JAVA
    cmd.opaque = like.opaque
    cmd.version = like.version
    cmd.serialize_type = like.serialize_type
    if like.is_oneway:
        cmd.mark_oneway()
    return cmd.encode()


def queue_of(topic: str | None, bname: str | None, queue_id: int | None) -> MessageQueue:
    return MessageQueue(topic=topic, broker_name=bname, queue_id=queue_id or 0)


@pytest.mark.parametrize("frame", java_requests(RequestCode.PULL_MESSAGE), ids=lambda f: f.id)
def test_pull_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    header = golden.read_header(PullMessageRequestHeader)
    assert header.consumer_group is not None
    spec = commands.PullSpec(
        group=header.consumer_group,
        max_nums=header.max_msg_nums or 0,
        sys_flag=header.sys_flag or 0,
        commit_offset=header.commit_offset or 0,
        suspend_timeout_ms=header.suspend_timeout_millis or 0,
        subscription=header.subscription,
        sub_version=header.sub_version or 0,
        expression_type=header.expression_type,
        max_msg_bytes=262_144 if commands.is_v5(golden.version) else None,
    )
    assert spec.max_msg_bytes == header.max_msg_bytes, "a 5.x push consumer asks for 256 KiB, 4.x for nothing"
    assert spec.suspend_timeout_ms == 15_000 and spec.subscription is None, "push: held 15 s, no expression"
    queue = queue_of(header.topic, header.bname, header.queue_id)
    assert stamp(commands.pull_request(spec, queue, header.queue_offset or 0), golden) == frame.frame


@pytest.mark.parametrize("frame", java_requests(RequestCode.QUERY_CONSUMER_OFFSET), ids=lambda f: f.id)
def test_offset_query_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    header = golden.read_header(QueryConsumerOffsetRequestHeader)
    assert header.consumer_group is not None
    queue = queue_of(header.topic, header.bname, header.queue_id)
    assert stamp(commands.query_offset_request(header.consumer_group, queue), golden) == frame.frame


@pytest.mark.parametrize("frame", java_requests(RequestCode.UPDATE_CONSUMER_OFFSET), ids=lambda f: f.id)
def test_offset_commit_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    assert golden.is_oneway, "Java commits on its timer without waiting for an answer"
    header = golden.read_header(UpdateConsumerOffsetRequestHeader)
    assert header.consumer_group is not None
    queue = queue_of(header.topic, header.bname, header.queue_id)
    cmd = commands.update_offset_request(header.consumer_group, queue, header.commit_offset or 0)
    assert stamp(cmd, golden) == frame.frame


@pytest.mark.parametrize("frame", java_requests(RequestCode.CONSUMER_SEND_MSG_BACK), ids=lambda f: f.id)
def test_send_back_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    header = golden.read_header(ConsumerSendMsgBackRequestHeader)
    assert header.group is not None and header.origin_topic is not None and header.origin_msg_id
    # the failed message as the consumer held it: the unique id the producer gave, where it is stored
    failed = MessageExt(
        topic=header.origin_topic,
        commit_log_offset=header.offset or 0,
        properties_string=encode_properties({props.UNIQ_KEY: header.origin_msg_id}),
    )
    cmd = commands.send_back_request(
        failed, group=header.group, delay_level=0, max_reconsume_times=16, broker_name=header.bname
    )
    assert stamp(cmd, golden) == frame.frame


@pytest.mark.parametrize("frame", java_requests(RequestCode.GET_CONSUMER_LIST_BY_GROUP), ids=lambda f: f.id)
def test_member_list_request_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    assert stamp(commands.consumer_list_request(golden.fields()["consumerGroup"]), golden) == frame.frame


@pytest.mark.parametrize("frame", java_requests(RequestCode.HEART_BEAT), ids=lambda f: f.id)
def test_heartbeat_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    """The consumer's own description of itself (group, model, subscriptions with the retry topic) makes the
    same body; only the subscription versions (creation times) are taken from the capture."""
    golden = RemotingCommand.decode(frame.frame)
    data = HeartbeatData.from_json(golden.body)
    [java] = data.consumer_data_set
    assert data.client_id and java.group_name and java.consume_from_where and java.message_model
    core = ConsumerCore(
        java.group_name,
        "127.0.0.1:9876",
        config=ConsumerConfig(version=golden.version),
        model=MessageModel(java.message_model),
        consume_type=ConsumeType.CONSUME_PASSIVELY,
        consume_from=ConsumeFromWhere(java.consume_from_where),
        timestamp_ms=0,
        rng=None,
    )
    versions = {s.topic: s.sub_version for s in java.subscription_data_set}
    for subscription in java.subscription_data_set:
        assert subscription.topic is not None
        if subscription.topic.startswith("%RETRY%"):
            ours = core.subscriptions.add_retry(java.group_name)
        else:
            ours = core.subscriptions.subscribe(subscription.topic, subscription.sub_string)
        ours.sub_version = versions[subscription.topic]
    ours_body = commands.consumer_heartbeat_body(data.client_id, core.consumer_data(), golden.version)
    assert ours_body == golden.body
    assert stamp(
        commands.consumer_heartbeat_request(data.client_id, core.consumer_data(), golden.version), golden
    ) == (frame.frame)


def consumer_unregisters() -> list[GoldenFrame]:
    return [
        f
        for f in java_requests(RequestCode.UNREGISTER_CLIENT)
        if set(RemotingCommand.decode(f.frame).fields()) == {"clientID", "consumerGroup"}
    ]


@pytest.mark.parametrize("frame", consumer_unregisters(), ids=lambda f: f.id)
def test_unregister_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    fields = golden.fields()
    cmd = commands.unregister_request(fields["clientID"], consumer_group=fields["consumerGroup"])
    assert stamp(cmd, golden) == frame.frame


def test_every_kind_was_captured_in_every_capture() -> None:
    kinds = {
        RequestCode.PULL_MESSAGE: java_requests(RequestCode.PULL_MESSAGE),
        RequestCode.QUERY_CONSUMER_OFFSET: java_requests(RequestCode.QUERY_CONSUMER_OFFSET),
        RequestCode.UPDATE_CONSUMER_OFFSET: java_requests(RequestCode.UPDATE_CONSUMER_OFFSET),
        RequestCode.GET_CONSUMER_LIST_BY_GROUP: java_requests(RequestCode.GET_CONSUMER_LIST_BY_GROUP),
        RequestCode.HEART_BEAT: java_requests(RequestCode.HEART_BEAT),
        RequestCode.UNREGISTER_CLIENT: consumer_unregisters(),
    }
    for code, frames in kinds.items():
        assert {f.capture for f in frames} == {
            "java498-json",
            "java498-rocketmq",
            "java533-json",
            "java533-rocketmq",
        }, code
    send_backs = java_requests(RequestCode.CONSUMER_SEND_MSG_BACK)
    assert len(send_backs) >= 3, "the retry scenario failed one delivery per capture"


def test_lock_requests_carry_only_a_body() -> None:
    """Java sends LOCK_BATCH_MQ / UNLOCK_BATCH_MQ without a header; 5.x adds ``onlyThisBroker``."""
    queue = MessageQueue(topic="T", broker_name="broker-a", queue_id=1)
    four = commands.lock_batch_request("G", "c@1", [queue], 409)
    assert four.ext_fields is None and four.custom_header is None
    assert four.body == (
        b'{"clientId":"c@1","consumerGroup":"G","mqSet":[{"brokerName":"broker-a","queueId":1,"topic":"T"}]}'
    )
    five = commands.unlock_batch_request("G", "c@1", [queue], 479)
    assert five.code == RequestCode.UNLOCK_BATCH_MQ and b'"onlyThisBroker":false' in five.body
