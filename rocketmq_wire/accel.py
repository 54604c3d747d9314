"""The one switch between the optional C accelerator and the pure-Python codec.

``rocketmq_wire._speedups`` (``_speedups.c``) is compiled at install time when a C compiler is at hand;
``setup.py`` declares it optional, so without one the package installs all the same. The pure-Python code in
the codec modules stays the reference: the C functions reproduce it for the inputs that matter for speed and
return ``None`` ("declined") for anything else, and the caller then runs the reference, so the two paths
cannot disagree on unusual input. ``RMQ_NO_SPEEDUPS=1`` in the environment forces pure Python.

The modules that use the accelerator (:data:`WIRED_MODULES`) hold it in a module global ``_c`` and test it on
each call, rather than binding functions once, so that :func:`pure_python` can switch a running process to
the reference path: the benchmark and the tests compare both paths in one run.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Protocol, TypeVar, cast

_log = logging.getLogger(__name__)

T = TypeVar("T")


class FileMap(Protocol):
    """A shared writable map of a file (``_speedups.FileMap``, POSIX builds only; the broker's store
    reads ``speedups`` for it itself). Holds no descriptor of its own and exports no buffer."""

    @property
    def closed(self) -> bool: ...

    def write(self, offset: int, data: bytes, /) -> None: ...

    def close(self) -> None: ...


class Speedups(Protocol):
    """The functions of ``_speedups.c``. ``None`` from one means "not handled here, run the reference"."""

    WireError: type[ValueError]

    def java_string_hash(self, value: str, /) -> int: ...

    def items_java_order(
        self, ext: Mapping[str, str], capacity: int | None, /
    ) -> list[tuple[str, str]] | None: ...

    def infer_capacity(self, keys: Iterable[str], known: tuple[int | None, ...], /) -> object:
        """The capacity (``int | None``), or ``NotImplemented`` to decline."""
        ...

    def decode_entries(self, data: bytes, start: int, end: int, /) -> list[tuple[str, str]] | None: ...

    def encode_entries(self, entries: list[tuple[str, str]], /) -> bytes | None: ...

    def encode_binary_header(
        self,
        code: int,
        language: int,
        version: int,
        opaque: int,
        flag: int,
        remark: str | None,
        entries: list[tuple[str, str]],
        /,
    ) -> bytes | None: ...

    def render(
        self, header: object, plan: tuple[tuple[str, str, type], ...], /
    ) -> list[tuple[str, str]] | None: ...

    def from_ext(
        self,
        cls: type[T],
        fields: tuple[tuple[str, str, type, bool, int], ...],
        ext: Mapping[str, str],
        parse_value: Callable[[type, str, str, int], object],
        /,
    ) -> T | None: ...

    def encode_json_header(
        self,
        code: int,
        language: str,
        version: int,
        opaque: int,
        flag: int,
        remark: str | None,
        ext: Mapping[str, str] | None,
        java_order: bool,
        capacity: int | None,
        /,
    ) -> bytes | None: ...

    def encode_header(
        self,
        serialize: int,
        code: int,
        language: int,
        version: int,
        opaque: int,
        flag: int,
        remark: str | None,
        header: object,
        plan: tuple[tuple[str, str, type], ...] | None,
        fast: bool,
        ext: Mapping[str, str] | None,
        /,
    ) -> bytes | None: ...

    # decode_binary_fields and decode_json_fields are typed in rocketmq_wire.header_speedups: they build the
    # HeaderFields record, which sits above this module.

    def encode_command(self, command: object, /) -> bytes | None: ...

    def decode_command(self, cls: type[T], frame: bytes, context: tuple[object, ...], /) -> T | None: ...

    def encode_stored(self, message: object, /) -> bytes | None: ...

    def encode_properties(
        self, pairs: Mapping[str, str | None] | list[tuple[str, str | None]], v5: bool, /
    ) -> str | None: ...

    def decode_properties(self, text: str, /) -> dict[str, str] | None: ...

    def decode_batch(
        self, cls: Callable[[bytes, str, int, int, int], T], data: bytes, /
    ) -> list[T] | None: ...

    def index_put(
        self,
        index_map: object,
        slot_count: int,
        entries_base: int,
        room: int,
        count: int,
        begin_phy_offset: int,
        begin_timestamp: int,
        entries: list[tuple[str, int, int]],
        /,
    ) -> tuple[int, int, int, int, int, int, int] | None:
        """The broker's message-key index (``broker.store.index_file``, which reads ``speedups`` itself)."""
        ...


def _load() -> tuple[Speedups | None, str]:
    """The C module (``None`` for pure Python) and, in words, which path that is and why."""
    if os.environ.get("RMQ_NO_SPEEDUPS", "") not in ("", "0"):
        path = "pure Python (RMQ_NO_SPEEDUPS is set)"
        _log.debug("rocketmq_wire codec: %s", path)
        return None, path
    try:
        module = importlib.import_module("rocketmq_wire._speedups")
    except ImportError as exc:
        path = f"pure Python (the C accelerator is not built: {exc})"
        _log.debug("rocketmq_wire codec: %s", path)
        return None, path
    path = f"C accelerator ({module.__file__})"
    _log.debug("rocketmq_wire codec: %s", path)
    return cast(Speedups, module), path


#: The C module, or ``None`` when the codec runs pure Python.
#: :data:`CODEC_PATH` says the same in words, with the reason or the module's file, for ``rmq --version``
#: and bug reports: whether an install compiled the accelerator is otherwise invisible.
speedups, CODEC_PATH = _load()
#: Whether the codec runs the C accelerator.
ACCELERATED: bool = speedups is not None

#: Modules that read the accelerator from their global ``_c``.
WIRED_MODULES = (
    "rocketmq_wire.javahash",
    "rocketmq_wire.headers.base",
    "rocketmq_wire.header_binary",
    "rocketmq_wire.header_json",
    "rocketmq_wire.command",
    "rocketmq_wire.message.stored",
    "rocketmq_wire.message.properties",
    "rocketmq_wire.message.batch",
)


@contextlib.contextmanager
def pure_python() -> Iterator[None]:
    """Run the codec on its pure-Python reference inside the block (not thread-safe: it is process-wide)."""
    modules = [importlib.import_module(name) for name in WIRED_MODULES]
    saved = [getattr(module, "_c") for module in modules]  # noqa: B009 -- a module global, read by name
    for module in modules:
        setattr(module, "_c", None)  # noqa: B010
    try:
        yield
    finally:
        for module, value in zip(modules, saved, strict=True):
            setattr(module, "_c", value)  # noqa: B010
