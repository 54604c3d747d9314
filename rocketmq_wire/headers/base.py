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


def _jfield(java: str, kind: type, required: bool, default: object) -> Any:
    return dataclasses.field(default=default, metadata={_JAVA: java, _KIND: kind, _REQUIRED: required})


def jstr(java: str, *, required: bool = False, default: str | None = None) -> Any:
    """A ``String`` field named ``java`` on the wire.

    ``default`` mirrors a Java field initialiser or primitive type: such fields are always sent.
    """
    return _jfield(java, str, required, default)


def jint(java: str, *, required: bool = False, default: int | None = None) -> Any:
    """An ``Integer``/``Long``/``int``/``long`` field (decimal on the wire)."""
    return _jfield(java, int, required, default)


def jbool(java: str, *, required: bool = False, default: bool | None = None) -> Any:
    """A ``Boolean``/``boolean`` field (``true``/``false`` on the wire)."""
    return _jfield(java, bool, required, default)


def jfloat(java: str, *, required: bool = False, default: float | None = None) -> Any:
    """A ``Double`` field."""
    return _jfield(java, float, required, default)


@dataclasses.dataclass(frozen=True, slots=True)
class JavaField:
    """One header field: Python attribute, Java name, value kind and whether Java marks it ``@CFNotNull``."""

    attr: str
    java: str
    kind: type
    required: bool


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


def parse_java_int(text: str, field: str) -> int:
    """``Integer.parseInt``/``Long.parseLong``: optional sign, ASCII digits, nothing else."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        raise CodecError(f"header field {field!r}: {text!r} is not a decimal integer")
    try:
        return int(text)
    except ValueError:  # more digits than int() converts (sys.set_int_max_str_digits)
        raise CodecError(f"header field {field!r}: a number of {len(body)} digits is too long") from None


def parse_value(kind: type, text: str, field: str) -> object:
    """Parse an ext-map string into a field value, as Java's header decoding does."""
    if kind is str:
        return text
    if kind is int:
        return parse_java_int(text, field)
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
                JavaField(f.name, f.metadata[_JAVA], f.metadata[_KIND], f.metadata[_REQUIRED])
                for f in dataclasses.fields(cls)
                if _JAVA in f.metadata
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
    def _parse_plan(cls) -> tuple[tuple[str, str, type, bool], ...]:
        """(attribute, Java name, kind, required) in declared order, for the C ``from_ext``."""
        cached: tuple[tuple[str, str, type, bool], ...] | None = cls.__dict__.get("_parse_plan_cache")
        if cached is None:
            cached = tuple((f.attr, f.java, f.kind, f.required) for f in cls.java_fields())
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

        Raises :class:`CodecError` when a ``@CFNotNull`` field is missing or a number does not parse.
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
                values[f.attr] = int(text)
            else:
                values[f.attr] = parse_value(kind, text, f.java)
        header = cls(**values)
        header.check()
        return header

    def check(self) -> None:
        """Java's ``checkFields``: a header class overrides it to refuse values Java refuses."""
