"""The fastjson writer and reader: exact text for Java peers, tolerant reading of what they send."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_wire import fastjson
from rocketmq_wire.errors import CodecError
from rocketmq_wire.fastjson import Bean, ObjectKey, dump_bytes, dump_str, dumps, java_double_str, loads

# ---------------------------------------------------------------------------------------------- strings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
        ("\x00\x01\x0b\x1f", '"\\u0000\\u0001\\u000B\\u001F"'),
        ("\x7f\x80\x9f", '"\\u007F\\u0080\\u009F"'),
        ("\u2028\u2029", '"\\u2028\\u2029"'),
        ("a/b", '"a/b"'),
        ("\xa0", '"\xa0"'),
        ("中文ü€", '"中文ü€"'),
        ("😀", '"😀"'),
    ],
)
def test_dump_str_escapes_what_fastjson_escapes(text: str, expected: str) -> None:
    assert dump_str(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a/b", '"a\\/b"'),
        ("é", '"\\u00E9"'),
        ("\x7f", '"\\u007F"'),
        ("\x01\n", '"\\u0001\\n"'),
        ("😀", '"\\uD83D\\uDE00"'),
        ("ascii ~", '"ascii ~"'),
    ],
)
def test_browser_compatible_escapes_every_non_ascii_utf16_unit(text: str, expected: str) -> None:
    assert dumps(text, browser_compatible=True) == expected


@given(st.text())
def test_dump_str_output_is_json_for_the_same_text(text: str) -> None:
    quoted = dump_str(text)
    assert json.loads(quoted) == text
    # Only the characters fastjson escapes may appear escaped; the rest stay raw.
    for ch in text:
        code = ord(ch)
        if code >= 0x20 and ch not in '"\\' and not 0x7F <= code <= 0x9F and ch not in "\u2028\u2029":
            assert ch in quoted


@given(st.text())
def test_browser_output_is_pure_ascii_json_for_the_same_text(text: str) -> None:
    quoted = dumps(text, browser_compatible=True)
    assert quoted.isascii()
    assert json.loads(quoted) == text


def test_unpaired_surrogate_becomes_question_mark_like_java_getbytes() -> None:
    assert dump_bytes("a\ud800b") == b'"a?b"'


# ---------------------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.1, "0.1"),
        (0.1 + 0.2, "0.30000000000000004"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (1234567.0, "1234567.0"),
        (9999999.0, "9999999.0"),
        (1.0e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (1e21, "1.0E21"),
        (2e-5, "2.0E-5"),
        (32.79016295111467, "32.79016295111467"),
        (5e-324, "4.9E-324"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (-1.5e-7, "-1.5E-7"),
    ],
)
def test_double_layout_matches_java(value: float, expected: str) -> None:
    assert java_double_str(value) == expected
    assert dumps(value) == expected


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_double_is_null(value: float) -> None:
    assert dumps([value]) == "[null]"


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_text_reads_back_to_the_same_double(value: float) -> None:
    text = java_double_str(value)
    assert float(text) == value
    assert "." in text


def test_longs_outside_java_range_refused() -> None:
    assert dumps([-(1 << 63), (1 << 63) - 1]) == "[-9223372036854775808,9223372036854775807]"
    with pytest.raises(CodecError, match="long range"):
        dumps(1 << 63)


def test_browser_compatible_quotes_longs_beyond_2_pow_53() -> None:
    assert dumps([(1 << 53) - 1, 1 << 53, -(1 << 53)], browser_compatible=True) == (
        '[9007199254740991,"9007199254740992","-9007199254740992"]'
    )


# ---------------------------------------------------------------------------------------------- structures


def test_bean_properties_sorted_by_name_and_nulls_omitted() -> None:
    bean = Bean({"topic": "T", "brokerName": "b", "queueId": 0, "missing": None, "Zed": True})
    assert dumps(bean) == '{"Zed":true,"brokerName":"b","queueId":0,"topic":"T"}'


def test_map_keeps_given_order_writes_integer_keys_bare_and_drops_null_values() -> None:
    assert dumps({2: "b", 0: "a"}) == '{2:"b",0:"a"}'
    assert dumps({"z": None, "a": [None]}) == '{"a":[null]}'


def test_bean_as_map_key_written_as_object() -> None:
    key = Bean({"topic": "T", "queueId": 1})
    assert dumps({key: 5}) == '{{"queueId":1,"topic":"T"}:5}'


def test_browser_compatible_writes_non_string_keys_as_strings() -> None:
    assert dumps({0: "a"}, browser_compatible=True) == '{"0":"a"}'
    assert dumps({Bean({"a": "/"}): 1}, browser_compatible=True) == '{"{\\"a\\":\\"\\/\\"}":1}'


def test_sort_maps_orders_string_keys_by_utf16_and_integer_keys_numerically() -> None:
    assert dumps({"b": 1, "B": 2, "a": 3}, sort_maps=True) == '{"B":2,"a":3,"b":1}'
    assert dumps({10: "x", 2: "y", -1: "z"}, sort_maps=True) == '{-1:"z",2:"y",10:"x"}'
    # U+FF21 sorts before U+1F600 by code point but after it by UTF-16 unit (0xD83D), which Java uses.
    assert dumps({"Ａ": 2, "😀": 1}, sort_maps=True) == '{"😀":1,"Ａ":2}'


def test_unwritable_values_raise_codec_error() -> None:
    with pytest.raises(CodecError, match="set"):
        dumps({1, 2})  # type: ignore[arg-type]
    with pytest.raises(CodecError, match="bool map key"):
        dumps({True: 1})


# ---------------------------------------------------------------------------------------------- reader


def test_reads_standard_json_in_key_order() -> None:
    data = loads(b'{"b":1,"a":[true,false,null,1.5,"x"]}')
    assert list(data) == ["b", "a"]
    assert data["a"] == [True, False, None, 1.5, "x"]


def test_reads_bare_integer_keys_as_int() -> None:
    data = loads(b'{"brokerAddrs":{0:"127.0.0.1:10911",-3:"x"},"n":{"k":{1:[{2:3}]}}}')
    assert data == {"brokerAddrs": {0: "127.0.0.1:10911", -3: "x"}, "n": {"k": {1: [{2: 3}]}}}


def test_reads_object_keys_as_hashable_object_keys() -> None:
    data = loads(b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":7}}}')
    (key,) = data["offsetTable"]
    assert isinstance(key, ObjectKey)
    assert key.to_dict() == {"brokerName": "b", "queueId": 0, "topic": "T"}
    assert data["offsetTable"][key] == {"maxOffset": 7}


def test_object_key_round_trips_verbatim() -> None:
    text = '{{"b":1,"a":[1,{"c":2}]}:{0:"x"}}'
    assert dumps(loads(text)) == text


def test_reads_trailing_whitespace_as_the_cpp_client_sends() -> None:
    assert loads(b'{"clientID":"x"}\n') == {"clientID": "x"}
    assert loads(b" \t{0:1}\r\n") == {0: 1}


def test_standard_json_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any) -> None:
        raise AssertionError("the tolerant parser ran on standard JSON")

    monkeypatch.setattr(fastjson._TolerantParser, "parse", refuse)
    assert loads(b'{"a":{"0":1}}') == {"a": {"0": 1}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "position 0"),
        (b"{", "position 1"),
        (b'{"a":}', "position 5"),
        (b'{"a" 1}', "expected ':'"),
        (b"{0.5:1}", "must be an integer"),
        (b"[1,]", "position 3"),
        (b"[1 2]", "expected ',' or ']'"),
        (b'{"a":1}x', "unexpected data"),
        (b"{true:1}", "as map key"),
        (b'{0:"abc', "Unterminated string"),
        (b"\xff{}", "not valid UTF-8"),
        (b"NaN", "NaN"),
        (b"[" + b"1" * 5000 + b"]", "digits"),
        (b"{0:" + b"1" * 5000 + b"}", "digits"),
        (b"[" * 100_000, "nested too deeply"),
        (b"{0:" * 100_000, "nested too deeply"),
    ],
)
def test_malformed_input_raises_codec_error_with_position(data: bytes, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        loads(data)


def test_error_reports_line_and_column() -> None:
    with pytest.raises(CodecError, match=r"line 2, column 4"):
        loads(b"{0:1,\n 2 3}")


# ---------------------------------------------------------------------------------------------- round trips

_keys = st.one_of(st.text(max_size=8), st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(codec="utf-8")),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=300)
@given(_values)
def test_write_then_read_gives_back_the_value(value: Any) -> None:
    assert loads(dump_bytes(value)) == _without_null_entries(value)


def _without_null_entries(value: Any) -> Any:
    """What survives writing: map entries with a null value are dropped, list nulls stay."""
    if isinstance(value, dict):
        return {k: _without_null_entries(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_null_entries(v) for v in value]
    return value


@settings(max_examples=300)
@given(_values)
def test_write_read_write_is_stable(value: Any) -> None:
    text = dumps(value)
    assert dumps(loads(text)) == text


@settings(max_examples=200)
@given(
    st.recursive(
        _scalars, lambda inner: st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12
    )
)
def test_browser_compatible_output_is_strict_json(value: Any) -> None:
    text = dumps(value, browser_compatible=True, sort_maps=True)
    assert text.isascii()
    parsed = json.loads(text)
    assert loads(text) == parsed
