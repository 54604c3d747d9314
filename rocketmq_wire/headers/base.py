"""Typed custom headers: Java's ``CommandCustomHeader`` classes as Python dataclasses.

On the wire a custom header is nothing but string entries in the command's ext map. Java fills the map from
the header's fields in *declared* order (which matters: keys that share a ``HashMap`` bucket keep insertion
order) and renders values with ``toString()`` -- decimal for Integer/Long, ``true``/``false`` for Boolean.
Each header here declares its fields in that order with their Java names, so a header built in Python puts
exactly the entries, in exactly the order, that the Java class would. (5.x collects the fields of a header
and its superclasses through a ``HashSet``, so its true order is hash-based; the declared orders here are the
ones that reproduce every captured frame, including every frame where two keys share a bucket.)

Four headers (send V2 request, send response, pull request, pull response) also have a *fast path* in the
ROCKETMQ binary serialization: they are written entry by entry in a fixed order ahead of the ext map instead
of being merged into it. Those classes set ``FAST_FIELDS`` to that order.

Integral fields know their Java type (:func:`jint` an ``Integer``/``int``, :func:`jlong` a ``Long``/``long``),
and reading refuses a value that type cannot hold, as it refuses one that is no number: ``Integer.parseInt``
throws for both. (Apache's reflective decoder then only logs the failure and leaves the field null, so the
processor typically fails on the null and answers SYSTEM_ERROR all the same; refusing it here says why,
and keeps such a value from reaching what the broker persists.)

Rendering a header into entries and building one from them run in C when the accelerator is built
(:mod:`rocketmq_wire.accel`); the code here is the reference it follows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, Self, TypeVar

from rocketmq_wire.accel import speedups as _c
from rocketmq_wire.errors import CodecError

#: ``Long.MAX_VALUE``: the open end Java tools send for time ranges and offsets.
JAVA_LONG_MAX = (1 << 63) - 1

_JAVA = "java"
_KIND = "kind"
_REQUIRED = "required"
_BITS = "bits"

#: The widths of Java's integral types (``byte``, ``short``, ``int``, ``long`` and their boxes).
JAVA_INT_BITS = (8, 16, 32, 64)


def java_int_range(bits: int) -> tuple[int, int]:
    """The smallest and largest value of Java's signed integral type ``bits`` wide."""
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


#: The name Java's ``Integer.parseInt`` and friends stand for, by width (for error messages).
_JAVA_INT_NAMES = {8: "Java byte", 16: "Java short", 32: "Java int", 64: "Java long"}


def _jfield(java: str, kind: type, required: bool, default: object, bits: int = 0) -> Any:
    return dataclasses.field(
        default=default, metadata={_JAVA: java, _KIND: kind, _REQUIRED: required, _BITS: bits}
    )


def jstr(java: str, *, required: bool = False, default: str | None = None) -> Any:
    """A ``String`` field named ``java`` on the wire.

    ``default`` mirrors a Java field initialiser or primitive type: such fields are always sent.
    """
    return _jfield(java, str, required, default)


def jint(java: str, *, required: bool = False, default: int | None = None, bits: int = 32) -> Any:
    """An ``Integer``/``int`` field (decimal on the wire); ``bits=16`` or ``8`` for ``short``/``byte``.

    Reading refuses a value outside the Java type's range, as ``Integer.parseInt`` does.
    """
    if bits not in JAVA_INT_BITS:
        raise ValueError(f"a Java integral type is 8, 16, 32 or 64 bits wide, not {bits}")
    return _jfield(java, int, required, default, bits)


def jlong(java: str, *, required: bool = False, default: int | None = None) -> Any:
    """A ``Long``/``long`` field (decimal on the wire): :func:`jint` 64 bits wide."""
    return _jfield(java, int, required, default, 64)


def jbool(java: str, *, required: bool = False, default: bool | None = None) -> Any:
    """A ``Boolean``/``boolean`` field (``true``/``false`` on the wire)."""
    return _jfield(java, bool, required, default)


def jfloat(java: str, *, required: bool = False, default: float | None = None) -> Any:
    """A ``Double`` field."""
    return _jfield(java, float, required, default)


