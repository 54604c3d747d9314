"""JSON as Alibaba fastjson 1.2.x writes it, which is what every Java RocketMQ peer sends and expects.

Java peers compare and sign bodies byte for byte (the ACL signature covers the body), and our own tests hold
the Java captures as ground truth, so "equivalent JSON" is not enough: the writer here reproduces
fastjson's exact text. What shows on the wire:

* beans (:class:`Bean`) come out with their properties sorted by name (fastjson's default ``SortField``)
  and null properties left out; maps keep whatever order the caller gives (the body layer computes the
  Java ``HashMap`` order) and drop null-valued entries; lists keep their nulls;
* map keys that are not strings are written bare: ``{0:"127.0.0.1:10911"}``, or a whole object as a key;
* strings escape the C0 controls (``\\b \\t \\n \\f \\r`` short, others ``\\u00XX`` upper-case), ``"``,
  ``\\``, the C1 range U+007F..U+009F and U+2028/U+2029; everything else, non-ASCII included, is raw
  UTF-8 and ``/`` is not escaped;
* doubles use Ryu's shortest digits in ``Double.toString`` layout (``0.0``, ``1.0E7``, ``1.0E-4``);
  NaN and infinities become ``null``.

``browser_compatible=True`` mirrors ``SerializerFeature.BrowserCompatible`` (the NameServer uses it for
route data asked for by clients of 4.9.4 and later): every char from U+007F up is ``\\uXXXX`` per UTF-16
unit, ``/`` is escaped, non-string map keys become strings and longs beyond +-(2^53-1) are quoted.
``sort_maps=True`` mirrors ``SerializerFeature.MapSortField``: every map is written in key order.

The reader accepts all of that plus standard JSON. Standard input takes the C-accelerated ``json`` path;
only text that needs it (bare integer or object keys) goes through the slower tolerant parser.

One fastjson quirk is deliberately not reproduced: a string holding U+00A0 *and* at least one other
escaped character comes out of fastjson truncated (its size pre-count misses U+00A0, the rewrite loop
escapes it anyway). We write U+00A0 raw, which is what fastjson writes whenever its output is well formed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any, TypeAlias

from rocketmq_wire.errors import CodecError
from rocketmq_wire.javatext import JAVA_UTF8

__all__ = [
    "Bean",
    "JsonKey",
    "JsonValue",
    "ObjectKey",
    "dump_bytes",
    "dump_str",
    "dumps",
    "java_double_str",
    "loads",
]

_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1
_BROWSER_SAFE_LONG = (1 << 53) - 1


class Bean:
    """A Java bean as fastjson serializes it: named properties, written sorted by name, nulls omitted.

    Hashable (when its values are) so that a bean can be a map key, as ``MessageQueue`` is in
    ``TopicStatsTable``.
    """

    __slots__ = ("_props",)

    def __init__(self, properties: Mapping[str, JsonValue] | Iterable[tuple[str, JsonValue]]) -> None:
        items = properties.items() if isinstance(properties, Mapping) else properties
        self._props: tuple[tuple[str, JsonValue], ...] = tuple(
            sorted(items, key=lambda kv: _utf16_key(kv[0]))
        )

    def written(self) -> Iterator[tuple[str, JsonValue]]:
        """The properties fastjson writes, in the order it writes them."""
        return ((k, v) for k, v in self._props if v is not None)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Bean) and tuple(self.written()) == tuple(other.written())

    def __hash__(self) -> int:
        return hash(tuple(self.written()))

    def __repr__(self) -> str:
        return f"Bean({dict(self.written())!r})"


class ObjectKey(tuple[tuple[str, Any], ...]):
    """An object read in map-key position (``{{"topic":"T","queueId":0}:...}``), as hashable pairs.

    Written back verbatim, in the order read.
    """

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return dict(self)


JsonKey: TypeAlias = "str | int | Bean | ObjectKey"
JsonValue: TypeAlias = (
    "bool | int | float | str | Bean | ObjectKey | list[JsonValue] | tuple[JsonValue, ...]"
    " | Mapping[JsonKey, JsonValue] | None"
)


def _utf16_key(text: str) -> bytes:
    """Sort key giving Java ``String.compareTo`` order (UTF-16 code units, not code points)."""
    return text.encode("utf-16-be", "surrogatepass")


# --------------------------------------------------------------------------------------------------------
# strings

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _unicode_escape(code: int) -> str:
    return f"\\u{code:04X}"


def _default_escape(ch: str) -> str:
    return _SHORT_ESCAPES.get(ch) or _unicode_escape(ord(ch))


_DEFAULT_SPECIAL = [chr(c) for c in range(0x20)] + ['"', "\\"] + [chr(c) for c in range(0x7F, 0xA0)]
_DEFAULT_SPECIAL += ["\u2028", "\u2029"]
_DEFAULT_TRANSLATE = {ord(ch): _default_escape(ch) for ch in _DEFAULT_SPECIAL}
_DEFAULT_NEEDS_ESCAPE = re.compile('[\x00-\x1f"\\\\\x7f-\x9f\u2028\u2029]')

_BROWSER_NEEDS_ESCAPE = re.compile('[\x00-\x1f"/\\\\\x7f-\U0010ffff]')


def _browser_escape_match(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    if ch == "/":
        return "\\/"
    code = ord(ch)
    if code > 0xFFFF:
        # fastjson walks UTF-16 units, so a supplementary character becomes its two surrogate escapes.
        code -= 0x10000
        return _unicode_escape(0xD800 | (code >> 10)) + _unicode_escape(0xDC00 | (code & 0x3FF))
    return _unicode_escape(code)


def dump_str(value: str) -> str:
    """Quote ``value`` as a fastjson string literal (default features)."""
    if _DEFAULT_NEEDS_ESCAPE.search(value) is None:
        return '"' + value + '"'
    return '"' + value.translate(_DEFAULT_TRANSLATE) + '"'


def _dump_str_browser(value: str) -> str:
    return '"' + _BROWSER_NEEDS_ESCAPE.sub(_browser_escape_match, value) + '"'


# --------------------------------------------------------------------------------------------------------
# numbers


def java_double_str(value: float) -> str:
    """A finite double as fastjson's Ryu writer renders it: shortest digits, ``Double.toString`` layout.

    Plain notation for magnitudes in [1e-3, 1e7), otherwise ``d.dddE[-]n``; always at least one digit
    after the point. Python's ``repr`` gives the same shortest round-trip digits as Ryu.
    """
    sign = "-" if str(value).startswith("-") else ""
    digits_tuple = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple.digits))
    exponent = int(digits_tuple.exponent)
    if digits == "0":
        return sign + "0.0"
    point = exponent + len(digits) - 1  # the decimal exponent of the first digit
    if -3 <= point < 7:
        if point < 0:
            return sign + "0." + "0" * (-point - 1) + digits
        if point + 1 >= len(digits):
            return sign + digits + "0" * (point + 1 - len(digits)) + ".0"
        return sign + digits[: point + 1] + "." + digits[point + 1 :]
    if len(digits) == 1:
        # Ryu stops shortening at two digits in scientific notation; for a subnormal whose shortest form
        # is one digit the second is not always 0 (the smallest double is 4.9E-324, not 5.0E-324).
        mantissa, _, exp = f"{Decimal(abs(value)):.1e}".partition("e")
        return sign + mantissa + "E" + str(int(exp))
    return sign + digits[0] + "." + digits[1:] + "E" + str(point)


def _dump_float(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    return java_double_str(value)


def _check_long(value: int) -> int:
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise CodecError(f"integer {value} is outside Java's long range and cannot be written")
    return value


# --------------------------------------------------------------------------------------------------------
# writer


class _Writer:
    """One serialization run; the options are fastjson ``SerializerFeature`` switches."""

    __slots__ = ("_browser", "_quote", "_sort_maps")

    def __init__(self, *, browser_compatible: bool, sort_maps: bool) -> None:
        self._browser = browser_compatible
        self._sort_maps = sort_maps
        self._quote: Callable[[str], str] = _dump_str_browser if browser_compatible else dump_str

    def value(self, value: JsonValue, out: list[str]) -> None:
        if value is None:
            out.append("null")
        elif isinstance(value, str):
            out.append(self._quote(value))
        elif value is True:
            out.append("true")
        elif value is False:
            out.append("false")
        elif isinstance(value, int):
            self._long(value, out)
        elif isinstance(value, float):
            out.append(_dump_float(value))
        elif isinstance(value, Bean):
            self._pairs(value.written(), out)
        elif isinstance(value, ObjectKey):
            self._pairs(iter(value), out)
        elif isinstance(value, Mapping):
            self._map(value, out)
        elif isinstance(value, (list, tuple)):
            out.append("[")
            for index, item in enumerate(value):
                if index:
                    out.append(",")
                self.value(item, out)
            out.append("]")
        else:
            raise CodecError(f"cannot write a {type(value).__name__} as fastjson JSON")

    def _long(self, value: int, out: list[str]) -> None:
        _check_long(value)
        if self._browser and not -_BROWSER_SAFE_LONG <= value <= _BROWSER_SAFE_LONG:
            out.append(f'"{value}"')
        else:
            out.append(str(value))

    def _pairs(self, pairs: Iterator[tuple[str, Any]], out: list[str]) -> None:
        out.append("{")
        first = True
        for name, item in pairs:
            if not first:
                out.append(",")
            first = False
            out.append(self._quote(name))
            out.append(":")
            self.value(item, out)
        out.append("}")

    def _map(self, mapping: Mapping[JsonKey, JsonValue], out: list[str]) -> None:
        items: Iterable[tuple[JsonKey, JsonValue]] = mapping.items()
        if self._sort_maps:
            items = _sorted_items(mapping)
        out.append("{")
        first = True
        for key, item in items:
            if item is None:
                continue  # no WriteMapNullValue: fastjson drops null-valued entries
            if not first:
                out.append(",")
            first = False
            self._key(key, out)
            out.append(":")
            self.value(item, out)
        out.append("}")

    def _key(self, key: JsonKey, out: list[str]) -> None:
        if isinstance(key, str):
            out.append(self._quote(key))
        elif isinstance(key, bool) or not isinstance(key, (int, Bean, ObjectKey)):
            raise CodecError(f"cannot write a {type(key).__name__} map key as fastjson JSON")
        elif self._browser:
            # BrowserCompatible writes JSON.toJSONString(key) (default features) as a string.
            out.append(self._quote(dumps(key)))
        else:
            self.value(key, out)


def _sorted_items(mapping: Mapping[JsonKey, JsonValue]) -> list[tuple[JsonKey, JsonValue]]:
    """Entries in ``TreeMap`` order: strings by UTF-16 units, integers numerically.

    Keys of mixed or other types have no natural order fastjson could use (it leaves such maps alone).
    """
    items = list(mapping.items())
    str_keys = [k for k, _ in items if isinstance(k, str)]
    if len(str_keys) == len(items):
        order = sorted(range(len(items)), key=lambda i: _utf16_key(str_keys[i]))
        return [items[i] for i in order]
    int_keys = [k for k, _ in items if isinstance(k, int) and not isinstance(k, bool)]
    if len(int_keys) == len(items):
        order = sorted(range(len(items)), key=lambda i: int_keys[i])
        return [items[i] for i in order]
    return items


def dumps(value: JsonValue, *, browser_compatible: bool = False, sort_maps: bool = False) -> str:
    """``JSON.toJSONString(value, features)`` for a Python rendering of a Java value."""
    out: list[str] = []
    try:
        _Writer(browser_compatible=browser_compatible, sort_maps=sort_maps).value(value, out)
    except RecursionError:
        raise CodecError("value nested too deeply to write as JSON") from None
    return "".join(out)


def dump_bytes(value: JsonValue, *, browser_compatible: bool = False, sort_maps: bool = False) -> bytes:
    """What ``RemotingSerializable.encode`` puts in a body: the JSON text as UTF-8.

    Java's ``String.getBytes(UTF_8)`` turns an unpaired surrogate into ``?``; so does this
    (:mod:`rocketmq_wire.javatext`).
    """
    text = dumps(value, browser_compatible=browser_compatible, sort_maps=sort_maps)
    return text.encode("utf-8", JAVA_UTF8)


# --------------------------------------------------------------------------------------------------------
# reader


def _reject_constant(name: str) -> Any:
    raise CodecError(f"JSON constant {name} is not accepted (fastjson never writes it)")


_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class _TolerantParser:
    """Recursive descent over fastjson's dialect: JSON plus bare integer and object map keys."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        self._text = text

    def parse(self) -> Any:
        value, pos = self._value(self._skip(0))
        pos = self._skip(pos)
        if pos != len(self._text):
            raise self._error(pos, "unexpected data after the JSON value")
        return value

    def _skip(self, pos: int) -> int:
        match = _WHITESPACE.match(self._text, pos)
        return match.end() if match else pos

    def _error(self, pos: int, what: str) -> CodecError:
        line = self._text.count("\n", 0, pos) + 1
        column = pos - (self._text.rfind("\n", 0, pos) + 1) + 1
        return CodecError(f"malformed JSON at position {pos} (line {line}, column {column}): {what}")

    def _value(self, pos: int) -> tuple[Any, int]:
        text = self._text
        if pos >= len(text):
            raise self._error(pos, "unexpected end of input, expected a value")
        ch = text[pos]
        if ch == "{":
            return self._object(pos + 1)
        if ch == "[":
            return self._array(pos + 1)
        if ch == '"':
            return self._string(pos + 1)
        if ch == "-" or ch.isdigit():
            return self._number(pos)
        for literal, result in (("true", True), ("false", False), ("null", None)):
            if text.startswith(literal, pos):
                return result, pos + len(literal)
        raise self._error(pos, f"unexpected character {ch!r}, expected a value")

    def _string(self, pos: int) -> tuple[str, int]:
        try:
            return json.decoder.scanstring(self._text, pos, False)  # type: ignore[attr-defined,no-any-return]
        except json.JSONDecodeError as exc:
            raise self._error(exc.pos, exc.msg) from None

    def _number(self, pos: int) -> tuple[int | float, int]:
        match = _NUMBER.match(self._text, pos)
        if match is None:
            raise self._error(pos, "malformed number")
        token = match.group()
        try:
            if match.group(1) or match.group(2):
                return float(token), match.end()
            return int(token), match.end()
        except ValueError as exc:  # an integer literal longer than Python's digit limit
            raise self._error(pos, str(exc)) from None

    def _array(self, pos: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        pos = self._skip(pos)
        if self._text.startswith("]", pos):
            return items, pos + 1
        while True:
            item, pos = self._value(pos)
            items.append(item)
            pos = self._skip(pos)
            if self._text.startswith(",", pos):
                pos = self._skip(pos + 1)
            elif self._text.startswith("]", pos):
                return items, pos + 1
            else:
                raise self._error(pos, "expected ',' or ']' in array")

    def _key(self, pos: int) -> tuple[Any, int]:
        text = self._text
        ch = text[pos] if pos < len(text) else ""
        if ch == '"':
            return self._string(pos + 1)
        if ch == "-" or ch.isdigit():
            number, end = self._number(pos)
            if isinstance(number, float):
                raise self._error(pos, "a map key number must be an integer")
            return number, end
        if ch == "{":
            obj, end = self._object(pos + 1)
            return ObjectKey((k, _freeze(v)) for k, v in obj.items()), end
        raise self._error(pos, "expected a string, integer or object as map key")

    def _object(self, pos: int) -> tuple[dict[Any, Any], int]:
        result: dict[Any, Any] = {}
        pos = self._skip(pos)
        if self._text.startswith("}", pos):
            return result, pos + 1
        while True:
            key, pos = self._key(pos)
            pos = self._skip(pos)
            if not self._text.startswith(":", pos):
                raise self._error(pos, "expected ':' after a map key")
            value, pos = self._value(self._skip(pos + 1))
            result[key] = value
            pos = self._skip(pos)
            if self._text.startswith(",", pos):
                pos = self._skip(pos + 1)
            elif self._text.startswith("}", pos):
                return result, pos + 1
            else:
                raise self._error(pos, "expected ',' or '}' in object")


def _freeze(value: Any) -> Any:
    """A hashable twin of a parsed value, for use inside an :class:`ObjectKey`."""
    if isinstance(value, dict):
        return ObjectKey((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON as fastjson and Java peers write it into dict / list / int / float / str / bool / None.

    Objects keep their key order. Bare integer keys come back as ``int``, object keys as
    :class:`ObjectKey`. Any malformed input raises :class:`CodecError` naming the position.
    """
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(f"JSON is not valid UTF-8: byte {exc.start} ({exc.reason})") from None
    try:
        return json.loads(text, strict=False, parse_constant=_reject_constant)
    except CodecError:
        raise
    except json.JSONDecodeError:
        pass  # maybe fastjson's bare keys; the tolerant parser decides and reports
    except RecursionError:
        raise CodecError("JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's digit limit
        raise CodecError(f"malformed JSON: {exc}") from None
    try:
        return _TolerantParser(text).parse()
    except RecursionError:
        raise CodecError("JSON nested too deeply") from None
