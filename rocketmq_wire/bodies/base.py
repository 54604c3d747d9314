"""What every JSON body shares: encoding through the fastjson writer, decoding with precise errors.

A body class describes itself as a Java bean (:meth:`JsonBody.to_bean`) and rebuilds itself from a parsed
object (:meth:`JsonBody.from_object`); this module turns those into ``to_json`` / ``from_json`` and gives
the readers that coerce JSON values the way fastjson does when it fills a Java field: numbers may arrive
as strings (the C++ client sends ``"subVersion":"1795..."``), enums as names or ordinals, ``null`` or a
missing key leaves the Java default. Anything else raises :class:`CodecError` naming the field's path.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self, TypeVar

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.java_collections import JavaTable, map_in_java_order, set_in_java_order
from rocketmq_wire.errors import CodecError

T = TypeVar("T")

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


class JsonBody(abc.ABC):
    """A body Java sends as ``RemotingSerializable.encode()``: fastjson text in UTF-8."""

    @abc.abstractmethod
    def to_bean(self) -> fastjson.Bean:
        """This value as the Java bean fastjson serializes (Java property names, Java collection order)."""

    @classmethod
    @abc.abstractmethod
    def from_object(cls, obj: Fields) -> Self:
        """Rebuild the value from its parsed JSON object, with Java's defaults for what is missing."""

    def to_json(self) -> bytes:
        """The body bytes a Java peer would send for this value."""
        return fastjson.dump_bytes(self.to_bean())

    @classmethod
    def from_json(cls, data: bytes | bytearray | memoryview | str) -> Self:
        """Parse a body; malformed JSON or a field of the wrong shape raises :class:`CodecError`."""
        return cls.from_object(Fields(fastjson.loads(data), cls.__name__))


def bean(**properties: fastjson.JsonValue) -> fastjson.Bean:
    """A :class:`fastjson.Bean` from keyword properties (Java names)."""
    return fastjson.Bean(properties)


class Fields:
    """A parsed JSON object being read into a Java-shaped value; ``path`` names it in error messages."""

    __slots__ = ("_obj", "path")

    def __init__(self, obj: Any, path: str) -> None:
        if not isinstance(obj, dict):
            raise CodecError(f"{path}: expected a JSON object, got {_kind(obj)}")
        self._obj: dict[Any, Any] = obj
        self.path = path

    def has(self, name: str) -> bool:
        """Whether ``name`` is present and not ``null`` (otherwise Java keeps the field's default)."""
        return self._obj.get(name) is not None

    def _where(self, name: str) -> str:
        return f"{self.path}.{name}"

    def get_str(self, name: str, default: str | None = None) -> str | None:
        return to_string(self._obj.get(name), self._where(name), default)

    def get_long(self, name: str, default: int = 0) -> int:
        value = self._obj.get(name)
        return default if value is None else to_long(value, self._where(name))

    def opt_long(self, name: str) -> int | None:
        value = self._obj.get(name)
        return None if value is None else to_long(value, self._where(name))

    def get_int(self, name: str, default: int = 0) -> int:
        value = self._obj.get(name)
        return default if value is None else to_int(value, self._where(name))

    def opt_int(self, name: str) -> int | None:
        value = self._obj.get(name)
        return None if value is None else to_int(value, self._where(name))

    def get_bool(self, name: str, default: bool = False) -> bool:
        value = self._obj.get(name)
        return default if value is None else to_bool(value, self._where(name))

    def opt_bool(self, name: str) -> bool | None:
        value = self._obj.get(name)
        return None if value is None else to_bool(value, self._where(name))

    def get_double(self, name: str, default: float = 0.0) -> float:
        value = self._obj.get(name)
        return default if value is None else to_double(value, self._where(name))

    def opt_double(self, name: str) -> float | None:
        value = self._obj.get(name)
        return None if value is None else to_double(value, self._where(name))

    def get_enum(self, name: str, ordinals: Sequence[str], default: str | None = None) -> str | None:
        value = self._obj.get(name)
        return default if value is None else to_enum(value, ordinals, self._where(name))

    def get_raw(self, name: str) -> Any:
        """The value as parsed, for a field with a reader of its own; ``None`` when absent or null."""
        return self._obj.get(name)

    def get_object(self, name: str) -> Fields | None:
        value = self._obj.get(name)
        return None if value is None else Fields(value, self._where(name))

    def get_array(self, name: str) -> list[Any] | None:
        """A JSON array; ``None`` when absent."""
        value = self._obj.get(name)
        if value is None:
            return None
        if not isinstance(value, list):
            raise CodecError(f"{self._where(name)}: expected a JSON array, got {_kind(value)}")
        return value

    def get_map(self, name: str) -> dict[Any, Any] | None:
        """A JSON object used as a Java map (keys as read: str, int or object keys); ``None`` when absent."""
        value = self._obj.get(name)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise CodecError(f"{self._where(name)}: expected a JSON object, got {_kind(value)}")
        return value

    def items_of(self, name: str, read: Callable[[Any, str], T]) -> list[T] | None:
        """Each element of an array read by ``read(value, path)``; ``None`` when absent."""
        values = self.get_array(name)
        if values is None:
            return None
        where = self._where(name)
        return [read(value, f"{where}[{i}]") for i, value in enumerate(values)]

    def entries_of(
        self,
        name: str,
        read_key: Callable[[Any, str], Any],
        read_value: Callable[[Any, str], Any],
    ) -> list[tuple[Any, Any]] | None:
        """Each entry of a map read by ``read_key`` / ``read_value``; ``None`` when absent."""
        values = self._obj.get(name)
        return None if values is None else map_entries(values, self._where(name), read_key, read_value)