@dataclasses.dataclass(frozen=True, slots=True)
class JavaField:
    """One header field: Python attribute, Java name, value kind, whether Java marks it ``@CFNotNull``, and
    for an integral field the width of its Java type (0 for the other kinds)."""

    attr: str
    java: str
    kind: type
    required: bool
    bits: int = 0


def render_value(value: object) -> str:
    """Render a field value as Java's ``toString()`` would put it in the ext map."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return java_double_to_string(value)
    return str(value)


def java_double_to_string(value: float) -> str:
    """``Double.toString`` for the values headers carry (integral values get a trailing ``.0``)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    if "e" in text or "E" in text:
        mantissa, exp = text.lower().split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}E{int(exp)}"
    return text


def parse_java_int(text: str, field: str, bits: int = 64) -> int:
    """``Integer.parseInt``/``Long.parseLong`` (``bits`` 32 or 64; 16 and 8 for ``short``/``byte``): optional
    sign, ASCII digits, nothing else, and a value the Java type can hold."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        raise CodecError(f"header field {field!r}: {text!r} is not a decimal integer")
    low, high = java_int_range(bits)
    digits = body.lstrip("0") or "0"
    if len(digits) > 19:  # beyond any Java type (a long has 19 digits): refused without converting it
        name = _java_int_name(bits)
        raise CodecError(f"header field {field!r}: a number of {len(digits)} digits is too long for a {name}")
    value = -int(digits) if text[0] == "-" else int(digits)
    if not low <= value <= high:
        raise CodecError(
            f"header field {field!r}: {value} does not fit a {_java_int_name(bits)} ({low}..{high})"
        )
    return value


def _java_int_name(bits: int) -> str:
    return _JAVA_INT_NAMES.get(bits, f"{bits}-bit integer")


def parse_value(kind: type, text: str, field: str, bits: int = 64) -> object:
    """Parse an ext-map string into a field value, as Java's header decoding does; ``bits`` is the width of
    an integral field's Java type."""
    if kind is str:
        return text
    if kind is int:
        return parse_java_int(text, field, bits)
    if kind is bool:
        return text.lower() == "true"  # Boolean.parseBoolean: anything else is false
    if kind is float:
        try:
            return float(text)
        except ValueError:
            raise CodecError(f"header field {field!r}: {text!r} is not a number") from None
    raise CodecError(f"header field {field!r}: unsupported kind {kind!r}")


H = TypeVar("H", bound="CommandHeader")

#: Digit strings up to this long are converted in place; longer ones go through parse_java_int, which turns
#: int()'s refusal of a number with thousands of digits into a CodecError. (The C accelerator uses the same
#: cut: up to 18 digits fit its own conversion.)
_SHORT_DIGITS = 18
#: The largest value of each integral width, for the in-place conversion above.
_INT_MAX = {bits: java_int_range(bits)[1] for bits in JAVA_INT_BITS}


