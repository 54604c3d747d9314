"""The POP wire layer on its own: header types and field order, receipt handles, batch-ack and mode bodies.

What Apache's client and broker actually send is checked against these in
``tests/integration/test_pop_wire.py``; here are the rules that make it so, and the edges a capture does not
reach (numbers out of range, older brokers' answers, malformed handles).
"""

from __future__ import annotations

import base64

import pytest

from rocketmq_wire.bodies import decode_request_body, decode_response_body
from rocketmq_wire.bodies.pop import (
    BatchAck,
    BatchAckMessageRequestBody,
    MessageRequestMode,
    MessageRequestModeSerializeWrapper,
    SetMessageRequestModeRequestBody,
    bit_set_bytes,
    bit_set_indexes,
)
from rocketmq_wire.codes import RequestCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers import header_for_request, header_for_response
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketmq_wire.pop_extra import (
    ExtraInfo,
    PoppedMessage,
    after_change,
    build_offset_info,
    parse_msg_offset_info,
    parse_order_count_info,
    parse_start_offset_info,
    pop_retry_topic,
    popped_extra_infos,
    queue_offset_key,
    real_topic,
    retry_mark,
)
from tests.header_checks import HEADER_PACKAGE, java_field_walk

# -- codes and registries ----------------------------------------------------------------------------------


def test_pop_codes_are_apaches_and_lose_their_top_bits_in_a_short() -> None:
    assert RequestCode.POP_MESSAGE == 200050
    assert RequestCode.ACK_MESSAGE == 200051
    assert RequestCode.CHANGE_MESSAGE_INVISIBLETIME == 200053
    assert RequestCode.BATCH_ACK_MESSAGE == 200151
    # Java's ROCKETMQ header writes (short) code: what an Apache broker then sees, and refuses.
    assert [c & 0xFFFF for c in (200050, 200051, 200053, 200151)] == [3442, 3443, 3445, 3543]


def test_the_binary_header_refuses_a_code_it_cannot_hold_rather_than_cut_it() -> None:
    header = PopMessageRequestHeader.from_ext(_pop_ext())
    pop = RemotingCommand.request(RequestCode.POP_MESSAGE, header, serialize_type=SerializeType.ROCKETMQ)
    with pytest.raises(CodecError, match="200050"):
        pop.encode()
    as_json = RemotingCommand.request(RequestCode.POP_MESSAGE, header, serialize_type=SerializeType.JSON)
    decoded = RemotingCommand.decode(as_json.encode())
    assert decoded.code == RequestCode.POP_MESSAGE
    assert PopMessageRequestHeader.from_ext(decoded.fields()) == header


def test_registries_know_the_pop_headers_and_bodies() -> None:
    assert header_for_request(RequestCode.POP_MESSAGE) is PopMessageRequestHeader
    assert header_for_request(RequestCode.ACK_MESSAGE) is AckMessageRequestHeader
    assert header_for_request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME) is ChangeInvisibleTimeRequestHeader
    assert header_for_response(RequestCode.POP_MESSAGE) is PopMessageResponseHeader
    assert header_for_response(RequestCode.CHANGE_MESSAGE_INVISIBLETIME) is ChangeInvisibleTimeResponseHeader
    assert header_for_response(RequestCode.ACK_MESSAGE) is None  # answered by its code alone
    assert header_for_request(RequestCode.BATCH_ACK_MESSAGE) is None  # a body, no header
    body = BatchAckMessageRequestBody(broker_name="b", acks=[]).to_json()
    assert isinstance(
        decode_request_body(RequestCode.BATCH_ACK_MESSAGE, body, {}), BatchAckMessageRequestBody
    )
    mode = SetMessageRequestModeRequestBody(topic="t", consumer_group="g").to_json()
    assert isinstance(
        decode_request_body(RequestCode.SET_MESSAGE_REQUEST_MODE, mode, {}), SetMessageRequestModeRequestBody
    )
    every = MessageRequestModeSerializeWrapper().to_json()
    assert isinstance(
        decode_response_body(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, every),
        MessageRequestModeSerializeWrapper,
    )


