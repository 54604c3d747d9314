"""The JSON header serialization, as fastjson writes and reads a ``RemotingCommand``.

fastjson writes the bean's properties sorted by name and leaves out nulls, so a Java header is always
``code, extFields?, flag, language, opaque, remark?, serializeTypeCurrentRPC, version``; ext fields come in
Java ``HashMap`` order. Reading is lenient the way Java is: the C++ client sorts its keys, writes some ext
values as bare numbers, sends ``"remark":""`` and a trailing newline, and leaves out
``serializeTypeCurrentRPC``. Java writes the header text with ``String.getBytes(UTF_8)``, which turns an
unpaired UTF-16 surrogate (a value read from ``"\\ud800"``) into ``?``; so do both writers here.

With the C accelerator (:mod:`rocketmq_wire.accel`) the header is written in C, and a header in exactly the
layout Java writes is read in C; anything else (the C++ client's headers, malformed input) goes through
``json.loads`` below, which stays the reference.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable

from rocketmq_wire.codes import LanguageCode
from rocketmq_wire.errors import CodecError
from rocketmq_wire.fastjson import dump_str
from rocketmq_wire.header_fields import INT32_MAX, INT32_MIN, HeaderFields
from rocketmq_wire.header_speedups import header_speedups as _c
from rocketmq_wire.javahash import _KNOWN_CAPACITIES, ExtFields, infer_capacity
from rocketmq_wire.javatext import JAVA_UTF8

_key_literal = functools.lru_cache(maxsize=4096)(dump_str)

#: The stdlib's C encoder escapes exactly like fastjson except for what these find in its output: controls it
#: writes with lower-case hex digits, and characters fastjson escapes but it leaves raw (DEL, the only ASCII
#: one, is looked for on its own: the rest are found only in non-ASCII text).
_STDLIB_LOWER_HEX = re.compile(r"\\u00(?:0[bef]|1[a-f])")
_STDLIB_RAW = re.compile("[\x7f-\x9f\u2028\u2029]")
_stdlib_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def encode_json_header(
    code: int,
    language: LanguageCode,
    version: int,
    opaque: int,
    flag: int,
    remark: str | None,
    ext_items: Iterable[tuple[str, str]] | None,
) -> bytes:
    """The header bytes; ``ext_items`` already in wire order, ``None`` for no map at all."""
    ext = None if ext_items is None else dict(ext_items)
    if _c is not None:
        try:
            data = _c.encode_json_header(code, language.name, version, opaque, flag, remark, ext, False, None)
        except _c.WireError as exc:
            raise CodecError(str(exc)) from None
        if data is not None:
            return data
    return _encode_json_header(code, language, version, opaque, flag, remark, ext)


def _encode_json_header(
    code: int,
    language: LanguageCode,
    version: int,
    opaque: int,
    flag: int,
    remark: str | None,
    ext: dict[str, str] | None,
) -> bytes:
    obj: dict[str, object] = {"code": int(code)}
    if ext is not None:
        obj["extFields"] = ext
    obj["flag"] = int(flag)
    obj["language"] = language.name
    obj["opaque"] = int(opaque)
    if remark is not None:
        obj["remark"] = remark
    obj["serializeTypeCurrentRPC"] = "JSON"
    obj["version"] = int(version)
    text = _stdlib_dumps(obj)
    if _STDLIB_LOWER_HEX.search(text) or "\x7f" in text or (not text.isascii() and _STDLIB_RAW.search(text)):
        text = _fastjson_text(obj, ext)
    return text.encode("utf-8", JAVA_UTF8)  # Java's getBytes: a lone surrogate becomes "?"


def _fastjson_text(obj: dict[str, object], ext: dict[str, str] | None) -> str:
    """The same header written string by string with fastjson's own escaping (the rare, slow case)."""
    parts = []
    for name, value in obj.items():
        if name == "extFields":
            assert ext is not None
            inner = ",".join(_key_literal(k) + ":" + dump_str(v) for k, v in ext.items())
            parts.append('"extFields":{' + inner + "}")
        elif isinstance(value, str):
            parts.append(f'"{name}":' + dump_str(value))
        else:
            parts.append(f'"{name}":{value}')
    return "{" + ",".join(parts) + "}"


def _int_field(obj: dict[str, object], name: str, default: int) -> int:
    value = obj.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                raise CodecError(f"JSON header field {name!r} is not an integer: {value!r}") from None
        else:
            raise CodecError(f"JSON header field {name!r} is not an integer: {value!r}")
    if not INT32_MIN <= value <= INT32_MAX:
        raise CodecError(f"JSON header field {name!r} is out of the 32-bit range: {value}")
    return value


def _language(value: object) -> LanguageCode:
    if value is None:
        return LanguageCode.JAVA  # Java's default when the field is missing
    if isinstance(value, str):
        try:
            return LanguageCode[value]
        except KeyError:
            raise CodecError(f"JSON header has an unknown language {value!r}") from None
    if isinstance(value, int) and not isinstance(value, bool):
        return LanguageCode(value)
    raise CodecError(f"JSON header language is neither a name nor a number: {value!r}")


def _ext_value(key: str, value: object) -> str | None:
    """Ext values as Java's map of strings ends up holding them (numbers and booleans stringified)."""
    if isinstance(value, str):
        return value
    if value is None:
        return None
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return str(value)
    raise CodecError(f"JSON header ext field {key!r} is not a scalar: {type(value).__name__}")


#: What the C reader needs to build the record (the order is the C side's JX_* enum).
_DECODE_CONTEXT = (HeaderFields, ExtFields, dict(LanguageCode.__members__), _KNOWN_CAPACITIES)


def decode_json_header(data: bytes) -> HeaderFields:
    if _c is not None:
        fields = _c.decode_json_fields(data, _DECODE_CONTEXT)
        if fields is not None:
            return fields
    try:
        obj = json.loads(data)
    except UnicodeDecodeError as exc:
        raise CodecError(f"JSON header is not valid UTF-8 at byte {exc.start}") from None
    except (ValueError, RecursionError) as exc:
        raise CodecError(f"JSON header does not parse: {exc}") from None
    if not isinstance(obj, dict):
        raise CodecError(f"JSON header is a {type(obj).__name__}, not an object")

    raw_ext = obj.get("extFields")
    ext: ExtFields | None
    if raw_ext is None:
        ext = None
    elif isinstance(raw_ext, dict):
        if all(type(v) is str for v in raw_ext.values()):
            ext = ExtFields(raw_ext)
        else:
            ext = ExtFields()
            for key, value in raw_ext.items():
                text = _ext_value(key, value)
                if text is not None:
                    ext[key] = text
        ext.capacity = infer_capacity(ext)
    else:
        raise CodecError(f"JSON header extFields is a {type(raw_ext).__name__}, not an object")

    remark = obj.get("remark")
    if remark is not None and not isinstance(remark, str):
        if isinstance(remark, bool | dict | list):
            raise CodecError(f"JSON header remark is not a string: {remark!r}")
        remark = str(remark)

    return HeaderFields(
        code=_int_field(obj, "code", 0),
        language=_language(obj.get("language")),
        version=_int_field(obj, "version", 0),
        opaque=_int_field(obj, "opaque", 0),
        flag=_int_field(obj, "flag", 0),
        remark=remark,
        ext_fields=ext,
    )