@dataclasses.dataclass(slots=True)
class CommandHeader:
    """Base of every typed header. Subclasses are dataclasses whose fields use :func:`jstr` and friends."""

    #: For the four fast-path headers: Java wire names in the order the binary fast path writes them.
    FAST_FIELDS: ClassVar[tuple[str, ...]] = ()
    #: Request codes this header is the request header of (used to recognise fast-path frames).
    REQUEST_CODES: ClassVar[tuple[int, ...]] = ()

    @classmethod
    def java_fields(cls) -> tuple[JavaField, ...]:
        """The declared fields in Java's declared order (computed once per class)."""
        cached: tuple[JavaField, ...] | None = cls.__dict__.get("_java_fields_cache")
        if cached is None:
            cached = tuple(
                JavaField(f.name, meta[_JAVA], meta[_KIND], meta[_REQUIRED], meta.get(_BITS, 0))
                for f in dataclasses.fields(cls)
                if _JAVA in (meta := f.metadata)
            )
            type.__setattr__(cls, "_java_fields_cache", cached)
        return cached

    @classmethod
    def _fast_plan(cls) -> tuple[tuple[str, str, type], ...]:
        """(attribute, Java name, kind) in fast-path order, computed once per class."""
        cached: tuple[tuple[str, str, type], ...] | None = cls.__dict__.get("_fast_plan_cache")
        if cached is None:
            by_java = {f.java: f for f in cls.java_fields()}
            cached = tuple((by_java[n].attr, n, by_java[n].kind) for n in cls.FAST_FIELDS)
            type.__setattr__(cls, "_fast_plan_cache", cached)
        return cached

    def _render(self, plan: tuple[tuple[str, str, type], ...]) -> list[tuple[str, str]]:
        if _c is not None:
            rendered = _c.render(self, plan)
            if rendered is not None:
                return rendered
        items = []
        for attr, java, kind in plan:
            value = getattr(self, attr)
            if value is None:
                continue
            if kind is str and type(value) is str:
                items.append((java, value))
            elif kind is int and type(value) is int:
                items.append((java, str(value)))
            else:
                items.append((java, render_value(value)))
        return items

    def ext_items(self) -> list[tuple[str, str]]:
        """Entries Java's ``makeCustomHeaderToNet`` would put, in declared order, nulls skipped."""
        return self._render(self._plan())

    def fast_items(self) -> list[tuple[str, str]]:
        """Entries in the binary fast-path order (``FAST_FIELDS``), nulls skipped."""
        return self._render(self._fast_plan())

    @classmethod
    def _plan(cls) -> tuple[tuple[str, str, type], ...]:
        cached: tuple[tuple[str, str, type], ...] | None = cls.__dict__.get("_plan_cache")
        if cached is None:
            cached = tuple((f.attr, f.java, f.kind) for f in cls.java_fields())
            type.__setattr__(cls, "_plan_cache", cached)
        return cached

    @classmethod
    def _parse_plan(cls) -> tuple[tuple[str, str, type, bool, int], ...]:
        """(attribute, Java name, kind, required, bits) in declared order, for the C ``from_ext``."""
        cached: tuple[tuple[str, str, type, bool, int], ...] | None = cls.__dict__.get("_parse_plan_cache")
        if cached is None:
            cached = tuple((f.attr, f.java, f.kind, f.required, f.bits) for f in cls.java_fields())
            type.__setattr__(cls, "_parse_plan_cache", cached)
        return cached

    @classmethod
    def _plain_entries(cls) -> bool:
        """Whether the class reads and writes its entries with the machinery here, which C reproduces."""
        base = CommandHeader
        return (
            cls.ext_items is base.ext_items
            and cls.fast_items is base.fast_items
            and cls._render is base._render
            and cls.from_ext.__func__ is base.from_ext.__func__  # type: ignore[attr-defined]
        )

    @classmethod
    def _plans_for_c(
        cls,
    ) -> tuple[tuple[tuple[str, str, type], ...], tuple[tuple[str, str, type], ...]] | None:
        """(declared plan, fast-path plan) for the C encoder, or ``None`` if the class renders on its own."""
        cached = cls.__dict__.get("_plans_for_c_cache", False)
        if cached is False:
            cached = (cls._plan(), cls._fast_plan()) if cls._plain_entries() else None
            type.__setattr__(cls, "_plans_for_c_cache", cached)
        return cached  # type: ignore[no-any-return]

    def to_ext(self) -> dict[str, str]:
        return dict(self.ext_items())

    @classmethod
    def from_ext(cls, ext: Mapping[str, str]) -> Self:
        """Build the header from ext-map entries; unknown entries are ignored, as Java does.

        Raises :class:`CodecError` when a ``@CFNotNull`` field is missing or a number does not parse or does
        not fit the field's Java type.
        """
        if _c is not None:
            try:
                built = _c.from_ext(cls, cls._parse_plan(), ext, parse_value)
            except _c.WireError as exc:
                raise CodecError(str(exc)) from None
            if built is not None:
                return built
        values: dict[str, object] = {}
        get = ext.get
        for f in cls.java_fields():
            text = get(f.java)
            if text is None:
                if f.required:
                    raise CodecError(f"{cls.__name__}: the custom field <{f.java}> is null")
                continue
            kind = f.kind
            if kind is str:
                values[f.attr] = text
            elif kind is int and len(text) <= _SHORT_DIGITS and text.isdigit() and text.isascii():
                number = int(text)
                if number > _INT_MAX[f.bits]:
                    number = parse_java_int(text, f.java, f.bits)  # raises, wording the refusal
                values[f.attr] = number
            else:
                values[f.attr] = parse_value(kind, text, f.java, f.bits)
        header = cls(**values)
        header.check()
        return header

    def check(self) -> None:
        """Java's ``checkFields``: a header class overrides it to refuse values Java refuses."""
