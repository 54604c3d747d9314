"""The ROCKETMQ binary header serialization (``RocketMQSerializable``).

Layout (declared in ``layouts.ROCKETMQ_HEADER``): code, language byte, version, opaque, flag, remark with an
int length, then the ext map as entries of (short key length, key, int value length, value).

Java 4.9.8+ has a fast path for four headers (send V2 request, send response, pull request, pull response):
their fields are written as entries in a fixed order *before* whatever the ext map holds. When an RPC hook
had copied the header into the ext map too (mqadmin's ACL signing does), the same keys appear twice; Java's
reader keeps the last value. We read such a prefix back into the typed header so that writing the command
again gives the same bytes, and ``RemotingCommand.fields()`` gives the merged view Java sees.

Text is written as Java writes it: an unpaired UTF-16 surrogate (which a JSON peer can put in a value)
becomes ``?`` (:mod:`rocketmq_wire.javatext`).

The loops over entries run in C when the accelerator is built (:mod:`rocketmq_wire.accel`); the Python code
is the reference, and runs whenever the C code declines an input.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable

from rocketmq_wire.codes import LanguageCode
from rocketmq_wire.errors import CodecError
from rocketmq_wire.header_fields import INT16_MAX, INT16_MIN, INT32_MAX, INT32_MIN, HeaderFields
from rocketmq_wire.header_speedups import header_speedups as _c
from rocketmq_wire.headers.base import CommandHeader, parse_value
from rocketmq_wire.javahash import _KNOWN_CAPACITIES, ExtFields, infer_capacity
from rocketmq_wire.javatext import JAVA_UTF8
from rocketmq_wire.layouts import ROCKETMQ_FIXED_FORMAT

_FIXED = struct.Struct(ROCKETMQ_FIXED_FORMAT)
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_LANGUAGES = {int(member): member for member in LanguageCode}


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise CodecError(f"{name} {value} does not fit the binary header ({low}..{high})")


@functools.lru_cache(maxsize=4096)
def _key_prefix(key: str) -> bytes:
    """A key with its length, as written before every value (keys repeat, so this is cached)."""
    kb = key.encode("utf-8", JAVA_UTF8)
    if len(kb) > INT16_MAX:
        raise CodecError(f"ext key of {len(kb)} bytes is too long for the binary header")
    return _SHORT.pack(len(kb)) + kb


def encode_entries(entries: Iterable[tuple[str, str]]) -> bytes:
    if _c is not None:
        entries = entries if type(entries) is list else list(entries)
        try:
            data = _c.encode_entries(entries)
        except _c.WireError as exc:
            raise CodecError(str(exc)) from None
        if data is not None:
            return data
    parts: list[bytes] = []
    append = parts.append
    pack = _INT.pack
    for key, value in entries:
        vb = value.encode("utf-8", JAVA_UTF8)
        append(_key_prefix(key))
        append(pack(len(vb)))
        append(vb)
    return b"".join(parts)


def encode_binary_header(
    code: int,
    language: LanguageCode,
    version: int,
    opaque: int,
    flag: int,
    remark: str | None,
    ext_entries: Iterable[tuple[str, str]],
) -> bytes:
    """The header bytes; ``ext_entries`` in wire order (fast-path fields first, then the map)."""
    if _c is not None:
        ext_entries = ext_entries if type(ext_entries) is list else list(ext_entries)
        try:
            data = _c.encode_binary_header(code, language, version, opaque, flag, remark, ext_entries)
        except _c.WireError as exc:
            raise CodecError(str(exc)) from None
        if data is not None:
            return data
    _check_range("code", code, INT16_MIN, INT16_MAX)
    _check_range("version", version, INT16_MIN, INT16_MAX)
    _check_range("opaque", opaque, INT32_MIN, INT32_MAX)
    _check_range("flag", flag, INT32_MIN, INT32_MAX)
    lang = int(language)
    if not -128 <= lang <= 127:
        raise CodecError(f"language {lang} does not fit in a byte")
    remark_bytes = remark.encode("utf-8", JAVA_UTF8) if remark else b""
    ext_bytes = encode_entries(ext_entries)
    return b"".join(
        (
            _FIXED.pack(code, lang, version, opaque, flag, len(remark_bytes)),
            remark_bytes,
            _INT.pack(len(ext_bytes)),
            ext_bytes,
        )
    )


def decode_entries(data: bytes, start: int, end: int) -> list[tuple[str, str]]:
    """Ext entries between ``start`` and ``end``, duplicates and all, in wire order."""
    if _c is not None:
        try:
            decoded = _c.decode_entries(data, start, end)
        except _c.WireError as exc:
            raise CodecError(str(exc)) from None
        if decoded is not None:
            return decoded
    entries: list[tuple[str, str]] = []
    append = entries.append
    short_at = _SHORT.unpack_from
    int_at = _INT.unpack_from
    pos = start
    try:
        while pos < end:
            if end - pos < 6:
                raise CodecError(f"ext map ends inside an entry header at offset {pos}")
            klen = short_at(data, pos)[0]
            pos += 2
            if klen < 0 or pos + klen + 4 > end:
                raise CodecError(f"ext key length {klen} at offset {pos - 2} runs past the ext map")
            key = data[pos : pos + klen].decode("utf-8")
            pos += klen
            vlen = int_at(data, pos)[0]
            pos += 4
            if vlen < 0 or pos + vlen > end:
                raise CodecError(f"ext value length {vlen} for key {key!r} runs past the ext map")
            append((key, data[pos : pos + vlen].decode("utf-8")))
            pos += vlen
    except UnicodeDecodeError as exc:
        raise CodecError(f"ext entry near offset {pos} is not valid UTF-8: {exc.reason}") from None
    return entries


@functools.cache
def fast_path_candidates(code: int, is_response: bool) -> tuple[type[CommandHeader], ...]:
    """Fast-path header classes a frame with this code and direction may start with."""
    from rocketmq_wire.headers import FAST_PATH_HEADERS

    if is_response:
        return tuple(h for h in FAST_PATH_HEADERS if not h.REQUEST_CODES)
    return tuple(h for h in FAST_PATH_HEADERS if code in h.REQUEST_CODES)


def _fast_prefix_length(header_cls: type[CommandHeader], entries: list[tuple[str, str]]) -> int:
    """How many leading entries follow the class's fast-path field order (each field at most once)."""
    order = header_cls.FAST_FIELDS
    pos = 0
    for count, (key, _) in enumerate(entries):
        try:
            pos = order.index(key, pos) + 1
        except ValueError:
            return count
    return len(entries)