# -- header field types ------------------------------------------------------------------------------------


def _pop_ext(**changes: str) -> dict[str, str]:
    ext = {
        "consumerGroup": "g",
        "topic": "t",
        "queueId": "-1",
        "maxMsgNums": "32",
        "invisibleTime": "60000",
        "pollTime": "15000",
        "bornTime": "1700000000000",
        "initMode": "0",
        "order": "false",
    }
    ext.update(changes)
    return ext


def test_pop_request_reads_javas_types() -> None:
    header = PopMessageRequestHeader.from_ext(_pop_ext(expType="TAG", exp="*", bname="broker-a"))
    assert (header.queue_id, header.max_msg_nums, header.invisible_time) == (-1, 32, 60000)
    assert (header.poll_time, header.born_time, header.init_mode) == (15000, 1700000000000, 0)
    assert (header.exp_type, header.exp, header.order, header.bname) == ("TAG", "*", False, "broker-a")
    assert PopMessageRequestHeader.from_ext(_pop_ext(invisibleTime=str(2**62))).invisible_time == 2**62


@pytest.mark.parametrize(
    ("cls", "ext", "field"),
    [
        (PopMessageRequestHeader, _pop_ext(queueId=str(2**31)), "queueId"),  # an int
        (PopMessageRequestHeader, _pop_ext(maxMsgNums="lots"), "maxMsgNums"),
        (PopMessageRequestHeader, _pop_ext(bornTime=str(2**63)), "bornTime"),  # a long
        (PopMessageResponseHeader, {"popTime": "1", "invisibleTime": "1", "reviveQid": str(2**31),
                                    "restNum": "0"}, "reviveQid"),
        (AckMessageRequestHeader, {"consumerGroup": "g", "topic": "t", "queueId": "0", "extraInfo": "x",
                                   "offset": "1.5"}, "offset"),
    ],
)  # fmt: skip
def test_numbers_java_cannot_parse_are_refused(
    cls: type[CommandHeader], ext: dict[str, str], field: str
) -> None:
    with pytest.raises(CodecError, match=field):
        cls.from_ext(ext)


@pytest.mark.parametrize(
    ("cls", "required"),
    [
        (PopMessageRequestHeader, {"consumerGroup", "topic", "queueId", "maxMsgNums", "invisibleTime",
                                   "pollTime", "bornTime", "initMode"}),
        (PopMessageResponseHeader, {"popTime", "invisibleTime", "reviveQid", "restNum"}),
        (AckMessageRequestHeader, {"consumerGroup", "topic", "queueId", "extraInfo", "offset"}),
        (ChangeInvisibleTimeRequestHeader, {"consumerGroup", "topic", "queueId", "extraInfo", "offset",
                                            "invisibleTime"}),
        (ChangeInvisibleTimeResponseHeader, {"popTime", "invisibleTime", "reviveQid"}),
    ],
)  # fmt: skip
def test_cfnotnull_fields_are_required(cls: type[CommandHeader], required: set[str]) -> None:
    assert {f.java for f in cls.java_fields() if f.required} == required
    with pytest.raises(CodecError, match="is null"):
        cls.from_ext({})


def test_java_int_fields_are_32_bits_and_long_fields_64() -> None:
    widths = {f.java: f.bits for f in PopMessageRequestHeader.java_fields() if f.kind is int}
    assert widths == {
        "queueId": 32, "maxMsgNums": 32, "initMode": 32, "invisibleTime": 64, "pollTime": 64, "bornTime": 64,
    }  # fmt: skip
    widths = {f.java: f.bits for f in PopMessageResponseHeader.java_fields() if f.kind is int}
    assert widths == {"popTime": 64, "invisibleTime": 64, "reviveQid": 32, "restNum": 64}


