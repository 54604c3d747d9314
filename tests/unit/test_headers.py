"""Typed headers: the catalogue, rendering and parsing as Java does it, V1/V2 conversion, round trips."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rocketmq_wire.headers as headers_pkg
from rocketmq_wire.codes import RequestCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers import (
    ALL_HEADERS,
    FAST_PATH_HEADERS,
    REQUEST_HEADERS,
    RESPONSE_HEADERS,
    CreateTopicRequestHeader,
    EndTransactionRequestHeader,
    GetLiteClientInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    RegisterBrokerRequestHeader,
    ResetOffsetRequestHeader,
    RpcRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    TopicRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    header_for_request,
    header_for_response,
)
from rocketmq_wire.headers.base import CommandHeader, JavaField, java_int_range

_SNAKE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
_ROUTING_KEYS = ("ns", "nsd", "bname", "oway", "lo")
_JAVA_LONG = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
# Header values travel as UTF-8; lone surrogates cannot, so they are not header values.
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)


# -- the catalogue ---------------------------------------------------------------------------------------


def _defined_header_classes() -> set[type[CommandHeader]]:
    found: set[type[CommandHeader]] = set()
    for info in pkgutil.iter_modules(headers_pkg.__path__):
        module = importlib.import_module(f"{headers_pkg.__name__}.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, CommandHeader) and obj.__module__ == module.__name__:
                found.add(obj)
    return found - {CommandHeader, RpcRequestHeader, TopicRequestHeader}


def test_all_headers_lists_every_header_class_once() -> None:
    assert len(set(ALL_HEADERS)) == len(ALL_HEADERS)
    assert set(ALL_HEADERS) == _defined_header_classes()
    assert set(headers_pkg.__all__) >= {cls.__name__ for cls in ALL_HEADERS}


@pytest.mark.parametrize("cls", ALL_HEADERS, ids=lambda c: c.__name__)
def test_fields_have_unique_wire_names_and_snake_case_attributes(cls: type[CommandHeader]) -> None:
    fields = cls.java_fields()
    names = [f.java for f in fields]
    assert len(set(names)) == len(names)
    assert all(_SNAKE.fullmatch(f.attr) for f in fields), [f.attr for f in fields]
    assert all(f.kind in (str, int, bool) for f in fields)
    assert len(fields) == len(dataclasses.fields(cls))  # no attribute that would not reach the wire
    with pytest.raises(TypeError):
        cls("positional")  # type: ignore[call-arg]  # kw_only: field order is wire order, not an API


def test_request_registry_maps_every_claimed_code_back_to_its_class() -> None:
    claimed = {int(code): cls for cls in ALL_HEADERS for code in cls.REQUEST_CODES}
    assert dict(REQUEST_HEADERS) == claimed
    assert sum(len(cls.REQUEST_CODES) for cls in ALL_HEADERS) == len(claimed)  # no code claimed twice
    for code, cls in claimed.items():
        assert header_for_request(code) is cls
        assert not RequestCode(code).name.startswith("UNKNOWN_")
    assert header_for_request(RequestCode.GET_BROKER_RUNTIME_INFO) is None  # Java sends no header
    assert header_for_request(99999) is None


def test_response_registry_points_at_response_headers() -> None:
    for request_code, cls in RESPONSE_HEADERS.items():
        assert not RequestCode(request_code).name.startswith("UNKNOWN_")
        assert cls.REQUEST_CODES == ()
        assert header_for_response(request_code) is cls
    assert header_for_response(RequestCode.SEND_MESSAGE_V2) is SendMessageResponseHeader
    assert header_for_response(RequestCode.PULL_MESSAGE) is PullMessageResponseHeader
    assert header_for_response(RequestCode.HEART_BEAT) is None


def test_fast_path_headers_cover_their_fields_in_wire_order() -> None:
    assert set(FAST_PATH_HEADERS) == {cls for cls in ALL_HEADERS if cls.FAST_FIELDS}
    assert len(FAST_PATH_HEADERS) == 4
    for cls in FAST_PATH_HEADERS:
        names = [f.java for f in cls.java_fields()]
        assert len(set(cls.FAST_FIELDS)) == len(cls.FAST_FIELDS)
        missing = set(names) - set(cls.FAST_FIELDS)
        # Only V2's inherited routing fields stay off its fast path, as in Java.
        assert missing == (set(_ROUTING_KEYS) if cls is SendMessageRequestHeaderV2 else set())
        assert set(cls.FAST_FIELDS) <= set(names)
    assert SendMessageRequestHeaderV2.FAST_FIELDS == tuple("abcdefghijklmn")
    assert PullMessageRequestHeader.FAST_FIELDS[:3] == ("consumerGroup", "topic", "liteTopic")
    # The codec tells response fast-path headers by their having no request code.
    assert {cls for cls in FAST_PATH_HEADERS if not cls.REQUEST_CODES} == {
        SendMessageResponseHeader,
        PullMessageResponseHeader,
    }


def test_routing_fields_are_inherited_with_java_names() -> None:
    assert [f.java for f in RpcRequestHeader.java_fields()] == ["ns", "nsd", "bname", "oway"]
    assert [f.java for f in TopicRequestHeader.java_fields()][-1] == "lo"
    update = [f.java for f in UpdateConsumerOffsetRequestHeader.java_fields()]
    assert update.index("bname") < update.index("commitOffset")
    pull = [f.java for f in PullMessageRequestHeader.java_fields()]
    assert pull.index("commitOffset") < pull.index("bname")
    assert pull[-5:] == ["lo", "ns", "nsd", "bname", "oway"]


# -- rendering and parsing -------------------------------------------------------------------------------


def test_ext_items_render_like_java_to_string_in_declared_order() -> None:
    header = RegisterBrokerRequestHeader(
        broker_name="broker-a",
        broker_addr="127.0.0.1:10911",
        cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:10912",
        broker_id=0,
        compressed=False,
        body_crc32=-1742938275,
        enable_acting_master=True,
    )
    assert list(header.ext_items()) == [
        ("brokerName", "broker-a"),
        ("brokerAddr", "127.0.0.1:10911"),
        ("clusterName", "DefaultCluster"),
        ("haServerAddr", "127.0.0.1:10912"),
        ("brokerId", "0"),
        ("enableActingMaster", "true"),
        ("compressed", "false"),
        ("bodyCrc32", "-1742938275"),
    ]  # heartbeatTimeoutMillis is unset, so absent: Java skips nulls


def test_unknown_entries_are_ignored_and_booleans_parse_like_java() -> None:
    ext = {"topic": "T", "queueId": "3", "committed": "TRUE", "Signature": "x", "ReqT": "0"}
    from rocketmq_wire.headers import GetMaxOffsetRequestHeader

    header = GetMaxOffsetRequestHeader.from_ext(ext)
    assert (header.topic, header.queue_id, header.committed) == ("T", 3, True)
    assert GetMaxOffsetRequestHeader.from_ext({**ext, "committed": "yes"}).committed is False


def _sample_ext(cls: type[CommandHeader]) -> dict[str, str]:
    """A valid ext map with every field of the class set."""
    values = {str: "v", int: "12", bool: "true"}
    ext = {f.java: values[f.kind] for f in cls.java_fields()}
    if cls is EndTransactionRequestHeader:
        ext["commitOrRollback"] = "8"
    if cls is CreateTopicRequestHeader:
        ext["topicFilterType"] = "SINGLE_TAG"
    return ext


def _cases(predicate: Any) -> list[tuple[type[CommandHeader], JavaField]]:
    return [(cls, f) for cls in ALL_HEADERS for f in cls.java_fields() if predicate(f)]


def _case_id(x: object) -> str:
    return str(getattr(x, "__name__", getattr(x, "java", "")))


@pytest.mark.parametrize(
    ("cls", "field"),
    _cases(lambda f: f.required),
    ids=_case_id,
)
def test_missing_required_field_raises_codec_error(cls: type[CommandHeader], field: JavaField) -> None:
    ext = _sample_ext(cls)
    cls.from_ext(ext)  # complete: fine
    del ext[field.java]
    with pytest.raises(CodecError, match=f"<{field.java}> is null"):
        cls.from_ext(ext)


@pytest.mark.parametrize(
    ("cls", "field"),
    _cases(lambda f: f.kind is int),
    ids=_case_id,
)
@pytest.mark.parametrize("bad", ["", "1.5", "0x10", "12a", "--1", "1 "])
def test_malformed_number_raises_codec_error(cls: type[CommandHeader], field: JavaField, bad: str) -> None:
    ext = _sample_ext(cls)
    ext[field.java] = bad
    with pytest.raises(CodecError, match=re.escape(field.java)):
        cls.from_ext(ext)


def test_required_fields_follow_java_not_null_annotations() -> None:
    required = {f.java for f in PullMessageRequestHeader.java_fields() if f.required}
    assert required == {
        "consumerGroup",
        "topic",
        "queueId",
        "queueOffset",
        "maxMsgNums",
        "sysFlag",
        "commitOffset",
        "suspendTimeoutMillis",
        "subVersion",
    }
    assert {f.java for f in ResetOffsetRequestHeader.java_fields() if f.required} == {
        "topic",
        "group",
        "timestamp",
        "isForce",
    }


def test_end_transaction_rejects_a_verdict_java_rejects() -> None:
    ext = _sample_ext(EndTransactionRequestHeader)
    for verdict in ("0", "8", "12"):
        ext["commitOrRollback"] = verdict
        assert EndTransactionRequestHeader.from_ext(ext).commit_or_rollback == int(verdict)
    ext["commitOrRollback"] = "4"  # prepared is a message flag, not a verdict
    with pytest.raises(CodecError, match="commitOrRollback 4"):
        EndTransactionRequestHeader.from_ext(ext)


def test_create_topic_rejects_an_unknown_filter_type() -> None:
    ext = _sample_ext(CreateTopicRequestHeader)
    ext["topicFilterType"] = "MULTI_TAG"
    assert CreateTopicRequestHeader.from_ext(ext).topic_filter_type == "MULTI_TAG"
    ext["topicFilterType"] = "single_tag"
    with pytest.raises(CodecError, match="topicFilterType 'single_tag'"):
        CreateTopicRequestHeader.from_ext(ext)


# -- send V1 <-> V2 --------------------------------------------------------------------------------------


def _full_v1() -> SendMessageRequestHeader:
    return SendMessageRequestHeader(
        producer_group="GoldenProducerGroup",
        topic="GoldenTopic",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=2,
        sys_flag=0,
        born_timestamp=1795314077650,
        flag=0,
        properties="KEYS\x01KeyM\x02WAIT\x01true",
        reconsume_times=1,
        unit_mode=False,
        batch=True,
        max_reconsume_times=16,
        bname="broker-a",
    )


def test_v1_to_v2_uses_the_single_letter_keys() -> None:
    v2 = _full_v1().to_v2()
    assert list(v2.ext_items()) == [
        ("a", "GoldenProducerGroup"),
        ("b", "GoldenTopic"),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", "2"),
        ("f", "0"),
        ("g", "1795314077650"),
        ("h", "0"),
        ("i", "KEYS\x01KeyM\x02WAIT\x01true"),
        ("j", "1"),
        ("k", "false"),
        ("l", "16"),
        ("m", "true"),
        ("n", "broker-a"),
    ]
    assert v2.to_v1() == _full_v1()
    assert SendMessageRequestHeaderV2.from_v1(_full_v1()) == v2
    assert SendMessageRequestHeader.from_v2(v2) == _full_v1()


def test_v1_to_v2_fills_java_defaults_and_drops_other_routing_fields() -> None:
    v1 = dataclasses.replace(_full_v1(), reconsume_times=None, unit_mode=None, batch=None, namespace="ns1")
    v2 = v1.to_v2()
    assert (v2.reconsume_times, v2.unit_mode, v2.batch) == (0, False, False)
    assert v2.namespace is None and v2.broker_name == "broker-a" and v2.bname is None
    back = dataclasses.replace(v2, reconsume_times=None, unit_mode=None, batch=None).to_v1()
    assert (back.reconsume_times, back.unit_mode, back.batch) == (None, None, None)  # V2 -> V1 copies as is


# -- round trips -----------------------------------------------------------------------------------------

_KIND_STRATEGY: dict[type, st.SearchStrategy[Any]] = {str: _TEXT, int: _JAVA_LONG, bool: st.booleans()}
_OVERRIDES: dict[tuple[type[CommandHeader], str], st.SearchStrategy[Any]] = {
    (EndTransactionRequestHeader, "commitOrRollback"): st.sampled_from([0, 8, 12]),
    (CreateTopicRequestHeader, "topicFilterType"): st.sampled_from(["SINGLE_TAG", "MULTI_TAG"]),
}


#: Fields a header's ``checkFields`` insists on (set, and in range) although Java does not mark them required.
_CHECKED: dict[tuple[type[CommandHeader], str], st.SearchStrategy[Any]] = {
    (GetLiteClientInfoRequestHeader, "maxCount"): st.integers(min_value=1, max_value=(1 << 31) - 1),
}


def header_strategy(cls: type[CommandHeader]) -> st.SearchStrategy[CommandHeader]:
    """Any header of the class that Java could decode: required fields set, the rest maybe null."""
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in cls.java_fields():
        kind = _KIND_STRATEGY[f.kind]
        if f.kind is int:
            low, high = java_int_range(f.bits)  # what the field's Java type holds
            kind = st.integers(min_value=low, max_value=high)
        value = _OVERRIDES.get((cls, f.java), kind)
        checked = _CHECKED.get((cls, f.java))
        kwargs[f.attr] = checked if checked is not None else value if f.required else st.none() | value
    return st.builds(cls, **kwargs)


_any_header = st.sampled_from(ALL_HEADERS).flatmap(header_strategy)


@given(header=_any_header)
@settings(max_examples=400)
def test_from_ext_of_to_ext_is_identity(header: CommandHeader) -> None:
    ext = header.to_ext()
    assert list(ext) == [k for k, _ in header.ext_items()]
    assert type(header).from_ext(ext) == header


@given(header=st.sampled_from([c for c in ALL_HEADERS if c.REQUEST_CODES]).flatmap(header_strategy))
@settings(max_examples=300)
@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_requests_carry_their_header_through_the_codec(
    serialize_type: SerializeType, header: CommandHeader
) -> None:
    cls = type(header)
    if serialize_type == SerializeType.ROCKETMQ and cls.REQUEST_CODES[0] > 0x7FFF:
        return  # the binary header holds a code in 16 bits: 5.x's POP codes travel in JSON only
    cmd = RemotingCommand.request(cls.REQUEST_CODES[0], header, serialize_type=serialize_type)
    decoded = RemotingCommand.decode(cmd.encode())
    expected = header
    if serialize_type == SerializeType.ROCKETMQ and cls.FAST_FIELDS:
        # As in Java, the binary fast path writes only its own fields (V2 leaves the routing ones behind).
        dropped = {f.attr: None for f in cls.java_fields() if f.java not in cls.FAST_FIELDS}
        expected = dataclasses.replace(header, **dropped)
    assert decoded.read_header(cls) == expected
    assert header_for_request(decoded.code) is type(header)
