"""SEND_BATCH_MESSAGE bodies: round trips, the construct layout, hostile input, broker-side merging."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import (
    BatchEntry,
    Message,
    PropertiesFlavour,
    decode_batch,
    encode_batch,
    merge_batch_properties,
)
from rocketmq_wire.message.layout import BATCH_ENTRY

_entries = st.builds(
    BatchEntry,
    body=st.binary(max_size=40),
    properties_string=st.text(st.characters(exclude_categories=("Cs",)), max_size=30),
    flag=st.integers(-(2**31), 2**31 - 1),
    magic=st.integers(-(2**31), 2**31 - 1),
    body_crc=st.integers(-(2**31), 2**31 - 1),
)


@given(st.lists(_entries, max_size=6))
def test_round_trip(entries: list[BatchEntry]) -> None:
    body = encode_batch(entries)
    assert decode_batch(body) == entries
    assert decode_batch(bytearray(body)) == entries


@given(_entries)
def test_fast_path_agrees_with_the_construct_layout(entry: BatchEntry) -> None:
    body = encode_batch([entry])
    parsed = BATCH_ENTRY.parse(body)
    assert parsed.total_size == len(body)
    assert (parsed.magic, parsed.body_crc, parsed.flag) == (entry.magic, entry.body_crc, entry.flag)
    assert parsed.body == entry.body
    assert parsed.properties.decode() == entry.properties_string
    assert BATCH_ENTRY.build(parsed) == body


def test_java_layout_of_one_entry() -> None:
    entry = Message("T", b"batch body 0", tags="Batch", keys=["k0"]).to_batch_entry(PropertiesFlavour.V4)
    body = encode_batch([entry])
    props = entry.properties_string.encode()
    assert (
        body
        == struct.pack(">iiiii", 20 + 12 + 2 + len(props), 0, 0, 0, 12)
        + b"batch body 0"
        + struct.pack(">h", len(props))
        + props
    )
    assert entry.properties == {"TAGS": "Batch", "KEYS": "k0", "WAIT": "true"}


def test_every_truncation_is_a_codec_error() -> None:
    body = encode_batch([BatchEntry(b"abc", "a\x01b"), BatchEntry(b"", "")])
    for cut in range(1, len(body)):
        if cut == len(encode_batch([BatchEntry(b"abc", "a\x01b")])):
            continue  # a whole first entry is a valid body on its own
        with pytest.raises(CodecError):
            decode_batch(body[:cut])


@settings(max_examples=300)
@given(st.lists(_entries, min_size=1, max_size=3), st.data())
def test_mutated_bodies_raise_only_codec_errors(entries: list[BatchEntry], data: st.DataObject) -> None:
    body = bytearray(encode_batch(entries))
    for _ in range(data.draw(st.integers(1, 4))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    try:
        for entry in decode_batch(bytes(body)):
            _ = entry.properties
    except CodecError:
        pass


def test_oversized_properties_are_refused() -> None:
    with pytest.raises(CodecError, match="properties of"):
        encode_batch([BatchEntry(b"", "x" * 40000)])


@pytest.mark.parametrize(
    ("entry", "batch", "stored"),
    [
        (
            "KEYS\x01k\x02WAIT\x01true",
            "CLUSTER\x01c\x02WAIT\x01true",
            "KEYS\x01k\x02WAIT\x01true\x02CLUSTER\x01c\x02WAIT\x01true",
        ),
        ("KEYS\x01k\x02", "CLUSTER\x01c\x02", "KEYS\x01k\x02CLUSTER\x01c\x02"),
        ("", "CLUSTER\x01c", "CLUSTER\x01c"),
        ("KEYS\x01k", "", "KEYS\x01k"),
    ],
)
def test_broker_merges_entry_and_batch_properties(entry: str, batch: str, stored: str) -> None:
    assert merge_batch_properties(entry, batch) == stored