# -- declared order: Java's walk over a HashSet<Field> ------------------------------------------------------

_RPC = [("org.apache.rocketmq.remoting.rpc.TopicRequestHeader", "lo")] + [
    ("org.apache.rocketmq.remoting.rpc.RpcRequestHeader", f) for f in ("ns", "nsd", "bname", "oway")
]


@pytest.mark.parametrize(
    ("cls", "fields", "routed"),
    [
        (PopMessageRequestHeader, ["consumerGroup", "topic", "queueId", "maxMsgNums", "invisibleTime",
                                   "pollTime", "bornTime", "initMode", "expType", "exp", "order",
                                   "attemptId"], True),
        (AckMessageRequestHeader, ["consumerGroup", "topic", "queueId", "extraInfo", "offset", "liteTopic"],
         True),
        (ChangeInvisibleTimeRequestHeader, ["consumerGroup", "topic", "queueId", "extraInfo", "offset",
                                            "invisibleTime", "liteTopic", "suspend"], True),
        (PopMessageResponseHeader, ["popTime", "invisibleTime", "reviveQid", "restNum", "startOffsetInfo",
                                    "msgOffsetInfo", "orderCountInfo"], False),
        (ChangeInvisibleTimeResponseHeader, ["popTime", "invisibleTime", "reviveQid"], False),
    ],
)  # fmt: skip
def test_fields_are_declared_in_the_order_5x_walks_them(
    cls: type[CommandHeader], fields: list[str], routed: bool
) -> None:
    entries = [(HEADER_PACKAGE + cls.__name__, f) for f in fields] + (_RPC if routed else [])
    assert [f.java for f in cls.java_fields()] == java_field_walk(entries)


# -- the receipt handle ------------------------------------------------------------------------------------

_HANDLE = "0 1795863472937 60000 0 0 it-broker-a 2 0"


def test_extra_info_parses_and_renders_back() -> None:
    info = ExtraInfo.parse(_HANDLE)
    assert info == ExtraInfo(0, 1795863472937, 60000, 0, "0", "it-broker-a", 2, 0)
    assert str(info) == info.text() == _HANDLE
    assert info.visible_again_at == 1795863532937
    assert not info.is_order
    seven = ExtraInfo.parse("5 1 2 999 1 b 3")
    assert (seven.queue_offset, seven.is_order, seven.text()) == (None, True, "5 1 2 999 1 b 3")
    # Apache's Proxy appends the commit-log offset (its gRPC receipt handle); Java ignores any field after.
    proxied = ExtraInfo.parse(_HANDLE + " 310")
    assert (proxied.queue_offset, proxied.commit_log_offset, proxied.text()) == (0, 310, _HANDLE + " 310")
    assert ExtraInfo.parse(_HANDLE + " 310 whatever") == proxied


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1 2 3",
        "0 1 2 3 0 b",
        "x 1 2 3 0 b 1 2",
        "0 1 2 3 0 b 1 2 x",
        "0 1 2 3 7 b 1 2",
        f"0 1 2 {2**31} 0 b 1 2",
    ],
)
def test_malformed_extra_info_is_refused(text: str) -> None:
    with pytest.raises(CodecError):
        ExtraInfo.parse(text)


def test_retry_marks_and_real_topics() -> None:
    assert pop_retry_topic("T", "G") == "%RETRY%G_T"
    assert pop_retry_topic("T", "G", v2=True) == "%RETRY%G+T"
    assert [retry_mark(t) for t in ("T", "%RETRY%G_T", "%RETRY%G+T", "%RETRY%G")] == ["0", "1", "2", "1"]
    assert [real_topic("T", "G", m) for m in "012"] == ["T", "%RETRY%G_T", "%RETRY%G+T"]
    assert ExtraInfo.parse("0 1 2 3 1 b 0 4").real_topic("T", "G") == "%RETRY%G_T"
    with pytest.raises(CodecError):
        real_topic("T", "G", "3")