def split_fast_path(
    candidates: Iterable[type[CommandHeader]], entries: list[tuple[str, str]]
) -> tuple[CommandHeader | None, list[tuple[str, str]]]:
    """Take a fast-path header off the front of ``entries`` if one of ``candidates`` wrote it.

    The prefix is accepted only if the typed header renders it back to the very same entries, so reading
    a frame that merely looks similar never changes what it re-encodes to.
    """
    for header_cls in candidates:
        n = _fast_prefix_length(header_cls, entries)
        if n == 0:
            continue
        prefix = entries[:n]
        try:
            header = header_cls.from_ext(dict(prefix))
        except CodecError:
            continue
        if list(header.fast_items()) == prefix:
            return header, entries[n:]
    return None, entries


def ext_from_entries(entries: list[tuple[str, str]]) -> ExtFields | None:
    if not entries:
        return None
    ext = ExtFields(entries)  # a repeated key keeps its first place and its last value, as in Java
    ext.capacity = infer_capacity(ext)
    return ext


@functools.cache
def _decode_context() -> tuple[object, ...] | None:
    """What the C decoder needs to build the record and split off a fast-path header, gathered once.

    ``None`` (decode in Python) if a fast-path class reads or renders its entries its own way, which C
    would not reproduce.
    """
    from rocketmq_wire.headers import FAST_PATH_HEADERS

    def candidate(cls: type[CommandHeader]) -> tuple[object, ...] | None:
        if not cls._plain_entries() or len(set(cls.FAST_FIELDS)) != len(cls.FAST_FIELDS):
            return None
        index = {name: i for i, name in enumerate(cls.FAST_FIELDS)}
        fields = tuple((*field, index.get(field[1], -1)) for field in cls._parse_plan())
        # cls(**values) is object.__new__(cls), then cls.__init__, unless __new__ or a metaclass intervenes
        plain = cls.__new__ is object.__new__ and type(cls).__call__ is type.__call__
        return (cls, cls.FAST_FIELDS, fields, cls._fast_plan(), cls.__init__ if plain else None)

    candidates = {cls: candidate(cls) for cls in FAST_PATH_HEADERS}
    if any(c is None for c in candidates.values()):
        return None
    requests = {
        int(code): tuple(candidates[cls] for cls in fast_path_candidates(int(code), False))
        for cls in FAST_PATH_HEADERS
        for code in cls.REQUEST_CODES
    }
    responses = tuple(candidates[cls] for cls in fast_path_candidates(0, True))
    # the order is the C side's BX_* enum
    return (
        HeaderFields,
        ExtFields,
        _LANGUAGES,
        LanguageCode,
        _KNOWN_CAPACITIES,
        requests,
        responses,
        CodecError,
        parse_value,
    )


def decode_binary_header(data: bytes) -> HeaderFields:
    if _c is not None:
        context = _decode_context()
        if context is not None:
            try:
                fields = _c.decode_binary_fields(data, context)
            except _c.WireError as exc:
                raise CodecError(str(exc)) from None
            if fields is not None:
                return fields
    size = len(data)
    if size < _FIXED.size + 4:
        raise CodecError(f"binary header of {size} bytes is shorter than the fixed part ({_FIXED.size + 4})")
    code, lang, version, opaque, flag, remark_len = _FIXED.unpack_from(data, 0)
    pos = _FIXED.size
    if remark_len < 0 or pos + remark_len + 4 > size:
        raise CodecError(f"remark length {remark_len} runs past the header of {size} bytes")
    remark: str | None = None
    if remark_len > 0:
        try:
            remark = data[pos : pos + remark_len].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(f"remark is not valid UTF-8: {exc.reason}") from None
    pos += remark_len
    (ext_len,) = _INT.unpack_from(data, pos)
    pos += 4
    if ext_len < 0 or pos + ext_len > size:
        raise CodecError(f"ext map length {ext_len} runs past the header of {size} bytes")
    entries = decode_entries(data, pos, pos + ext_len) if ext_len > 0 else []
    return _header_fields(code, lang, version, opaque, flag, remark, entries)


def _header_fields(
    code: int,
    lang: int,
    version: int,
    opaque: int,
    flag: int,
    remark: str | None,
    entries: list[tuple[str, str]],
) -> HeaderFields:
    """The record, from the header's fixed fields and its ext entries in wire order."""
    fast_header: CommandHeader | None = None
    if entries:
        candidates = fast_path_candidates(code, bool(flag & 1))
        if candidates:
            fast_header, entries = split_fast_path(candidates, entries)
    language = _LANGUAGES.get(lang) or LanguageCode(lang)
    return HeaderFields(code, language, version, opaque, flag, remark, ext_from_entries(entries), fast_header)
