"""RemotingCommand unit behaviour: attributes, flags, both serializations, malformed input."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire import CodecError, ExtFields, LanguageCode, RemotingCommand, SerializeType
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.headers.base import CommandHeader, jint, jstr
from rocketmq_wire.javatext import java_utf8


def test_flag_helpers() -> None:
    cmd = RemotingCommand(code=RequestCode.SEND_MESSAGE)
    assert not cmd.is_response and not cmd.is_oneway
    cmd.mark_oneway()
    assert cmd.is_oneway and cmd.flag == 2
    response = cmd.make_response(ResponseCode.SYSTEM_ERROR, "boom")
    assert response.is_response and response.flag == 1
    assert response.opaque == cmd.opaque and response.remark == "boom"


def test_make_response_keeps_opaque_and_serialization() -> None:
    req = RemotingCommand(code=105, opaque=77, serialize_type=SerializeType.ROCKETMQ)
    resp = req.make_response(ResponseCode.TOPIC_NOT_EXIST, "no route")
    decoded = RemotingCommand.decode(resp.encode())
    assert decoded.opaque == 77
    assert decoded.serialize_type == SerializeType.ROCKETMQ
    assert decoded.code == 17 and decoded.remark == "no route" and decoded.is_response


def test_json_header_layout_matches_fastjson() -> None:
    cmd = RemotingCommand(
        code=105,
        language=LanguageCode.JAVA,
        version=409,
        opaque=3,
        ext_fields={"topic": "T"},
        remark="a\nb\u0001",
    )
    frame = cmd.encode()
    header = frame[8:].decode()
    assert header == (
        '{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":3,'
        '"remark":"a\\nb\\u0001","serializeTypeCurrentRPC":"JSON","version":409}'
    )
    (length, word) = struct.unpack(">II", frame[:8])
    assert length == len(frame) - 4 and word == len(header)


def test_no_ext_map_means_no_key_and_empty_map_means_empty_object() -> None:
    assert b"extFields" not in RemotingCommand(code=1).encode()
    assert b'"extFields":{}' in RemotingCommand(code=1, ext_fields={}).encode()


def test_ext_fields_come_out_in_java_hashmap_order_not_insertion_order() -> None:
    # "clusterName" and "brokerName" land in different buckets; Java writes bucket order.
    a = RemotingCommand(code=103, ext_fields={"brokerName": "b", "clusterName": "c", "brokerId": "0"})
    b = RemotingCommand(code=103, ext_fields={"clusterName": "c", "brokerId": "0", "brokerName": "b"})
    assert a.encode() == b.encode()
    header = json.loads(a.encode()[8:])
    assert list(header["extFields"]) == ["brokerId", "clusterName", "brokerName"]


def test_capacity_changes_the_order_and_survives_a_round_trip() -> None:
    keys = {"AccessKey": "a", "topic": "t", "Signature": "s"}
    small = RemotingCommand(code=105, ext_fields=ExtFields(keys))
    large = RemotingCommand(code=105, ext_fields=ExtFields(keys, capacity=256))
    assert small.encode() != large.encode()
    back = RemotingCommand.decode(large.encode())
    assert back.ext_fields is not None and back.ext_fields.capacity == 256
    assert back.encode() == large.encode()


class _DemoHeader(CommandHeader):
    pass


@pytest.mark.parametrize("serialize", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_typed_header_is_merged_into_ext_fields(serialize: SerializeType) -> None:
    import dataclasses

    @dataclasses.dataclass(slots=True)
    class Header(CommandHeader):
        topic: str = jstr("topic", required=True)
        queue_id: int = jint("queueId")

    cmd = RemotingCommand.request(
        30, Header(topic="T", queue_id=3), ext_fields={"extra": "x"}, serialize_type=serialize
    )
    decoded = RemotingCommand.decode(cmd.encode())
    assert decoded.fields() == {"topic": "T", "queueId": "3", "extra": "x"}
    header = decoded.read_header(Header)
    assert header == Header(topic="T", queue_id=3)
    with pytest.raises(CodecError, match="topic"):
        RemotingCommand(code=30, ext_fields={"queueId": "1"}).read_header(Header)
    with pytest.raises(CodecError, match="queueId"):
        RemotingCommand(code=30, ext_fields={"topic": "T", "queueId": "x1"}).read_header(Header)


def test_binary_header_drops_empty_remark_like_java() -> None:
    cmd = RemotingCommand(code=0, remark="", serialize_type=SerializeType.ROCKETMQ, flag=1)
    assert RemotingCommand.decode(cmd.encode()).remark is None


def test_values_that_do_not_fit_the_binary_header_are_refused() -> None:
    with pytest.raises(CodecError, match="code"):
        RemotingCommand(code=70000, serialize_type=SerializeType.ROCKETMQ).encode()


_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
_ext = st.dictionaries(_text, _text, max_size=12)


@given(
    code=st.integers(-(2**15), 2**15 - 1),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(0, 3),
    remark=st.none() | _text,
    ext=st.none() | _ext,
    body=st.binary(max_size=64),
    serialize=st.sampled_from(list(SerializeType)),
    language=st.sampled_from(list(LanguageCode)),
)
def test_round_trip(
    code: int,
    opaque: int,
    flag: int,
    remark: str | None,
    ext: dict[str, str] | None,
    body: bytes,
    serialize: SerializeType,
    language: LanguageCode,
) -> None:
    cmd = RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        body=body,
        serialize_type=serialize,
        language=language,
    )
    frame = cmd.encode()
    back = RemotingCommand.decode(frame)
    assert (back.code, back.opaque, back.flag, back.body, back.language) == (
        code,
        opaque,
        flag,
        body,
        language,
    )
    assert back.fields() == (ext or {})
    if serialize == SerializeType.JSON:
        assert back.remark == remark
        assert (back.ext_fields is None) == (ext is None)
    else:
        assert back.remark == (remark or None)
    assert back.encode() == frame


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (b"\x00\x00", "shorter than"),
        (struct.pack(">II", 10, 0), "length prefix"),
        (struct.pack(">II", 8, 50) + b"{}{}", "header length"),
        (struct.pack(">II", 6, 2) + b"{x", "does not parse"),
        (struct.pack(">II", 6, 2) + b"[]", "not an object"),
        (struct.pack(">II", 6, (7 << 24) | 2) + b"{}", "serialize type"),
        (struct.pack(">II", 18, (1 << 24) | 14) + b"\x00" * 14, "shorter than the fixed part"),
        (
            struct.pack(">II", 4 + 21, (1 << 24) | 21) + struct.pack(">hbhiiii", 1, 0, 1, 1, 0, 99, 0),
            "remark",
        ),
        (
            struct.pack(">II", 4 + 21, (1 << 24) | 21) + struct.pack(">hbhiiii", 1, 0, 1, 1, 0, 0, 5),
            "ext map",
        ),
        (
            struct.pack(">II", 4 + 18, 18) + b'{"code":"abc"}    ',
            "not an integer",
        ),
        (struct.pack(">II", 4 + 18, 18) + b'{"language":"XX"} ', "unknown language"),
        (struct.pack(">II", 4 + 25, 25) + b'{"extFields":{"a":[1]}}  ', "not a scalar"),
    ],
)
def test_malformed_frames_raise_codec_error(frame: bytes, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        RemotingCommand.decode(frame)


def test_binary_ext_entry_running_past_the_map_is_refused() -> None:
    entry = struct.pack(">h", 3) + b"key" + struct.pack(">i", 100) + b"v"
    header = struct.pack(">hbhiii", 1, 0, 1, 1, 0, 0) + struct.pack(">i", len(entry)) + entry
    frame = struct.pack(">II", 4 + len(header), (1 << 24) | len(header)) + header
    with pytest.raises(CodecError, match="value length 100"):
        RemotingCommand.decode(frame)


@given(st.text(max_size=30), st.text(max_size=30))
def test_json_fast_path_writes_what_fastjson_escaping_writes(key: str, value: str) -> None:
    """The C-encoder fast path must agree with the per-character fastjson writer on any text."""
    from rocketmq_wire.header_json import _fastjson_text, encode_json_header

    fast = encode_json_header(1, LanguageCode.JAVA, 409, 1, 0, value, [(key, value)])
    obj = {
        "code": 1,
        "extFields": {key: value},
        "flag": 0,
        "language": "JAVA",
        "opaque": 1,
        "remark": value,
        "serializeTypeCurrentRPC": "JSON",
        "version": 409,
    }
    assert fast == java_utf8(_fastjson_text(obj, {key: value}))  # a lone surrogate is "?" either way