def map_entries(
    value: Any,
    path: str,
    read_key: Callable[[Any, str], Any],
    read_value: Callable[[Any, str], Any],
) -> list[tuple[Any, Any]]:
    """Each entry of a JSON object used as a Java map, read by ``read_key`` / ``read_value``."""
    if not isinstance(value, dict):
        raise CodecError(f"{path}: expected a JSON object, got {_kind(value)}")
    return [(read_key(k, f"{path} key {k!r}"), read_value(v, f"{path}[{k!r}]")) for k, v in value.items()]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, fastjson.ObjectKey):
        return "an object key"
    return type(value).__name__


def to_string(value: Any, path: str, default: str | None = None) -> str | None:
    """A Java ``String``: numbers and booleans are accepted as their text, as fastjson does."""
    if value is None:
        return default
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    raise CodecError(f"{path}: expected a string, got {_kind(value)}")


def to_required_string(value: Any, path: str) -> str:
    result = to_string(value, path)
    if result is None:
        raise CodecError(f"{path}: expected a string, got null")
    return result


def _integral(value: Any, path: str, what: str) -> int:
    if isinstance(value, bool):
        raise CodecError(f"{path}: expected {what}, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise CodecError(f"{path}: expected {what}, got the string {value[:40]!r}") from None
    raise CodecError(f"{path}: expected {what}, got {_kind(value)}")


def to_long(value: Any, path: str) -> int:
    """A Java ``long`` from a number or a numeric string."""
    result = _integral(value, path, "an integer")
    if not _LONG_MIN <= result <= _LONG_MAX:
        raise CodecError(f"{path}: {result} does not fit a Java long")
    return result


def to_int(value: Any, path: str) -> int:
    """A Java ``int`` from a number or a numeric string."""
    result = _integral(value, path, "an integer")
    if not _INT_MIN <= result <= _INT_MAX:
        raise CodecError(f"{path}: {result} does not fit a Java int")
    return result


def to_bool(value: Any, path: str) -> bool:
    """A Java ``boolean``: ``true``/``false``, ``1``/``0`` or their strings, as fastjson accepts."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return value == 1
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    raise CodecError(f"{path}: expected a boolean, got {_kind(value)}")


def to_double(value: Any, path: str) -> float:
    """A Java ``double`` from a number or a numeric string."""
    if isinstance(value, bool):
        raise CodecError(f"{path}: expected a number, got a boolean")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise CodecError(f"{path}: expected a number, got the string {value[:40]!r}") from None
    raise CodecError(f"{path}: expected a number, got {_kind(value)}")


def to_enum(value: Any, ordinals: Sequence[str], path: str) -> str:
    """A Java enum constant, by name or (as the C++ client sends them) by ordinal."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value < len(ordinals):
            return ordinals[value]
        raise CodecError(f"{path}: enum ordinal {value} is out of range (0..{len(ordinals) - 1})")
    raise CodecError(f"{path}: expected an enum name or ordinal, got {_kind(value)}")


def string_list(value: Any, path: str) -> list[str]:
    """A Java ``List<String>`` / ``Set<String>``; ``null`` elements are refused."""
    if not isinstance(value, list):
        raise CodecError(f"{path}: expected a JSON array, got {_kind(value)}")
    return [to_required_string(v, f"{path}[{i}]") for i, v in enumerate(value)]


def object_fields(value: Any, path: str) -> Fields:
    """Key or element that must be an object (plain or read in key position)."""
    if isinstance(value, fastjson.ObjectKey):
        return Fields(value.to_dict(), path)
    return Fields(value, path)


def string_map(fields: Mapping[Any, Any], path: str) -> list[tuple[str, str]]:
    """Entries of a Java ``Map<String, String>``."""
    return [
        (to_required_string(k, f"{path} key"), to_required_string(v, f"{path}[{k!r}]"))
        for k, v in fields.items()
    ]


K = TypeVar("K")
V = TypeVar("V")


def write_map(
    mapping: Mapping[K, V],
    key_hash: Callable[[K], int],
    table: JavaTable,
    write_key: Callable[[K], fastjson.JsonKey],
    write_value: Callable[[V], fastjson.JsonValue],
) -> dict[fastjson.JsonKey, fastjson.JsonValue]:
    """A Java hash map field, entries in its iteration order, ready for the writer."""
    return {write_key(k): write_value(v) for k, v in map_in_java_order(mapping, key_hash, table)}


def write_set(
    elements: Sequence[T],
    element_hash: Callable[[T], int],
    table: JavaTable,
    write_element: Callable[[T], fastjson.JsonValue],
) -> list[fastjson.JsonValue]:
    """A Java hash set field, elements in its iteration order, ready for the writer."""
    return [write_element(e) for e in set_in_java_order(elements, element_hash, table)]


def same(value: T) -> T:
    return value


def array_of(value: Any, path: str, read: Callable[[Any, str], T]) -> list[T]:
    """Each element of a JSON array read by ``read(element, path)``."""
    if not isinstance(value, list):
        raise CodecError(f"{path}: expected a JSON array, got {_kind(value)}")
    return [read(v, f"{path}[{i}]") for i, v in enumerate(value)]
