"""JSON as Alibaba fastjson writes it, which is what every Java RocketMQ peer sends and expects.

fastjson differs from strict JSON writers in ways that show on the wire: bean fields come out sorted by
name, nulls are omitted, control characters are escaped as ``\\u00XX`` (upper-case hex) except the short
forms, non-ASCII text is written raw as UTF-8, and ``/`` is not escaped.
"""

from __future__ import annotations

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _escape_char(ch: str) -> str:
    short = _SHORT_ESCAPES.get(ch)
    if short is not None:
        return short
    return f"\\u{ord(ch):04X}"


# Characters fastjson escapes: the C0 controls, the quote and the backslash.
_NEEDS_ESCAPE = frozenset([chr(c) for c in range(0x20)] + ['"', "\\"])
_TRANSLATE = {ord(ch): _escape_char(ch) for ch in _NEEDS_ESCAPE}


def dump_str(value: str) -> str:
    """Quote ``value`` as a fastjson string literal."""
    return '"' + value.translate(_TRANSLATE) + '"'