def test_offset_infos_build_and_parse() -> None:
    starts = build_offset_info([("T", 0, 5), ("%RETRY%G_T", 0, 7)])
    assert starts == "0 0 5;1 0 7"
    assert parse_start_offset_info(starts) == {"0@0": 5, "1@0": 7}
    offsets = build_offset_info([("T", 0, [5, 6, 9]), ("T", 1, [0])])
    assert offsets == "0 0 5,6,9;0 1 0"
    assert parse_msg_offset_info(offsets) == {"0@0": [5, 6, 9], "0@1": [0]}
    counts = build_offset_info([("T", queue_offset_key(2, 40), 3)])
    assert counts == "0 qo2%40 3"
    assert parse_order_count_info(counts) == {"0@qo2%40": 3}
    assert parse_start_offset_info(None) is None and parse_msg_offset_info("") is None
    with pytest.raises(CodecError, match="twice"):
        parse_start_offset_info("0 0 5;0 0 6")
    with pytest.raises(CodecError):
        parse_msg_offset_info("0 0")


def _answer(**kw: object) -> PopMessageResponseHeader:
    fields: dict[str, object] = {"pop_time": 1000, "invisible_time": 60000, "revive_qid": 3, "rest_num": 0}
    fields.update(kw)
    return PopMessageResponseHeader(**fields)  # type: ignore[arg-type]


def test_handles_from_a_5x_pop_answer() -> None:
    header = _answer(start_offset_info="0 1 4;0 2 0", msg_offset_info="0 1 4,6;0 2 0")
    messages = [PoppedMessage("T", 1, 4), PoppedMessage("T", 2, 0), PoppedMessage("T", 1, 6)]
    infos = popped_extra_infos(header, "b", messages)
    assert [i.text() for i in infos] == [
        "4 1000 60000 3 0 b 1 4",
        "0 1000 60000 3 0 b 2 0",
        "4 1000 60000 3 0 b 1 6",
    ]


def test_a_revived_message_keeps_the_handle_the_broker_gave_it() -> None:
    carried = "2 900 60000 3 1 b 0 2"
    header = _answer(start_offset_info="1 0 2;0 1 7", msg_offset_info="1 0 2;0 1 7")
    infos = popped_extra_infos(header, "b", [PoppedMessage("T", 0, 2, carried), PoppedMessage("T", 1, 7)])
    assert [i.text() for i in infos] == [carried, "7 1000 60000 3 0 b 1 7"]


def test_handles_from_an_answer_without_offset_infos() -> None:
    messages = [PoppedMessage("T", 1, 4), PoppedMessage("T", 1, 5), PoppedMessage("%RETRY%G_T", 0, 2)]
    infos = popped_extra_infos(_answer(), "b", messages)
    assert [i.text() for i in infos] == [
        "4 1000 60000 3 0 b 1 4",
        "4 1000 60000 3 0 b 1 5",
        "2 1000 60000 3 1 b 0 2",
    ]


def test_an_answer_that_does_not_list_a_queue_is_refused() -> None:
    with pytest.raises(CodecError, match="0@1"):
        popped_extra_infos(
            _answer(start_offset_info="0 2 0", msg_offset_info="0 2 0"), "b", [PoppedMessage("T", 1, 0)]
        )


def test_the_handle_after_a_change_of_invisible_time() -> None:
    request = ChangeInvisibleTimeRequestHeader(
        consumer_group="G", topic="%RETRY%G_T", queue_id=0, extra_info="0 1 2 3 1 b 0 9", offset=9,
        invisible_time=10000,
    )  # fmt: skip
    response = ChangeInvisibleTimeResponseHeader(pop_time=5000, invisible_time=10000, revive_qid=1)
    assert after_change(request, response, "b").text() == "9 5000 10000 1 1 b 0 9"


# -- bodies ------------------------------------------------------------------------------------------------


