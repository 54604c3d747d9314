"""The message trace record format (rocketmq_wire.trace) against Apache's 4.9.x field order."""

from __future__ import annotations

import pytest

from rocketmq_wire.trace import (
    CONTENT_SPLITOR,
    FIELD_SPLITOR,
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
    decode_trace_data,
    encode_trace_context,
    encode_trace_data,
    trace_keys,
)

C, F = CONTENT_SPLITOR, FIELD_SPLITOR
MSG_ID = "7F00000100002A9F0000000000000001"


def _java(*fields: object, trailing: bool = False) -> str:
    """A record as Java's StringBuilder chain writes it."""
    return C.join(str(f) for f in fields) + (C if trailing else "") + F


def test_splitters_are_java_chars_1_and_2() -> None:
    assert (ord(C), ord(F)) == (1, 2)


def test_pub_encodes_in_apache_field_order() -> None:
    ctx = TraceContext(
        TraceType.PUB,
        timestamp=1700000000123,
        region_id="DefaultRegion",
        group_name="PG",
        cost_time=7,
        success=True,
        beans=[
            TraceBean(
                topic="T",
                msg_id=MSG_ID,
                tags="TagA",
                keys="k1 k2",
                store_host="10.0.0.1:10911",
                body_length=5,
                msg_type=TraceMessageType.NORMAL,
                offset_msg_id="0A00000100002A9F0000000000000042",
            )
        ],
    )
    expected = _java(
        "Pub", 1700000000123, "DefaultRegion", "PG", "T", MSG_ID, "TagA", "k1 k2", "10.0.0.1:10911", 5, 7, 0,
        "0A00000100002A9F0000000000000042", "true",
    )  # fmt: skip
    assert encode_trace_context(ctx) == expected
    [decoded] = decode_trace_data(expected)
    assert decoded.trace_type is TraceType.PUB
    assert decoded.beans[0].offset_msg_id == "0A00000100002A9F0000000000000042"
    assert decoded == ctx


def test_sub_before_and_after_encode_in_apache_field_order() -> None:
    bean = TraceBean(msg_id=MSG_ID, keys="k1", retry_times=2)
    before = TraceContext(
        TraceType.SUB_BEFORE, timestamp=100, region_id="R", group_name="CG", request_id="REQ", beans=[bean]
    )
    after = TraceContext(
        TraceType.SUB_AFTER,
        timestamp=105,
        group_name="CG",
        request_id="REQ",
        cost_time=5,
        success=False,
        context_code=ConsumeReturnType.FAILED,
        beans=[bean],
    )
    assert encode_trace_context(before) == _java(
        "SubBefore", 100, "R", "CG", "REQ", MSG_ID, 2, "k1", trailing=True
    )
    assert encode_trace_context(after) == _java("SubAfter", "REQ", MSG_ID, 5, "false", "k1", 4, 105, "CG")
    decoded = decode_trace_data(encode_trace_data([before, after]))
    assert [d.trace_type for d in decoded] == [TraceType.SUB_BEFORE, TraceType.SUB_AFTER]
    assert decoded[0] == before
    assert (decoded[1].request_id, decoded[1].cost_time, decoded[1].success) == ("REQ", 5, False)
    assert (decoded[1].context_code, decoded[1].timestamp, decoded[1].group_name) == (4, 105, "CG")
    assert decoded[1].beans[0].msg_id == MSG_ID


def test_end_transaction_encodes_in_apache_field_order() -> None:
    ctx = TraceContext(
        TraceType.END_TRANSACTION,
        timestamp=200,
        region_id="DefaultRegion",
        group_name="TG",
        beans=[
            TraceBean(
                topic="T", msg_id=MSG_ID, tags="null", keys="null", store_host="10.0.0.1:10911",
                msg_type=TraceMessageType.TRANS_COMMIT, transaction_id="TX1",
                transaction_state="COMMIT_MESSAGE", from_transaction_check=True,
            )
        ],
    )  # fmt: skip
    expected = _java(
        "EndTransaction", 200, "DefaultRegion", "TG", "T", MSG_ID, "null", "null", "10.0.0.1:10911", 2, "TX1",
        "COMMIT_MESSAGE", "true", trailing=True,
    )  # fmt: skip
    assert encode_trace_context(ctx) == expected
    assert decode_trace_data(expected) == [ctx]


def test_decodes_hand_built_java_strings() -> None:
    """Records as Java writes them: a Pub without offsetMsgId (older clients), a SubAfter without the
    timestamp and group, keys Java wrote as ``null``, and a Pub with a trailing clientHost (newer)."""
    old_pub = (
        "Pub" + C + "1" + C + "DefaultRegion" + C + "PG" + C + "T" + C + MSG_ID + C + "null" + C + "null"
    )
    old_pub += C + "1.2.3.4:10911" + C + "3" + C + "9" + C + "3" + C + "false" + F
    old_after = "SubAfter" + C + "REQ" + C + MSG_ID + C + "2" + C + "true" + C + "null" + C + "0" + F
    new_pub = _java("Pub", 2, "R", "PG", "T", MSG_ID, "A", "K", "h:1", 1, 1, 0, "OFF", "true", "10.1.1.1")
    junk = "Unknown" + C + "x" + F
    decoded = decode_trace_data(old_pub + old_after + junk + new_pub)
    assert [d.trace_type for d in decoded] == [TraceType.PUB, TraceType.SUB_AFTER, TraceType.PUB]
    pub = decoded[0]
    assert (pub.timestamp, pub.group_name, pub.cost_time, pub.success) == (1, "PG", 9, False)
    assert (pub.beans[0].msg_type, pub.beans[0].offset_msg_id, pub.beans[0].tags) == (
        TraceMessageType.DELAY,
        "",
        "null",
    )
    assert decoded[1].success and decoded[1].timestamp == 0 and decoded[1].beans[0].msg_id == MSG_ID
    assert (decoded[2].beans[0].offset_msg_id, decoded[2].beans[0].client_host) == ("OFF", "10.1.1.1")


def test_java_split_drops_trailing_empty_fields_and_decoder_copes() -> None:
    # SubBefore with empty keys: Java's String.split would drop the trailing empties
    text = "SubBefore" + C + "5" + C + "R" + C + "G" + C + "REQ" + C + MSG_ID + C + "0" + F
    [ctx] = decode_trace_data(text)
    assert ctx.beans[0].keys == "" and ctx.request_id == "REQ"


@pytest.mark.parametrize("keys", ["k1 k2", "null", ""])
def test_trace_keys_are_msg_id_and_message_keys(keys: str) -> None:
    ctx = TraceContext(TraceType.PUB, beans=[TraceBean(msg_id=MSG_ID, keys=keys)])
    expected = [MSG_ID] + (["k1", "k2"] if keys == "k1 k2" else [])
    assert trace_keys(ctx) == expected


def test_empty_data_decodes_to_nothing() -> None:
    assert decode_trace_data("") == []
    assert decode_trace_data(F + F) == []
