"""The properties string: both Java flavours, Java's lenient reader, HashMap ordering, user-property rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire.errors import CodecError
from rocketmq_wire.javahash import hashmap_order
from rocketmq_wire.message import (
    DECODED_MAP_CAPACITY_5X,
    PropertiesFlavour,
    const,
    decode_properties,
    decode_properties_bytes,
    detect_flavour,
    encode_java_properties,
    encode_properties,
    java_ordered,
    validate_user_property,
)

_names = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x01\x02"), min_size=1, max_size=12
)
_values = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x02"), min_size=1, max_size=20
)
_flavours = st.sampled_from(list(PropertiesFlavour))


def test_flavours_differ_only_in_the_trailing_separator() -> None:
    props = {"KEYS": "k1 k2", "TAGS": "TagA"}
    assert encode_properties(props, PropertiesFlavour.V4) == "KEYS\x01k1 k2\x02TAGS\x01TagA"
    assert encode_properties(props, PropertiesFlavour.V5) == "KEYS\x01k1 k2\x02TAGS\x01TagA\x02"
    assert encode_properties({}, PropertiesFlavour.V4) == encode_properties({}, PropertiesFlavour.V5) == ""


def test_none_values_are_left_out_as_java_leaves_out_nulls() -> None:
    assert (
        encode_properties([("a", "1"), ("b", None), ("c", "3")], PropertiesFlavour.V4) == "a\x011\x02c\x013"
    )


@given(st.dictionaries(_names, _values, max_size=10), _flavours)
def test_round_trip(props: dict[str, str], flavour: PropertiesFlavour) -> None:
    text = encode_properties(props, flavour)
    assert decode_properties(text) == props
    assert list(decode_properties(text)) == list(props)
    if props:
        assert detect_flavour(text) is flavour
    assert decode_properties_bytes(text.encode()) == props


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\x011\x02", {"a": "1"}),  # trailing separator
        ("a\x011", {"a": "1"}),  # none
        ("a\x01\x02b\x012", {"b": "2"}),  # empty value: skipped, as Java skips it
        ("\x011\x02b\x012", {"b": "2"}),  # empty name
        ("junk\x02b\x012", {"b": "2"}),  # no name/value separator
        ("\x02\x02a\x011\x02\x02", {"a": "1"}),  # empty items
        ("a\x011\x01x\x02", {"a": "1\x01x"}),  # the value runs to the pair's end
        ("a\x011\x02b\x012\x02a\x013", {"a": "3", "b": "2"}),  # repeated: first place, last value
        ("", {}),
    ],
)
def test_lenient_decoding(text: str, expected: dict[str, str]) -> None:
    decoded = decode_properties(text)
    assert decoded == expected
    assert list(decoded) == list(expected)


@given(st.text(st.sampled_from("ab\x01\x02"), max_size=30))
def test_decoding_never_raises_and_keeps_only_whole_pairs(text: str) -> None:
    for name, value in decode_properties(text).items():
        assert name and value
        assert "\x02" not in name + value and "\x01" not in name


def test_invalid_utf8_is_a_codec_error() -> None:
    with pytest.raises(CodecError, match="not valid UTF-8"):
        decode_properties_bytes(b"a\x01\xff\xfe")


@pytest.mark.parametrize(
    "props",
    [{"": "v"}, {"a\x01b": "v"}, {"a\x02": "v"}, {"a": "x\x02y"}],
)
def test_pairs_that_would_not_read_back_are_refused(props: dict[str, str]) -> None:
    with pytest.raises(CodecError):
        encode_properties(props)


def test_java_order_is_hashmap_order_of_the_insertions() -> None:
    inserted = {"TAGS": "t", "KEYS": "k", "WAIT": "true", "color": "blue", "DELAY": "2", "UNIQ_KEY": "u"}
    ordered = java_ordered(inserted)
    assert list(ordered) == hashmap_order(list(inserted))
    assert ordered == inserted
    # WAIT and DELAY share a bucket of a 16-slot table: insertion order decides between them.
    assert list(ordered).index("WAIT") < list(ordered).index("DELAY")
    swapped = dict(reversed(list(inserted.items())))
    assert list(java_ordered(swapped)).index("DELAY") < list(java_ordered(swapped)).index("WAIT")


def test_a_128_slot_map_orders_differently() -> None:
    props = {"UNIQ_KEY": "u", "CLUSTER": "c", "MSG_REGION": "r", "TAGS": "t", "KEYS": "k", "REAL_TOPIC": "x"}
    default = list(java_ordered(props))
    wide = list(java_ordered(props, DECODED_MAP_CAPACITY_5X))
    assert wide == hashmap_order(list(props), DECODED_MAP_CAPACITY_5X)
    assert default != wide
    assert encode_java_properties(props, PropertiesFlavour.V5, DECODED_MAP_CAPACITY_5X) == encode_properties(
        {k: props[k] for k in wide}, PropertiesFlavour.V5
    )


@given(st.dictionaries(_names, _values, max_size=20))
def test_java_ordering_is_stable_under_reencoding(props: dict[str, str]) -> None:
    once = java_ordered(props)
    assert java_ordered(once) == once
    assert list(java_ordered(once)) == list(once)


@pytest.mark.parametrize("name", sorted(const.SYSTEM_PROPERTY_NAMES))
def test_system_names_are_refused_as_user_properties(name: str) -> None:
    with pytest.raises(CodecError, match="reserved"):
        validate_user_property(name, "x")


@pytest.mark.parametrize(("name", "value"), [(" ", "v"), ("n", " "), ("n", ""), ("n", "a\x02b")])
def test_blank_or_corrupting_user_properties_are_refused(name: str, value: str) -> None:
    with pytest.raises(CodecError):
        validate_user_property(name, value)


def test_sharding_key_and_start_deliver_time_are_not_reserved() -> None:
    validate_user_property(const.SHARDING_KEY, "order-1")
    validate_user_property(const.START_DELIVER_TIME, "1700000000000")


def _decode_pair_by_pair(text: str) -> dict[str, str]:
    """Java's lenient reader, item by item: the behaviour decode_properties' one-pass path must keep."""
    result: dict[str, str] = {}
    for item in text.split("\x02"):
        name, sep, value = item.partition("\x01")
        if sep and name and value:
            result[name] = value
    return result


_separated = st.text(st.sampled_from(["a", "b", "é", "\x01", "\x02"]), max_size=24)


@given(_separated)
def test_decode_agrees_with_the_pair_by_pair_reader(text: str) -> None:
    decoded = decode_properties(text)
    expected = _decode_pair_by_pair(text)
    assert decoded == expected
    assert list(decoded) == list(expected)


def _valid_pair(name: str, value: str) -> bool:
    return bool(name) and "\x01" not in name and "\x02" not in name and "\x02" not in value


@given(st.lists(st.tuples(_separated, st.one_of(st.none(), _separated)), max_size=5), _flavours)
def test_encode_refuses_exactly_the_pairs_that_would_not_read_back(
    pairs: list[tuple[str, str | None]], flavour: PropertiesFlavour
) -> None:
    if all(_valid_pair(name, value) for name, value in pairs if value is not None):
        text = encode_properties(pairs, flavour)
        kept = [(name, value) for name, value in pairs if value is not None]
        assert text.rstrip("\x02") == "\x02".join(f"{name}\x01{value}" for name, value in kept).rstrip("\x02")
    else:
        with pytest.raises(CodecError):
            encode_properties(pairs, flavour)
