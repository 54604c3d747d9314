"""Java ``HashMap`` iteration order, computed rather than remembered.

Java peers write every ``HashMap`` (a command's ext fields, maps inside JSON bodies) in the map's iteration
order: by bucket index of the spread ``String.hashCode``, and within a bucket in insertion order. To be
byte-exact we reproduce that order from the keys, their insertion order and the table size.

The table size follows Java's rules: a map created with ``new HashMap<>()`` starts with 16 buckets, one
created with ``new HashMap<>(n)`` with the next power of two >= n, and either doubles whenever the entry
count passes three quarters of the table. A resize keeps the relative order of the entries that land in the
same bucket, so the final order is still "bucket, then insertion". (A bucket of eight or more entries turns
into a tree in Java; with ext-field sized maps that does not happen and is not modelled.)

With the C accelerator (:mod:`rocketmq_wire.accel`) the hash, an ext map's order and the capacity inference
are computed in C, without the caches the pure-Python versions need to be fast.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import cast, overload

from rocketmq_wire.accel import speedups as _c

DEFAULT_CAPACITY = 16
_MAX_CAPACITY = 1 << 30


@functools.lru_cache(maxsize=8192)
def _java_string_hash(value: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit number (computed over UTF-16 code units)."""
    h = 0
    data = value.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


#: Bound once rather than switched per call: callers outside the codec (store indexes, queue selectors)
#: hash in their own hot loops, and the two versions are compared directly by the tests.
java_string_hash = _c.java_string_hash if _c is not None else _java_string_hash


@functools.lru_cache(maxsize=8192)
def hashmap_spread(value: str) -> int:
    """``HashMap.hash(key)``: the hash code with its high half folded into the low half."""
    h = java_string_hash(value)
    return h ^ (h >> 16)


def table_size_for(capacity: int) -> int:
    """Java's ``tableSizeFor``: the smallest power of two >= ``capacity`` (at least 1)."""
    if capacity <= 1:
        return 1
    return min(1 << (capacity - 1).bit_length(), _MAX_CAPACITY)


def final_table_size(entries: int, initial_capacity: int | None = None) -> int:
    """The number of buckets a map holds after ``entries`` puts, from its constructor argument."""
    size = DEFAULT_CAPACITY if initial_capacity is None else table_size_for(initial_capacity)
    while entries > size * 3 // 4 and size < _MAX_CAPACITY:
        size *= 2
    return size


def bucket_of(key: str, table_size: int) -> int:
    return hashmap_spread(key) & (table_size - 1)


def hashmap_order(keys: Iterable[str], initial_capacity: int | None = None) -> list[str]:
    """Keys in the order a Java ``HashMap`` built by inserting them in the given order iterates them."""
    key_tuple = tuple(keys)
    return [key_tuple[i] for i in _order_permutation(key_tuple, initial_capacity)]


@functools.lru_cache(maxsize=4096)
def _order_permutation(keys: tuple[str, ...], initial_capacity: int | None) -> tuple[int, ...]:
    """Positions of ``keys`` in iteration order; cached because commands of one kind share a key tuple."""
    mask = final_table_size(len(keys), initial_capacity) - 1
    # sorted() is stable, so keys of one bucket keep their insertion order.
    return tuple(sorted(range(len(keys)), key=lambda i: hashmap_spread(keys[i]) & mask))


def items_hashmap_order(
    mapping: dict[str, str], initial_capacity: int | None = None
) -> list[tuple[str, str]]:
    """``mapping``'s items (in insertion order) as a Java ``HashMap`` filled in that order iterates them."""
    if _c is not None:
        ordered = _c.items_java_order(mapping, initial_capacity)
        if ordered is not None:
            return ordered
    items = tuple(mapping.items())
    return [items[i] for i in _order_permutation(tuple(mapping), initial_capacity)]


def is_hashmap_order(keys: list[str], initial_capacity: int | None = None) -> bool:
    """Whether ``keys`` (as read off the wire) could be the iteration order of such a map."""
    mask = final_table_size(len(keys), initial_capacity) - 1
    last = -1
    for key in keys:
        bucket = hashmap_spread(key) & mask
        if bucket < last:
            return False
        last = bucket
    return True


#: Initial capacities Java code is known to create ext maps with (``new HashMap<>()`` and 5.x's 256).
_KNOWN_CAPACITIES: tuple[int | None, ...] = (None, 256)


def infer_capacity(keys: Iterable[str]) -> int | None:
    """The constructor capacity that explains an observed key order: ``None`` (default) when it fits.

    An order that no known capacity explains (a non-Java peer that sorts its keys, say) also yields ``None``:
    re-encoding then uses Java's default order, which any peer accepts.
    """
    if _c is not None:
        capacity = _c.infer_capacity(keys, _KNOWN_CAPACITIES)
        if capacity is not NotImplemented:
            return cast("int | None", capacity)
    return _infer_capacity(tuple(keys))


@functools.lru_cache(maxsize=4096)
def _infer_capacity(keys: tuple[str, ...]) -> int | None:
    for capacity in _KNOWN_CAPACITIES:
        if is_hashmap_order(list(keys), capacity):
            return capacity
    return None


class ExtFields(dict[str, str]):
    """A command's ext map: entries in insertion order plus the Java table capacity it was created with.

    ``items_java_order()`` yields what Java would write. Decoded ext fields keep the capacity inferred from
    the order they were read in, so a rebuilt command lands every key in the same place.
    """

    __slots__ = ("capacity",)

    @overload
    def __init__(self, *, capacity: int | None = None) -> None: ...
    @overload
    def __init__(
        self, data: Mapping[str, str] | Iterable[tuple[str, str]], *, capacity: int | None = None
    ) -> None: ...
    def __init__(
        self,
        data: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        *,
        capacity: int | None = None,
    ) -> None:
        # The C accelerator makes decoded instances without calling this (dict.__new__, the items, then
        # capacity): anything more done here would be missing from them.
        super().__init__(data)
        self.capacity = capacity

    def items_java_order(self) -> list[tuple[str, str]]:
        return items_hashmap_order(self, self.capacity)

    def copy(self) -> ExtFields:
        return ExtFields(self, capacity=self.capacity)

    def __repr__(self) -> str:
        extra = f", capacity={self.capacity}" if self.capacity is not None else ""
        return f"ExtFields({dict.__repr__(self)}{extra})"