def test_bit_sets_are_javas_byte_arrays() -> None:
    assert bit_set_bytes([]) == b""
    assert bit_set_bytes([0, 2, 9]) == b"\x05\x02"
    assert bit_set_bytes([63]) == b"\x00" * 7 + b"\x80"
    assert bit_set_indexes(b"\x05\x02\x00") == (0, 2, 9)
    with pytest.raises(ValueError):
        bit_set_bytes([-1])


def test_batch_ack_json_is_fastjsons() -> None:
    ack = BatchAck(
        consumer_group="G", topic="T", retry="0", start_offset=5, queue_id=1, revive_queue_id=3,
        pop_time=1700000000000, invisible_time=60000, bits=(0, 2, 9),
    )  # fmt: skip
    body = BatchAckMessageRequestBody(broker_name="broker-a", acks=[ack])
    expected = (
        b'{"acks":[{"b":"BQI=","c":"G","it":60000,"pt":1700000000000,"q":1,"r":"0","rq":3,"so":5,"t":"T"}],'
        b'"brokerName":"broker-a"}'
    )
    assert body.to_json() == expected
    assert BatchAckMessageRequestBody.from_json(expected) == body
    assert ack.acked_offsets() == [5, 7, 14]
    # Java's primitives are always written; a null bit set and strings are left out.
    assert BatchAck().to_bean() is not None
    assert BatchAckMessageRequestBody(acks=[BatchAck()]).to_json() == (
        b'{"acks":[{"it":0,"pt":0,"q":0,"rq":0,"so":0}]}'
    )
    empty = BatchAck(bits=())
    assert BatchAckMessageRequestBody(acks=[empty]).to_json().startswith(b'{"acks":[{"b":"",')


def test_batch_ack_reads_the_long_names_and_byte_arrays_too() -> None:
    text = (
        '{"brokerName":"b","acks":[{"consumerGroup":"G","topic":"T","retry":"1","startOffset":3,"queueId":0,'
        '"reviveQueueId":2,"popTime":9,"invisibleTime":8,"bitSet":[5,2]}]}'
    )
    [ack] = BatchAckMessageRequestBody.from_json(text).acks or []
    assert ack == BatchAck(
        consumer_group="G", topic="T", retry="1", start_offset=3, queue_id=0, revive_queue_id=2, pop_time=9,
        invisible_time=8, bits=(0, 2, 9),
    )  # fmt: skip
    with pytest.raises(CodecError, match="base64"):
        BatchAckMessageRequestBody.from_json('{"acks":[{"b":"not base64!"}]}')
    assert base64.b64decode("BQI=") == b"\x05\x02"


def test_message_request_mode_bodies() -> None:
    body = SetMessageRequestModeRequestBody(
        topic="T", consumer_group="G", mode=MessageRequestMode.POP, pop_share_queue_num=8
    )
    text = b'{"consumerGroup":"G","mode":"POP","popShareQueueNum":8,"topic":"T"}'
    assert body.to_json() == text
    assert SetMessageRequestModeRequestBody.from_json(text) == body
    assert SetMessageRequestModeRequestBody().to_json() == b'{"mode":"PULL","popShareQueueNum":0}'
    assert SetMessageRequestModeRequestBody.from_json('{"mode":1}').mode is MessageRequestMode.POP
    with pytest.raises(CodecError, match="PULL or POP"):
        SetMessageRequestModeRequestBody.from_json('{"mode":"PUSH"}')

    wrapper = MessageRequestModeSerializeWrapper(
        message_request_mode_map={"T": {"G": body, "H": SetMessageRequestModeRequestBody(topic="T")}}
    )
    again = MessageRequestModeSerializeWrapper.from_json(wrapper.to_json())
    assert again.to_json() == wrapper.to_json()
    assert again.message_request_mode_map["T"]["G"] == body
    assert wrapper.to_json().startswith(b'{"messageRequestModeMap":{"T":{')
