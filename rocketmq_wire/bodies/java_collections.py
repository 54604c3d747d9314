"""The order in which fastjson meets the entries of the Java maps and sets inside a body.

fastjson writes a ``HashMap``, ``ConcurrentHashMap`` or ``HashSet`` in the collection's own iteration order:
bucket by bucket, where the bucket of a key is its spread ``hashCode()`` masked by the table size, and
within a bucket in the order the entries got there. Both map classes use the same bucket function, so what
separates them is only how big the table is: a ``HashMap`` doubles once it holds *more* than three
quarters of its table, a ``ConcurrentHashMap`` as soon as it *reaches* three quarters, and their
constructors turn a requested capacity into different table sizes.

A collection read off the wire remembers the table size its order reveals (:class:`JavaMap` /
:class:`JavaSet`), and within a bucket the order it was read in, so writing it back reproduces the Java
bytes. A collection built here is taken to be in insertion order and is put through the Java class's
growth: a ``HashMap`` keeps insertion order within a bucket across resizes, a ``ConcurrentHashMap``
reverses part of each bucket whenever it doubles, and both are modelled (tree bins, which need eight keys
in one bucket, are not).

Element types whose ``hashCode`` is Java's identity hash (``ProducerData``, ``ConsumerData``) have no
reproducible order; those sets are kept as plain lists in the order given.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from rocketmq_wire.javahash import java_string_hash, table_size_for

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

_MASK32 = 0xFFFFFFFF
_MAX_TABLE = 1 << 30
#: Largest table an observed order is matched against; bodies never come near it.
_MAX_INFERRED_TABLE = 1 << 20


def string_hash(value: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit number."""
    return java_string_hash(value)


def int_hash(value: int) -> int:
    """``Integer.hashCode()``: the value itself, as unsigned 32 bits."""
    return value & _MASK32


def long_hash(value: int) -> int:
    """``Long.hashCode()``: the two halves of the 64-bit value folded together."""
    bits = value & 0xFFFFFFFFFFFFFFFF
    return (bits ^ (bits >> 32)) & _MASK32


def bool_hash(value: bool) -> int:
    """``Boolean.hashCode()``."""
    return 1231 if value else 1237


def combine_hashes(*parts: int, seed: int = 1) -> int:
    """The ``result = 31 * result + part`` chain Eclipse-generated ``hashCode`` methods use."""
    result = seed
    for part in parts:
        result = (31 * result + part) & _MASK32
    return result


def set_hash(element_hashes: Iterable[int]) -> int:
    """``AbstractSet.hashCode()``: the sum of the element hashes."""
    return sum(element_hashes) & _MASK32


def _spread(hash_code: int) -> int:
    # HashMap.hash() and ConcurrentHashMap.spread() agree on every bit a table index can use.
    return hash_code ^ (hash_code >> 16)


class MapKind(enum.Enum):
    """The Java class behind a map or set field, as far as its table growth goes."""

    HASH_MAP = "HashMap"  # also HashSet, which is a HashMap underneath
    CONCURRENT_HASH_MAP = "ConcurrentHashMap"  # also ConcurrentHashMap.newKeySet()


