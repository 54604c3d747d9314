"""Java String.hashCode and HashMap iteration order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire.javahash import (
    ExtFields,
    final_table_size,
    hashmap_order,
    infer_capacity,
    is_hashmap_order,
    java_string_hash,
    table_size_for,
)


def test_string_hash_matches_java_values() -> None:
    # Values Java prints for "".hashCode(), "a", "hello", "TBW102", a non-BMP character and a long string.
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == (-2147483648) & 0xFFFFFFFF
    assert java_string_hash("\U0001f600") == ((31 * 0xD83D + 0xDE00) & 0xFFFFFFFF)


def test_table_sizes_follow_java_growth() -> None:
    assert table_size_for(256) == 256 and table_size_for(200) == 256 and table_size_for(1) == 1
    assert final_table_size(12) == 16
    assert final_table_size(13) == 32
    assert final_table_size(25) == 64
    assert final_table_size(13, 256) == 256


def test_order_is_bucket_then_insertion() -> None:
    # "Aa" and "BB" have the same hashCode, so they share a bucket and keep insertion order.
    assert java_string_hash("Aa") == java_string_hash("BB")
    assert hashmap_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]


@given(st.lists(st.text(max_size=8), unique=True, max_size=40), st.sampled_from([None, 256]))
def test_iteration_order_is_a_fixed_point(keys: list[str], capacity: int | None) -> None:
    once = hashmap_order(keys, capacity)
    assert hashmap_order(once, capacity) == once
    assert is_hashmap_order(once, capacity)
    assert sorted(once) == sorted(keys)


def test_capacity_inference() -> None:
    keys = ["topicFilterType", "order", "topicSysFlag", "force", "AccessKey", "attributes"]
    default = hashmap_order(keys)
    big = hashmap_order(keys, 256)
    assert infer_capacity(default) is None
    if big != default:
        assert infer_capacity(big) == 256


def test_ext_fields_copy_keeps_capacity() -> None:
    ext = ExtFields({"a": "1"}, capacity=256)
    assert ext.copy().capacity == 256 and ext.copy() == {"a": "1"}
