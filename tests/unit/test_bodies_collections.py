"""Java collection iteration order as bodies need it: hashes, table growth, ConcurrentHashMap resizes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire.bodies.java_collections import (
    CONCURRENT_HASH_MAP,
    HASH_MAP,
    JavaMap,
    JavaSet,
    JavaTable,
    MapKind,
    fits_table,
    infer_table_size,
    insertion_order,
    int_hash,
    java_order,
    long_hash,
    map_in_java_order,
    read_map,
    read_set,
    set_hash,
    string_hash,
)


def test_java_hash_codes() -> None:
    assert string_hash("a") == 97
    assert string_hash("TAG") == 82810
    assert int_hash(-1) == 0xFFFFFFFF
    assert long_hash(1 << 32) == 1  # the high half folds onto the low half
    assert long_hash(-1) == 0
    assert long_hash(5) == 5
    assert set_hash([0xFFFFFFFF, 2]) == 1  # AbstractSet.hashCode wraps like int arithmetic


@pytest.mark.parametrize(
    ("table", "entries", "size"),
    [
        (HASH_MAP, 12, 16),
        (HASH_MAP, 13, 32),  # HashMap grows past 3/4 ...
        (CONCURRENT_HASH_MAP, 11, 16),
        (CONCURRENT_HASH_MAP, 12, 32),  # ... ConcurrentHashMap on reaching it
        (JavaTable(MapKind.HASH_MAP, 128), 5, 128),
        (JavaTable(MapKind.CONCURRENT_HASH_MAP, 128), 5, 256),
        (JavaTable(MapKind.CONCURRENT_HASH_MAP, 1024), 8, 2048),
        (JavaTable(MapKind.CONCURRENT_HASH_MAP, 32), 1, 64),
        (JavaTable(MapKind.HASH_MAP, copied=True), 1, 2),  # clone() of a one-entry HashMap
        (JavaTable(MapKind.HASH_MAP, copied=True), 3, 8),
        (JavaTable(MapKind.HASH_MAP, copied=True), 12, 32),
        (JavaTable(MapKind.CONCURRENT_HASH_MAP, copied=True), 2, 4),  # putAll into a default CHM
        (JavaTable(MapKind.CONCURRENT_HASH_MAP, 128, copied=True), 2, 256),
    ],
)
def test_table_sizes_follow_java_construction_and_growth(table: JavaTable, entries: int, size: int) -> None:
    assert table.size_for(entries) == size


def test_hash_map_orders_by_bucket_and_keeps_insertion_order_within_one() -> None:
    # Integer keys hash to themselves: 1 and 17 share bucket 1 of a 16-slot table.
    assert insertion_order([17, 3, 1, 0], int_hash, HASH_MAP) == [0, 17, 1, 3]
    # 13 entries grow the table to 32, where 17 gets its own bucket after 1..16.
    keys = [17, *range(1, 13)]
    assert insertion_order(keys, int_hash, HASH_MAP) == [*range(1, 13), 17]


def test_concurrent_hash_map_resize_reverses_the_part_of_a_bin_before_its_tail_run() -> None:
    # 1, 17, 33, 49 share bin 1 of 16; the 12th insertion doubles the table. Bit 16 splits the bin into
    # low (1, 33) and high (17, 49); the tail run [49] moves as is, the rest is re-linked head first.
    keys = [1, 17, 33, 49, *range(2, 10)]
    assert insertion_order(keys, int_hash, CONCURRENT_HASH_MAP) == [33, 1, *range(2, 10), 17, 49]
    # The same keys in a HashMap: 12 entries fit 16 slots, nothing moves.
    assert insertion_order(keys, int_hash, HASH_MAP) == keys


def test_concurrent_hash_map_tail_run_keeps_its_order() -> None:
    keys = [17, 1, 33, *range(2, 11)]  # tail run [1, 33] goes low together
    assert insertion_order(keys, int_hash, CONCURRENT_HASH_MAP) == [1, 33, *range(2, 11), 17]


def test_a_table_filled_from_another_collection_takes_that_collections_order() -> None:
    source = JavaTable(MapKind.HASH_MAP, 1024)
    table = JavaTable(MapKind.HASH_MAP, source=source)
    # In 1024 slots, 17 and 1 sit apart, so 1 is inserted first and leads their shared 16-slot bucket.
    assert insertion_order([17, 1], int_hash, table) == [1, 17]
    assert insertion_order([17, 1], int_hash, HASH_MAP) == [17, 1]


def test_infer_table_size_prefers_the_construction_size_and_finds_smaller_copies() -> None:
    assert infer_table_size([1, 2, 3], int_hash, HASH_MAP) == 16
    # [4, 1]: 4 before 1 only fits a table where 4 lands in bucket 0, the 4-slot table of a small copy.
    assert infer_table_size([4, 1], int_hash, HASH_MAP) == 4
    # 5 before 4 fits no table that can hold two entries at once.
    assert infer_table_size([5, 4], int_hash, HASH_MAP) is None


def test_read_collections_remember_their_order_and_write_it_back() -> None:
    entries = [(4, "a"), (1, "b")]
    read = read_map(entries, int_hash, HASH_MAP)
    assert read.table_size == 4
    assert map_in_java_order(read, int_hash, HASH_MAP) == entries
    # The same entries built in Python are ordered as a fresh HashMap would order them.
    assert map_in_java_order(dict(entries), int_hash, HASH_MAP) == [(1, "b"), (4, "a")]
    unexplained = read_set([5, 4], int_hash, HASH_MAP)
    assert unexplained.table_size is None
    assert java_order(unexplained, int_hash, HASH_MAP) == [5, 4]


def test_java_map_compares_as_a_dict() -> None:
    assert JavaMap({"a": 1}, table_size=64) == {"a": 1}
    assert JavaSet([1, 2], table_size=4) == [1, 2]


@given(st.lists(st.text(max_size=12), unique=True, max_size=40))
def test_written_order_read_back_reproduces_itself(keys: list[str]) -> None:
    for table in (HASH_MAP, CONCURRENT_HASH_MAP, JavaTable(MapKind.CONCURRENT_HASH_MAP, 1024)):
        written = insertion_order(keys, string_hash, table)
        assert sorted(written) == sorted(keys)
        read = read_set(written, string_hash, table)
        assert read.table_size is not None
        assert fits_table(written, string_hash, read.table_size)
        assert java_order(read, string_hash, table) == written
