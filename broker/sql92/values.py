"""Java's values and comparisons, as Apache's SQL92 filter sees them.

The filter is Java code whose outcome depends on Java's boxed types: a literal ``5`` is an ``Integer``,
``5000000000`` a ``Long``, ``5.5`` a ``Double``, and a message property is always a ``String``. Comparing two
of different types converts one of them (Apache's ``ComparisonExpression`` with string conversion on, which
its broker always compiles with), and a conversion that fails is an error that drops the message. Python's
numbers do not carry these types, so :class:`JavaLong` marks a ``Long``; a plain ``int`` is an ``Integer``,
``float`` a ``Double``, ``bool`` a ``Boolean``, ``str`` a ``String`` and ``None`` SQL's NULL.
"""

from __future__ import annotations

import decimal
import math
import re
from typing import Any

#: What a filter expression's terms evaluate to.
Value = bool | int | float | str | None

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


class JavaLong(int):
    """An integer Java holds as a ``Long`` (a literal beyond ``Integer``'s range, or a converted one)."""

    __slots__ = ()


class EvaluationError(Exception):
    """Java threw while evaluating (a failed conversion, a cast): Apache's broker then drops the message."""


_JAVA_INTEGER = re.compile(r"[+-]?\d+\Z")  # any Unicode decimal digit, as Character.digit
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|((([0-9]+\.?[0-9]*)|(\.[0-9]+))([eE][+-]?[0-9]+)?[fFdD]?))\Z")
_JAVA_HEX_DOUBLE = re.compile(r"[+-]?0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*[pP][+-]?[0-9]+[fFdD]?\Z")


def parse_java_long(text: str, low: int = LONG_MIN, high: int = LONG_MAX) -> int:
    """``Long.valueOf`` (``Integer.valueOf`` with its bounds); ValueError where Java throws."""
    if not _JAVA_INTEGER.match(text):
        raise ValueError(f'For input string: "{text}"')
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f'For input string: "{text}"')
    return value


def parse_java_double(text: str) -> float:
    """``Double.valueOf``: Java trims control characters and spaces and takes its own spellings only."""
    trimmed = text.strip("".join(chr(c) for c in range(33)))
    if _JAVA_DOUBLE.match(trimmed):
        body = trimmed.rstrip("fFdD") if not trimmed.endswith("Infinity") else trimmed
        return float(body.replace("Infinity", "inf"))
    if _JAVA_HEX_DOUBLE.match(trimmed):
        return float.fromhex(trimmed.rstrip("fFdD"))
    raise ValueError(f'For input string: "{text}"')


def java_boolean(text: str) -> bool:
    """``Boolean.valueOf``: true for ``true`` in any case, false for anything else."""
    return text.lower() == "true"


def _sign(a: Any, b: Any) -> int:
    return int(a > b) - int(a < b)


def compare_same(left: Value, right: Value) -> int:
    """``compareTo`` of two values of the same Java type."""
    if isinstance(left, str) and isinstance(right, str):
        if left.isascii() and right.isascii():
            return _sign(left, right)
        return _sign(left.encode("utf-16-be", "surrogatepass"), right.encode("utf-16-be", "surrogatepass"))
    if isinstance(left, float) and isinstance(right, float):
        return _sign(_double_key(left), _double_key(right))
    return _sign(left, right)


def _double_key(value: float) -> tuple[int, float, int]:
    if math.isnan(value):
        return (1, 0.0, 0)
    if value == 0.0:
        return (0, 0.0, 1 if math.copysign(1.0, value) > 0 else 0)
    return (0, value, 0)


def kind(value: Value) -> str:
    """Java's class of a value: B(oolean), S(tring), D(ouble), L(ong), I(nteger)."""
    if isinstance(value, bool):
        return "B"
    if isinstance(value, str):
        return "S"
    if isinstance(value, float):
        return "D"
    if isinstance(value, JavaLong):
        return "L"
    return "I"


def _number(text: str, target: str) -> Value:
    try:
        if target == "I":
            return parse_java_long(text, INT_MIN, INT_MAX)
        if target == "L":
            return JavaLong(parse_java_long(text))
        return parse_java_double(text)
    except ValueError as error:
        raise EvaluationError(
            f"java.lang.RuntimeException: java.lang.NumberFormatException: {error}"
        ) from None


def compare(left: Value, right: Value) -> int:
    """Apache's ``__compare`` with string conversion on: the value of one type is converted to the other's
    where Java does, ``-1`` where it gives up, :class:`EvaluationError` where Java throws."""
    lk, rk = kind(left), kind(right)
    if lk == rk:
        return compare_same(left, right)
    if lk == "B":
        if rk == "S":  # Apache casts the Boolean to a String here: a ClassCastException
            raise EvaluationError("java.lang.ClassCastException: Boolean cannot be cast to String")
        return -1
    if lk == "S":
        assert isinstance(left, str)
        if rk == "B":
            return compare_same(java_boolean(left), right)
        return compare_same(_number(left, rk), right)
    if rk == "B":
        return -1
    if rk == "S":
        assert isinstance(right, str)
        return compare_same(left, _number(right, lk))
    # two numbers of different types: both to the wider one (Integer < Long < Double)
    if "D" in (lk, rk):
        return compare_same(float(left), float(right))  # type: ignore[arg-type]
    return compare_same(JavaLong(left), JavaLong(right))  # type: ignore[arg-type]


def java_equals(left: Value, right: Value) -> bool:
    """``left.equals(right)``: same Java class and value (Double by bits: NaN equals NaN, 0.0 not -0.0)."""
    if kind(left) != kind(right):
        return False
    if isinstance(left, float) and isinstance(right, float):
        return _double_key(left) == _double_key(right)
    return left == right


def java_text(value: Value) -> str:
    """``String.valueOf`` of a value, for the remarks that quote one (``Double.toString``'s spelling)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_text(value)
    return str(value)


def java_double_text(value: float) -> str:
    """``Double.toString``: plain between 10^-3 and 10^7, else ``d.dddE±n``, shortest digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "0.0" if math.copysign(1.0, value) > 0 else "-0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    mantissa = text[0] + "." + (text[1:] or "0")
    return f"{'-' if sign else ''}{mantissa}E{len(text) - 1 + exponent}"
