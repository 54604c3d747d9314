"""The properties string: ``name\\x01value`` pairs separated by ``\\x02``.

Two details decide byte equality with Java peers:

* **The trailing separator.** Java 4.9.x strips the separator after the last pair; Java 5.x (and the C++
  client) keep it. :class:`PropertiesFlavour` names the two, and the decoder accepts either.
* **The order of the pairs.** Java keeps properties in a ``HashMap``, so they come out in that map's iteration
  order, which depends on the table size the map was created with: a producer's ``Message`` uses the default
  (16 buckets), a 4.9.x broker re-encodes a decoded map the same way, a 5.x broker decodes into a map of 128
  buckets. :func:`java_ordered` reorders a mapping (given in Java insertion order) accordingly.

Decoding follows Java's tolerant reader: an item without a name, without a value or without the ``\\x01`` is
skipped, and a repeated name keeps its first position but its last value.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

from rocketmq_wire.accel import speedups as _c
from rocketmq_wire.errors import CodecError
from rocketmq_wire.javahash import items_hashmap_order
from rocketmq_wire.message.const import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, SYSTEM_PROPERTY_NAMES

#: Table size Java 5.x's ``string2messageProperties`` creates its map with.
DECODED_MAP_CAPACITY_5X = 128


class PropertiesFlavour(enum.Enum):
    """How a Java version terminates the properties string."""

    #: Java 4.9.x: no separator after the last pair.
    V4 = "4.9"
    #: Java 5.x, the C++ client and Java before 4.9: every pair is followed by a separator.
    V5 = "5.x"


def detect_flavour(text: str) -> PropertiesFlavour:
    """The flavour a properties string was written in (an empty one reads as :attr:`PropertiesFlavour.V5`)."""
    if not text or text.endswith(PROPERTY_SEPARATOR):
        return PropertiesFlavour.V5
    return PropertiesFlavour.V4


_EMPTY_NAME = PROPERTY_SEPARATOR + NAME_VALUE_SEPARATOR


def _check_pair(name: str, value: str) -> None:
    if not name:
        raise CodecError("a message property needs a non-empty name")
    if NAME_VALUE_SEPARATOR in name or PROPERTY_SEPARATOR in name:
        raise CodecError(f"message property name {name!r} contains a \\x01 or \\x02 separator")
    if PROPERTY_SEPARATOR in value:
        raise CodecError(f"value of message property {name!r} contains the \\x02 separator")


def encode_properties(
    properties: Mapping[str, str | None] | Iterable[tuple[str, str | None]],
    flavour: PropertiesFlavour = PropertiesFlavour.V5,
) -> str:
    """The properties string, pairs in the given order; ``None`` values are left out as Java leaves out nulls.

    Raises :class:`CodecError` for a pair that would not read back as written (an empty name, or a
    separator inside a name, or a ``\\x02`` inside a value).
    """
    if _c is not None and isinstance(properties, (dict, list)):
        encoded = _c.encode_properties(properties, flavour is PropertiesFlavour.V5)
        if encoded is not None:
            return encoded
    pairs = [
        (name, value)
        for name, value in (properties.items() if isinstance(properties, Mapping) else properties)
        if value is not None
    ]
    text = PROPERTY_SEPARATOR.join([f"{name}{NAME_VALUE_SEPARATOR}{value}" for name, value in pairs])
    # Counting separators checks every pair at C speed: with exactly one \x01 per pair, one \x02 between
    # pairs and no pair starting with \x01, no name is empty or holds a separator and no value holds a
    # \x02. Only a string that fails the count (a value holding \x01 passes the walk) is walked pair by pair.
    if pairs and (
        text.count(NAME_VALUE_SEPARATOR) != len(pairs)
        or text.count(PROPERTY_SEPARATOR) != len(pairs) - 1
        or text.startswith(NAME_VALUE_SEPARATOR)
        or _EMPTY_NAME in text
    ):
        for name, value in pairs:
            _check_pair(name, value)
    if pairs and flavour is PropertiesFlavour.V5:
        text += PROPERTY_SEPARATOR
    return text


def java_ordered(properties: Mapping[str, str], initial_capacity: int | None = None) -> dict[str, str]:
    """``properties`` (in Java insertion order) reordered as a Java ``HashMap`` would iterate them.

    ``initial_capacity`` is the map's constructor argument: ``None`` for ``new HashMap<>()`` (a producer's
    message, a 4.9.x broker), :data:`DECODED_MAP_CAPACITY_5X` for a map a 5.x peer decoded.
    """
    return dict(items_hashmap_order(dict(properties), initial_capacity))


def encode_java_properties(
    properties: Mapping[str, str],
    flavour: PropertiesFlavour = PropertiesFlavour.V5,
    initial_capacity: int | None = None,
) -> str:
    """What Java's ``messageProperties2String`` writes for a map filled with ``properties`` in order."""
    return encode_properties(items_hashmap_order(dict(properties), initial_capacity), flavour)


def decode_properties(text: str) -> dict[str, str]:
    """Name → value, in the order the names first appear; never raises."""
    if _c is not None:
        decoded = _c.decode_properties(text)
        if decoded is not None:
            return decoded
    items = text.split(PROPERTY_SEPARATOR)
    if not items[-1]:
        items.pop()
    try:
        # The common string, every item a non-empty name, \x01 and a non-empty value, in one C-level pass.
        result = dict([item.split(NAME_VALUE_SEPARATOR, 1) for item in items])
    except ValueError:  # an item without \x01
        pass
    else:
        if "" not in result and "" not in result.values():
            return result
    result = {}
    for item in items:
        name, sep, value = item.partition(NAME_VALUE_SEPARATOR)
        if sep and name and value:
            result[name] = value
    return result


def properties_text(data: bytes | bytearray | memoryview) -> str:
    """Raw properties bytes as text, refusing bytes that are not UTF-8."""
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodecError(f"message properties are not valid UTF-8 (byte {exc.start}: {exc.reason})") from None


def decode_properties_bytes(data: bytes | bytearray | memoryview) -> dict[str, str]:
    return decode_properties(properties_text(data))


def validate_user_property(name: str, value: str) -> None:
    """Refuse what a Java producer's ``putUserProperty`` refuses, plus what would corrupt the string."""
    if name in SYSTEM_PROPERTY_NAMES:
        raise CodecError(f"property name {name!r} is reserved for the system; choose another")
    if not name.strip() or not value.strip():
        raise CodecError(f"user property {name!r}: name and value must not be blank")
    _check_pair(name, value)
