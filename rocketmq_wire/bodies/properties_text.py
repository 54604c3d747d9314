"""Configuration as ``key=value`` lines: GET_/UPDATE_BROKER_CONFIG and GET_/UPDATE_NAMESRV_CONFIG bodies.

Not JSON: Java writes ``MixAll.properties2String`` -- one ``key=value\\n`` per entry, nothing escaped --
and reads with ``Properties.load``. 5.x writes the keys sorted; 4.x in the iteration order of the
``Properties`` object, which on Java 9 and later is a ``ConcurrentHashMap`` (8 requested, so 16 buckets
to start). Reading accepts the whole ``Properties`` line syntax (comments, ``:`` or blanks as separators,
continuation lines, backslash escapes), decoding the body as UTF-8 as Java encodes it.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Self

from rocketmq_wire.bodies.java_collections import JavaTable, MapKind, map_in_java_order, read_map, string_hash
from rocketmq_wire.errors import CodecError
from rocketmq_wire.javatext import JAVA_UTF8

#: ``new Properties()`` on Java 9+: ``new ConcurrentHashMap<>(8)`` underneath.
PROPERTIES_TABLE = JavaTable(MapKind.CONCURRENT_HASH_MAP, 8)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BLANKS = " \t\f"
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _utf16_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _logical_lines(text: str) -> list[str]:
    """Natural lines joined where one ends in an odd number of backslashes; comments and blanks dropped."""
    lines: list[str] = []
    pending: str | None = None
    for natural in _LINE_BREAK.split(text):
        line = natural.lstrip(_BLANKS)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending = (pending or "") + line[:-1]
            continue
        lines.append((pending or "") + line)
        pending = None
    if pending is not None:
        lines.append(pending)
    return lines


def _unescape(text: str, line: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        ch = text[index]
        index += 1
        if ch != "\\" or index >= len(text):
            out.append(ch)
            continue
        ch = text[index]
        index += 1
        if ch == "u":
            digits = text[index : index + 4]
            if len(digits) < 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise CodecError(f"malformed \\uxxxx escape in properties line {line[:80]!r}")
            out.append(chr(int(digits, 16)))
            index += 4
        else:
            out.append(_SIMPLE_ESCAPES.get(ch, ch))
    return "".join(out)


def _split_line(line: str) -> tuple[str, str]:
    """Key and value of one logical line, as ``Properties.load`` splits it."""
    index = 0
    while index < len(line):
        ch = line[index]
        if ch == "\\":
            index += 2
            continue
        if ch in "=:" or ch in _BLANKS:
            break
        index += 1
    key = line[:index]
    rest = line[index:].lstrip(_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return _unescape(key, line), _unescape(rest, line)


@functools.lru_cache(maxsize=16)
def _inserted_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The order a ``Properties`` filled with ``keys`` iterates them. Cached: working it out replays the
    table's growth (about 0.5 ms for a broker's 170 settings), and a broker answers GET_BROKER_CONFIG with
    the same key set every time."""
    return tuple(key for key, _ in map_in_java_order(dict.fromkeys(keys, ""), string_hash, PROPERTIES_TABLE))


@dataclasses.dataclass(kw_only=True)
class PropertiesBody:
    """A configuration as Java's ``key=value`` text; ``sorted_keys`` as 5.x writes it, else 4.x's order."""

    properties: dict[str, str] = dataclasses.field(default_factory=dict)
    sorted_keys: bool = True

    def to_text(self) -> bytes:
        """``properties2String`` as UTF-8."""
        if self.sorted_keys:
            entries = sorted(self.properties.items(), key=lambda kv: _utf16_key(kv[0]))
        elif type(self.properties) is dict:  # built here, in insertion order: same keys, same order
            entries = [(key, self.properties[key]) for key in _inserted_order(tuple(self.properties))]
        else:  # read off the wire: its own table decides
            entries = map_in_java_order(self.properties, string_hash, PROPERTIES_TABLE)
        return "".join(f"{key}={value}\n" for key, value in entries).encode("utf-8", JAVA_UTF8)

    @classmethod
    def from_text(cls, data: bytes | bytearray | memoryview | str) -> Self:
        """Parse ``Properties.load`` syntax; the key order read tells which way it was written."""
        if isinstance(data, str):
            text = data
        else:
            try:
                text = bytes(data).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CodecError(f"properties text is not UTF-8: byte {exc.start} ({exc.reason})") from None
        entries: dict[str, str] = {}
        for line in _logical_lines(text):
            key, value = _split_line(line)
            entries[key] = value
        keys = list(entries)
        is_sorted = len(keys) > 1 and keys == sorted(keys, key=_utf16_key)
        if is_sorted:
            return cls(properties=entries, sorted_keys=True)
        return cls(properties=read_map(entries.items(), string_hash, PROPERTIES_TABLE), sorted_keys=False)