@dataclasses.dataclass(frozen=True, slots=True)
class JavaTable:
    """How Java builds a collection field: its class, the capacity given to its constructor, whether it
    is filled in one go (``putAll``, a copy constructor, ``clone``) rather than entry by entry, and from
    what other collection it is filled.

    A one-go fill sizes the table for the whole batch up front, so a copy is often smaller than the same
    map grown by single puts (a two-entry ``ConcurrentHashMap`` filled by ``putAll`` has four buckets).
    """

    kind: MapKind
    initial_capacity: int | None = None
    copied: bool = False
    #: Filled entry by entry while iterating another collection of this construction (a broker copying
    #: its topic manager's table, say), so entries arrive in that collection's order.
    source: JavaTable | None = None

    def initial_size(self) -> int:
        if self.initial_capacity is None:
            return 16
        if self.kind is MapKind.HASH_MAP:
            return table_size_for(self.initial_capacity)
        # ConcurrentHashMap(n) sizes for n entries at its load factor: tableSizeFor(1 + n / 0.75).
        return table_size_for(1 + (self.initial_capacity * 4) // 3)

    def _copied_size(self, entries: int) -> int:
        if self.kind is MapKind.HASH_MAP:
            # putMapEntries: tableSizeFor((int) (size / 0.75f + 1.0f)).
            return table_size_for(int(entries / 0.75 + 1.0))
        # tryPresize: tableSizeFor(size + size/2 + 1), never below a table the constructor asked for.
        wanted = table_size_for(entries + (entries >> 1) + 1)
        return wanted if self.initial_capacity is None else max(wanted, self.initial_size())

    def size_for(self, entries: int) -> int:
        """The table size after ``entries`` insertions into a freshly constructed collection."""
        if self.copied:
            return self._copied_size(entries)
        size = self.initial_size()
        if self.kind is MapKind.HASH_MAP:
            while entries > size * 3 // 4 and size < _MAX_TABLE:
                size *= 2
        else:
            while entries >= size - (size >> 2) and size < _MAX_TABLE:
                size *= 2
        return size


HASH_MAP = JavaTable(MapKind.HASH_MAP)
CONCURRENT_HASH_MAP = JavaTable(MapKind.CONCURRENT_HASH_MAP)


def in_table_order(keys: Sequence[T], key_hash: Callable[[T], int], table_size: int) -> list[T]:
    """``keys`` as a table of ``table_size`` buckets iterates them; keys sharing a bucket keep their order."""
    mask = table_size - 1
    return sorted(keys, key=lambda k: _spread(key_hash(k)) & mask)


def fits_table(keys: Sequence[T], key_hash: Callable[[T], int], table_size: int) -> bool:
    """Whether ``keys``, as read, could be the iteration order of a table of ``table_size`` buckets."""
    mask = table_size - 1
    last = -1
    for key in keys:
        bucket = _spread(key_hash(key)) & mask
        if bucket < last:
            return False
        last = bucket
    return True


def smallest_table(entries: int) -> int:
    """The smallest table either map class can hold ``entries`` in (both stay under 3/4 full)."""
    size = 1
    while size * 3 // 4 < entries and size < _MAX_TABLE:
        size *= 2
    return size


def infer_table_size(keys: Sequence[T], key_hash: Callable[[T], int], table: JavaTable) -> int | None:
    """A table size whose bucket order ``keys``, as read, follow; ``None`` if there is none.

    Java's size for this construction and entry count is tried first. Maps keep their table when entries
    are removed, and copies made in one go can be smaller, so every other size that can hold the entries
    is tried too; any size that fits reproduces the same order. ``None`` means the order is not a Java
    hash order at all (a peer that is not Java, a sorted map, a capture edited by hand).
    """
    expected = table.size_for(len(keys))
    if len(keys) < 2 or fits_table(keys, key_hash, expected):
        return expected
    size = smallest_table(len(keys))
    while size <= _MAX_INFERRED_TABLE:
        if size != expected and fits_table(keys, key_hash, size):
            return size
        size *= 2
    return None


class JavaMap(dict[K, V]):
    """A dict read from a Java map: entries in wire order plus the table size that order showed.

    ``table_size`` ``None`` means no Java table explains the order; it is then written back as read.
    Compares equal to any dict with the same entries; the table size only steers writing.
    """

    __slots__ = ("table_size",)

    def __init__(self, data: Mapping[K, V] | Iterable[tuple[K, V]] = (), *, table_size: int | None = None):
        super().__init__(data)
        self.table_size = table_size


class JavaSet(list[T]):
    """A list read from a Java hash set: elements in wire order plus the table size that order showed.

    ``table_size`` ``None`` means no Java table explains the order; it is then written back as read.
    """

    __slots__ = ("table_size",)

    def __init__(self, data: Iterable[T] = (), *, table_size: int | None = None):
        super().__init__(data)
        self.table_size = table_size


def _concurrent_transfer(bins: list[list[tuple[int, T]]], old_size: int) -> list[list[tuple[int, T]]]:
    """One ``ConcurrentHashMap`` resize: each bin splits into a low and a high bin.

    The tail run of entries bound for the same half moves as it is; the entries before it are re-linked
    one by one at the head of their new bin, which reverses their order.
    """
    grown: list[list[tuple[int, T]]] = [[] for _ in range(2 * old_size)]
    for index, entries in enumerate(bins):
        if not entries:
            continue
        run_bit = entries[-1][0] & old_size
        run_start = len(entries) - 1
        while run_start > 0 and entries[run_start - 1][0] & old_size == run_bit:
            run_start -= 1
        prefix = entries[:run_start][::-1]
        low = [e for e in prefix if not e[0] & old_size]
        high = [e for e in prefix if e[0] & old_size]
        (high if run_bit else low).extend(entries[run_start:])
        grown[index] = low
        grown[index + old_size] = high
    return grown


def insertion_order(keys: Sequence[T], key_hash: Callable[[T], int], table: JavaTable) -> list[T]:
    """The iteration order of a collection built by inserting ``keys`` one by one, in that order."""
    if table.source is not None:
        keys = insertion_order(keys, key_hash, table.source)
    if table.kind is MapKind.HASH_MAP or table.copied:
        # A HashMap resize keeps the relative order of entries that stay together, and a one-go copy never
        # resizes, so sorting by bucket in the final table is enough.
        return in_table_order(keys, key_hash, table.size_for(len(keys)))
    size = table.initial_size()
    bins: list[list[tuple[int, T]]] = [[] for _ in range(size)]
    for count, key in enumerate(keys, start=1):
        spread = _spread(key_hash(key))
        bins[spread & (size - 1)].append((spread, key))
        while count >= size - (size >> 2) and size < _MAX_TABLE:
            bins = _concurrent_transfer(bins, size)
            size *= 2
    return [key for entries in bins for _, key in entries]


def java_order(elements: Sequence[T], element_hash: Callable[[T], int], table: JavaTable) -> list[T]:
    """Keys or elements in the order their Java collection iterates them.

    A collection read off the wire (:class:`JavaMap` / :class:`JavaSet`) is sorted by bucket in its own
    table, keeping the order it was read in within a bucket, or kept as read when no table explained it.
    Anything else is taken to be in insertion order and inserted into a fresh collection of the given
    construction.
    """
    if not isinstance(elements, (JavaMap, JavaSet)):
        return insertion_order(elements, element_hash, table)
    if elements.table_size is None:
        return list(elements)
    return in_table_order(elements, element_hash, elements.table_size)


def map_in_java_order(
    mapping: Mapping[K, V], key_hash: Callable[[K], int], table: JavaTable
) -> list[tuple[K, V]]:
    """The entries of ``mapping`` in the order the Java map it stands for iterates them."""
    keys: Sequence[K] = (
        JavaSet(mapping, table_size=mapping.table_size) if isinstance(mapping, JavaMap) else list(mapping)
    )
    return [(k, mapping[k]) for k in java_order(keys, key_hash, table)]


def set_in_java_order(elements: Sequence[T], element_hash: Callable[[T], int], table: JavaTable) -> list[T]:
    """The elements of a Java hash set in its iteration order (duplicates, if any, kept)."""
    return java_order(elements, element_hash, table)


def read_map(entries: Iterable[tuple[K, V]], key_hash: Callable[[K], int], table: JavaTable) -> JavaMap[K, V]:
    """A :class:`JavaMap` of entries read off the wire, remembering the table their order implies."""
    result: JavaMap[K, V] = JavaMap(entries)
    result.table_size = infer_table_size(list(result), key_hash, table)
    return result


def read_set(elements: Iterable[T], element_hash: Callable[[T], int], table: JavaTable) -> JavaSet[T]:
    """A :class:`JavaSet` of elements read off the wire, remembering the table their order implies."""
    result: JavaSet[T] = JavaSet(elements)
    result.table_size = infer_table_size(result, element_hash, table)
    return result
