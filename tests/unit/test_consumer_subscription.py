"""Subscriptions (Java's FilterAPI), client-side tag filtering, retry-topic restoration, pull answers."""

from __future__ import annotations

import pytest

from consumer.errors import BrokerError
from consumer.fetch import PullStatus, decode_found, parse_pull_response
from consumer.subscription import SubscriptionTable, accepted, restore_retry_topic, tag_filter
from rocketmq_wire.bodies.subscription import build_subscription
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.pull import PullMessageResponseHeader
from rocketmq_wire.message import MessageExt, PropertiesFlavour, encode_properties, encode_stored_message
from rocketmq_wire.message import const as props


def test_tag_expression_becomes_tags_and_java_hash_codes() -> None:
    data = build_subscription("Orders", " TagA || TagB ||TagA|| ")
    assert data.sub_string == " TagA || TagB ||TagA|| ", "kept as written"
    assert data.tags_set == ["TagA", "TagB"]
    # "TagA".hashCode() is 2598919, as in every captured Java heartbeat
    assert data.code_set == [2598919, 2598920]
    assert data.expression_type == "TAG"


def test_star_and_blank_subscribe_to_everything() -> None:
    for expression in ("*", "", None):
        data = build_subscription("T", expression)
        assert (data.sub_string, data.tags_set, data.code_set) == ("*", [], [])
    assert tag_filter(build_subscription("T", "*")) is None
    # Like Java's FilterAPI, only an exact "*" means everything: " * " names the tag "*".
    assert build_subscription("T", " * ").tags_set == ["*"]


def test_negative_hash_codes_are_written_as_java_ints() -> None:
    tag = "zzzzzzzzzz"  # String.hashCode overflows to a negative int
    data = build_subscription("T", tag)
    assert data.code_set[0] < 0


def test_an_expression_without_tags_is_refused() -> None:
    with pytest.raises(ValueError, match="names no tag"):
        SubscriptionTable().subscribe("T", "|| ||")
    with pytest.raises(ValueError, match="no tags"):
        build_subscription("T", "||")
    with pytest.raises(ValueError, match="needs an expression"):
        build_subscription("T", "", "SQL92")
    sql = build_subscription("T", "a > 5", "SQL92")
    assert (sql.sub_string, sql.expression_type, sql.tags_set) == ("a > 5", "SQL92", [])
    assert tag_filter(sql) is None, "SQL92 is the broker's to evaluate"


def test_subscription_table_keeps_order_and_adds_the_retry_topic() -> None:
    table = SubscriptionTable()
    table.subscribe("B", "x")
    table.subscribe("A")
    table.add_retry("Group")
    assert table.topics() == ["B", "A", "%RETRY%Group"]
    assert "A" in table and len(table) == 3
    assert table.unsubscribe("B") and not table.unsubscribe("B")


def _message(tags: str | None, topic: str = "T", extra: dict[str, str] | None = None) -> MessageExt:
    properties = {props.TAGS: tags} if tags else {}
    properties.update(extra or {})
    return MessageExt(topic=topic, properties_string=encode_properties(properties))


def test_client_side_filter_checks_the_tag_text() -> None:
    tags = tag_filter(build_subscription("T", "TagA"))
    messages = [_message("TagA"), _message("TagB"), _message(None)]
    assert [m.tags for m in accepted(messages, tags)] == ["TagA"]
    assert accepted(messages, None) == messages


def test_redelivered_messages_show_their_original_topic() -> None:
    retried = _message("T", "%RETRY%G", {props.RETRY_TOPIC: "Orders"})
    restore_retry_topic(retried, "G")
    assert retried.topic == "Orders"
    other_group = _message("T", "%RETRY%Other", {props.RETRY_TOPIC: "Orders"})
    restore_retry_topic(other_group, "G")
    assert other_group.topic == "%RETRY%Other"
    plain = _message("T", "Orders")
    restore_retry_topic(plain, "G")
    assert plain.topic == "Orders"


def _response(code: int, body: bytes = b"", next_offset: int = 7) -> RemotingCommand:
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE)
    header = PullMessageResponseHeader(
        suggest_which_broker_id=1, next_begin_offset=next_offset, min_offset=0, max_offset=9
    )
    return request.make_response(code, "remark", header, body)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ResponseCode.SUCCESS, PullStatus.FOUND),
        (ResponseCode.PULL_NOT_FOUND, PullStatus.NO_NEW_MSG),
        (ResponseCode.PULL_RETRY_IMMEDIATELY, PullStatus.NO_MATCHED_MSG),
        (ResponseCode.PULL_OFFSET_MOVED, PullStatus.OFFSET_ILLEGAL),
    ],
)
def test_pull_answer_codes(code: int, status: PullStatus) -> None:
    result = parse_pull_response(_response(code, next_offset=42), "b:1")
    assert result.status is status
    assert (result.next_begin_offset, result.min_offset, result.max_offset) == (42, 0, 9)
    assert result.suggest_which_broker_id == 1


def test_any_other_pull_answer_is_a_broker_error() -> None:
    with pytest.raises(BrokerError) as caught:
        parse_pull_response(_response(ResponseCode.SUBSCRIPTION_NOT_LATEST), "b:1")
    assert caught.value.code == ResponseCode.SUBSCRIPTION_NOT_LATEST and caught.value.addr == "b:1"


@pytest.mark.parametrize("flavour", [PropertiesFlavour.V4, PropertiesFlavour.V5])
def test_found_messages_are_filtered_and_marked_with_the_queue_bounds(flavour: PropertiesFlavour) -> None:
    stored = [
        MessageExt(
            topic="T",
            body=f"b{i}".encode(),
            queue_offset=i,
            properties_string=encode_properties({props.TAGS: tag, props.KEYS: f"k{i}"}, flavour),
        )
        for i, tag in enumerate(["A", "B", "A"])
    ]
    body = b"".join(encode_stored_message(m) for m in stored)
    result = parse_pull_response(_response(ResponseCode.SUCCESS, body), "b:1")
    found = decode_found(result, frozenset({"A"}))
    assert [m.body for m in found] == [b"b0", b"b2"]
    for message in found:
        assert message.properties[props.MIN_OFFSET] == "0" and message.properties[props.MAX_OFFSET] == "9"
        assert message.tags == "A" and message.keys == [f"k{message.queue_offset}"]
        assert message.properties_string.endswith("\x02") == (flavour is PropertiesFlavour.V5)
