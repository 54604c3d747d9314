"""Timer messages and recall from the producer: the properties Java's setters write, the broker-version gate
that keeps a 4.x broker from delivering a timer message at once, the recall handle and RECALL_MESSAGE."""

from __future__ import annotations

import base64

import pytest

from producer import BrokerVersionError, Message, MessageValidationError
from rocketmq_wire.codes import MQVersion, RequestCode
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.send import RecallMessageRequestHeader
from rocketmq_wire.message import RecallHandle, decode_properties
from rocketmq_wire.message import const as props
from tests.unit.producer_fakes import Cluster

TOPIC = "TimerTopic"
V5_3_3 = MQVersion.V5_3_3


# -- the message --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "name"),
    [
        ("deliver_time_ms", props.TIMER_DELIVER_MS),
        ("delay_time_ms", props.TIMER_DELAY_MS),
        ("delay_time_sec", props.TIMER_DELAY_SEC),
    ],
)
def test_each_timer_field_is_the_property_javas_setter_writes(field: str, name: str) -> None:
    message = Message(TOPIC, b"x", tags="t", **{field: 1_700_000_000_123})
    assert message.is_timer
    built = message.build_properties({props.UNIQ_KEY: "ID"})
    assert built[name] == "1700000000123"
    # after the user's properties, before what the send adds (Java: setter called on a built message)
    assert list(built) == [props.TAGS, props.WAIT, name, props.UNIQ_KEY]
    again, other = Message.from_properties(TOPIC, b"x", built)
    assert getattr(again, field) == 1_700_000_000_123 and again.timer_property() == (name, "1700000000123")
    assert other == {props.UNIQ_KEY: "ID"}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"deliver_time_ms": 5, "delay_time_sec": 5}, "one delivery time"),
        ({"delay_time_ms": 5, "delay_level": 3}, "not both"),
        ({"delay_time_ms": -1}, "Java long"),
        ({"delay_time_sec": 2**63}, "Java long"),
        ({"deliver_time_ms": True}, "Java long"),
    ],
)
def test_an_ambiguous_or_impossible_delivery_time_is_refused(kwargs: dict[str, int], match: str) -> None:
    with pytest.raises(CodecError, match=match):
        Message(TOPIC, b"x", **kwargs)


def test_a_timer_property_given_as_a_user_property_is_refused() -> None:
    with pytest.raises(CodecError, match="reserved"):
        Message(TOPIC, b"x", properties={props.TIMER_DELIVER_MS: "5"})


def test_a_message_that_is_not_a_timer_one_reads_back_without_a_delivery_time() -> None:
    message, other = Message.from_properties(TOPIC, b"x", {props.TIMER_DELIVER_MS: "soon", props.DELAY: "2"})
    assert not message.is_timer and message.delay_level == 2
    assert other == {props.TIMER_DELIVER_MS: "soon"}


# -- the recall handle --------------------------------------------------------------------------------------


def test_the_recall_handle_is_url_safe_base64_of_five_fields() -> None:
    handle = RecallHandle("Orders", "broker-a", "1700000001001", "7F0000010001")
    text = handle.encode()
    assert base64.urlsafe_b64decode(text) == b"v1 Orders broker-a 1700000001001 7F0000010001"
    assert RecallHandle.decode(text) == handle
    extra = base64.urlsafe_b64encode(b"v1 T b 1 ID more").decode()
    assert RecallHandle.decode(extra) == RecallHandle("T", "b", "1", "ID")  # extra fields ignored, as Java


@pytest.mark.parametrize(
    "text",
    [
        "",
        "!!!",
        base64.urlsafe_b64encode(b"v2 T b 1 ID").decode(),
        base64.urlsafe_b64encode(b"v1 T b").decode(),
    ],
)
def test_a_handle_apache_would_not_read_is_refused(text: str) -> None:
    with pytest.raises(CodecError, match="recall handle is invalid"):
        RecallHandle.decode(text)


# -- against a broker ---------------------------------------------------------------------------------------


async def test_a_timer_message_to_a_4x_broker_is_refused_before_anything_is_sent() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with cluster.producer() as producer:
            with pytest.raises(
                BrokerVersionError, match=r"timer message needs a V5_0_0 or later broker.*V4_9_8"
            ):
                await producer.send(Message(TOPIC, b"x", delay_time_sec=30))
            plain = await producer.send(Message(TOPIC, b"plain"))
        assert [s.body for s in broker.stored] == [b"plain"]
        assert plain.recall_handle is None


async def test_a_timer_message_to_a_5x_broker_carries_its_time_and_gets_a_recall_handle() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        broker.version = V5_3_3
        async with cluster.producer("TimerPg") as producer:
            result = await producer.send(Message(TOPIC, b"later", deliver_time_ms=1_900_000_000_000))
            [stored] = broker.stored
            assert decode_properties(stored.properties)[props.TIMER_DELIVER_MS] == "1900000000000"
            assert result.recall_handle is not None
            handle = RecallHandle.decode(result.recall_handle)
            assert (handle.topic, handle.broker_name, handle.message_id) == (TOPIC, "broker-a", result.msg_id)

            recalled = await producer.recall(TOPIC, result.recall_handle)
        assert recalled == result.msg_id
        [request] = broker.of(RequestCode.RECALL_MESSAGE)
        header = request.cmd.read_header(RecallMessageRequestHeader)
        assert (header.producer_group, header.topic, header.bname) == ("TimerPg", TOPIC, "broker-a")
        assert broker.recalled == [result.recall_handle]


async def test_a_timer_message_cannot_ride_in_a_batch() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        cluster.brokers["broker-a"].version = V5_3_3
        async with cluster.producer() as producer:
            with pytest.raises(MessageValidationError, match="batch"):
                await producer.send_batch([Message(TOPIC, b"a"), Message(TOPIC, b"b", delay_time_ms=10)])
        assert cluster.brokers["broker-a"].sends() == []


async def test_recall_needs_a_broker_that_has_it_and_a_handle_it_can_read() -> None:
    handle = RecallHandle(TOPIC, "broker-a", "1900000000001", "ID").encode()
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        broker.version = MQVersion.value_of("V5_3_1")
        async with cluster.producer() as producer:
            with pytest.raises(BrokerVersionError, match=r"V5_3_2 or later.*V5_3_1"):
                await producer.recall(TOPIC, handle)
            with pytest.raises(MessageValidationError, match="recall handle is invalid"):
                await producer.recall(TOPIC, "not-a-handle")
            with pytest.raises(MessageValidationError, match="retry and DLQ"):
                await producer.recall("%RETRY%group", handle)
        assert broker.of(RequestCode.RECALL_MESSAGE) == []
