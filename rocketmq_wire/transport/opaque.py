"""Request ids (``opaque``) for one endpoint.

Each client or server owns its own counter: two clients in one process never share one, so their ids -- and
the logs that quote them -- stay independent. The value stays within Java's positive ``int`` range and wraps
to zero, because Java peers read it as a signed 32-bit field.
"""

from __future__ import annotations

_MAX_OPAQUE = 0x7FFFFFFF


class OpaqueCounter:
    """Hands out increasing ids; not thread-safe, like everything bound to one event loop."""

    __slots__ = ("_next",)

    def __init__(self, start: int = 0) -> None:
        if not 0 <= start <= _MAX_OPAQUE:
            raise ValueError(f"opaque start {start} outside 0..{_MAX_OPAQUE}")
        self._next = start

    def __call__(self) -> int:
        value = self._next
        self._next = 0 if value >= _MAX_OPAQUE else value + 1
        return value
