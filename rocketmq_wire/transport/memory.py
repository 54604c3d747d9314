"""Giving memory back to the system after a burst.

CPython frees small objects into its own arenas and everything else through the C library's ``free``, and
glibc keeps freed heap memory for reuse rather than return it while anything above it is still in use. After
a burst (thousands of requests and answers held for peers that did not read them) a server would keep that
footprint for good, although it holds nothing any more. ``malloc_trim`` returns the free parts of every heap.
It costs a few milliseconds on a large heap, so servers call it only after their bounds were reached and the
pressure is gone again, never per request.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
from collections.abc import Callable

logger = logging.getLogger("rocketmq_wire.transport")


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None on a C library without it (musl, macOS)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_freed_memory() -> bool:
    """Return the C heap's free memory to the system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    logger.debug("returned freed heap memory to the system")
    return True
