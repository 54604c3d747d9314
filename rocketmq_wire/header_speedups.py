"""The C accelerator's header readers, typed with the record they build.

They live apart from :mod:`rocketmq_wire.accel` because their result, :class:`HeaderFields`, is defined
above the modules that load the accelerator (``headers.base`` and ``javahash`` need it): typing them there
would tie the loader and the record in an import circle.
"""

from __future__ import annotations

from typing import Protocol, cast

from rocketmq_wire.accel import Speedups, speedups
from rocketmq_wire.header_fields import HeaderFields


class HeaderSpeedups(Speedups, Protocol):
    """``_speedups.c`` with its two header readers: ``None`` from one means "run the reference"."""

    def decode_binary_fields(self, data: bytes, context: tuple[object, ...], /) -> HeaderFields | None: ...

    def decode_json_fields(self, data: bytes, context: tuple[object, ...], /) -> HeaderFields | None: ...


#: The loaded accelerator seen with its header readers, or None when the reference runs.
header_speedups = cast("HeaderSpeedups | None", speedups)
