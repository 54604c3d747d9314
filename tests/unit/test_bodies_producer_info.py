"""GET_ALL_PRODUCER_INFO on the wire: the answer's body (``ProducerTableInfo``) exactly as a 4.9.8 broker
writes it and reading it back -- bean properties sorted by name, groups in ``HashMap`` order, the slash Java
puts before an address -- and the request's empty header.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_wire.bodies import ProducerInfo, ProducerTableInfo
from rocketmq_wire.bodies.registry import decode_response_body
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers import GetAllProducerInfoRequestHeader, header_for_request
from rocketmq_wire.javahash import hashmap_order


def _info(client_id: str, remote_ip: str = "/127.0.0.1:54321") -> ProducerInfo:
    return ProducerInfo(
        client_id=client_id,
        remote_ip=remote_ip,
        language="JAVA",
        version=409,
        last_update_timestamp=1_700_000_000_123,
    )


def test_producer_info_writes_its_properties_in_name_order() -> None:
    # fastjson sorts bean properties by name: remoteIP comes after lastUpdateTimestamp, before version
    assert _info("10.0.0.1@4711").to_json() == (
        b'{"clientId":"10.0.0.1@4711","language":"JAVA","lastUpdateTimestamp":1700000000123,'
        b'"remoteIP":"/127.0.0.1:54321","version":409}'
    )


def test_the_remote_ip_keeps_javas_leading_slash() -> None:
    text = b'{"clientId":"c","language":"PYTHON","remoteIP":"/10.1.2.3:60001","version":409}'
    info = ProducerInfo.from_json(text)
    assert (info.remote_ip, info.language, info.last_update_timestamp) == ("/10.1.2.3:60001", "PYTHON", 0)
    assert info.to_json() == (
        b'{"clientId":"c","language":"PYTHON","lastUpdateTimestamp":0,"remoteIP":"/10.1.2.3:60001",'
        b'"version":409}'
    )


def test_groups_are_written_in_hash_map_order() -> None:
    # "a" (hash 97) and "b" (98) take buckets 1 and 2 whatever the insertion order; "Aa" and "BB" share
    # hash 2112 (bucket 0), so those two keep the order they were put in.
    table = ProducerTableInfo(data={"b": [_info("p2")], "BB": [], "a": [_info("p1")], "Aa": []})
    assert table.to_json() == (
        b'{"data":{"BB":[],"Aa":[],'
        b'"a":[{"clientId":"p1","language":"JAVA","lastUpdateTimestamp":1700000000123,'
        b'"remoteIP":"/127.0.0.1:54321","version":409}],'
        b'"b":[{"clientId":"p2","language":"JAVA","lastUpdateTimestamp":1700000000123,'
        b'"remoteIP":"/127.0.0.1:54321","version":409}]}}'
    )
    swapped = ProducerTableInfo(data={"Aa": [], "BB": []}).to_json()
    assert swapped == b'{"data":{"Aa":[],"BB":[]}}'


def test_a_grown_map_is_ordered_by_its_larger_table() -> None:
    # 13 groups push a default HashMap past 12 entries, from 16 buckets to 32
    groups = [f"ProducerGroup{i}" for i in range(13)] + ["CLIENT_INNER_PRODUCER"]
    table = ProducerTableInfo(data={g: [_info(f"{g}@1")] for g in groups})
    decoded = ProducerTableInfo.from_json(table.to_json())
    assert list(decoded.data) == hashmap_order(groups)
    assert decoded.data == table.data
    assert decoded.to_json() == table.to_json()


def test_reading_a_broker_answer() -> None:
    answer = (
        b'{"data":{"CLIENT_INNER_PRODUCER":[{"clientId":"10.0.0.1@1","language":"JAVA",'
        b'"lastUpdateTimestamp":5,"remoteIP":"/10.0.0.1:1234","version":479}],"Empty":null}}'
    )
    body = decode_response_body(RequestCode.GET_ALL_PRODUCER_INFO, answer)
    assert isinstance(body, ProducerTableInfo)
    [inner] = body.data["CLIENT_INNER_PRODUCER"]
    assert (inner.client_id, inner.remote_ip, inner.version, inner.last_update_timestamp) == (
        "10.0.0.1@1",
        "/10.0.0.1:1234",
        479,
        5,
    )
    assert body.data["Empty"] == []  # a null list reads as no instances
    assert ProducerTableInfo.from_json(b"{}").data == {}
    assert ProducerInfo.from_json(b'{"language":3}').language == "PYTHON"  # ordinals, as C++ peers send


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (b'{"data":[]}', "ProducerTableInfo.data"),
        (b'{"data":{"G":{}}}', "ProducerTableInfo.data['G']"),
        (b'{"data":{"G":[{"version":"x"}]}}', "ProducerTableInfo.data['G'][0].version"),
        (
            b'{"data":{"G":[{"lastUpdateTimestamp":true}]}}',
            "ProducerTableInfo.data['G'][0].lastUpdateTimestamp",
        ),
    ],
)
def test_malformed_answers_name_the_field(text: bytes, where: str) -> None:
    with pytest.raises(CodecError, match=rf"^{re.escape(where)}"):
        ProducerTableInfo.from_json(text)


_names = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=1, max_size=12)
_infos = st.builds(
    ProducerInfo,
    client_id=_names,
    remote_ip=_names.map(lambda s: f"/{s}"),
    language=st.sampled_from(["JAVA", "PYTHON", "GO", "CPP"]),
    version=st.integers(0, (1 << 31) - 1),
    last_update_timestamp=st.integers(0, 1 << 62),
)


@settings(max_examples=60)
@given(st.dictionaries(_names, st.lists(_infos, max_size=3), max_size=20))
def test_round_trip_and_stable_rewrite(data: dict[str, list[ProducerInfo]]) -> None:
    written = ProducerTableInfo(data=data).to_json()
    parsed = ProducerTableInfo.from_json(written)
    assert parsed.data == data
    assert list(parsed.data) == hashmap_order(data)
    assert parsed.to_json() == written


def test_the_request_header_has_no_fields() -> None:
    """Java's ``GetAllProducerInfoRequestHeader`` is empty: the request carries no ext entries at all."""
    assert header_for_request(RequestCode.GET_ALL_PRODUCER_INFO) is GetAllProducerInfoRequestHeader
    request = RemotingCommand.request(RequestCode.GET_ALL_PRODUCER_INFO, GetAllProducerInfoRequestHeader())
    assert request.fields() == {}
    decoded = RemotingCommand.decode(request.encode())
    assert decoded.code == 328 and decoded.read_header(GetAllProducerInfoRequestHeader).ext_items() == []
