"""Message body compression as Java producers do it, and decompression of what any producer sent.

A Java producer compresses a body larger than 4 KiB with zlib at level 5 and marks it with the ``COMPRESSED``
sysflag bit plus, since 4.9.4, the codec number in bits 8-10 (zlib is 3; a zero there means zlib too, from
older producers). 5.x producers may be configured for LZ4 (1) or Zstandard (2); those need the optional
``lz4`` / ``zstandard`` packages, which this project does not depend on — without them such a body raises a
:class:`CodecError` that names the missing package.

Python's ``zlib`` at level 5 produces the same bytes as Java's ``Deflater`` at level 5 (both are zlib), which
the golden frames confirm, so a body we compress is byte-identical to a Java producer's.
"""

from __future__ import annotations

import enum
import importlib
import zlib
from types import ModuleType

from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import sysflag

#: Java producers compress bodies larger than this many bytes (``compressMsgBodyOverHowmuch``).
DEFAULT_COMPRESS_OVER = 4096
#: Java producers' default compression level (``compressLevel``).
DEFAULT_LEVEL = 5


class CompressionType(enum.IntEnum):
    """Codec numbers of sysflag bits 8-10."""

    LZ4 = 1
    ZSTD = 2
    ZLIB = 3


def compression_type_of(sys_flag: int) -> CompressionType:
    """The codec of a compressed body; bits 8-10 at zero mean zlib, as before the bits existed."""
    bits = sysflag.compression_bits(sys_flag)
    if bits == 0:
        return CompressionType.ZLIB
    try:
        return CompressionType(bits)
    except ValueError:
        raise CodecError(f"unknown compression type {bits} in message sysFlag {sys_flag:#x}") from None


def compressed_sys_flag(sys_flag: int, kind: CompressionType = CompressionType.ZLIB) -> int:
    """``sys_flag`` marked as a Java producer marks a body it compressed with ``kind``."""
    return sysflag.with_compression_bits(sys_flag | sysflag.COMPRESSED, int(kind))


_OPTIONAL_MODULES = {
    CompressionType.LZ4: ("lz4.frame", "lz4"),
    CompressionType.ZSTD: ("zstandard", "zstandard"),
}


def _optional_codec(kind: CompressionType) -> ModuleType:
    module_name, package = _OPTIONAL_MODULES[kind]
    try:
        return importlib.import_module(module_name)
    except ImportError:
        raise CodecError(
            f"message body is {kind.name}-compressed; install the optional {package!r} package to read it"
        ) from None


def compress(body: bytes, kind: CompressionType = CompressionType.ZLIB, level: int = DEFAULT_LEVEL) -> bytes:
    if kind is CompressionType.ZLIB:
        return zlib.compress(body, level)
    module = _optional_codec(kind)
    try:
        if kind is CompressionType.LZ4:
            return bytes(module.compress(body))
        return bytes(module.ZstdCompressor(level=level).compress(body))
    except Exception as exc:
        raise CodecError(f"{kind.name} compression failed: {exc}") from None


def decompress(
    data: bytes, kind: CompressionType = CompressionType.ZLIB, max_size: int | None = None
) -> bytes:
    """The original body; ``max_size`` bounds the output so a tiny body cannot expand without limit.

    Bytes after the end of a zlib stream are ignored, as Java's ``InflaterInputStream`` ignores them.
    """
    if kind is CompressionType.ZLIB:
        out = _inflate(data, max_size)
    else:
        module = _optional_codec(kind)
        try:
            if kind is CompressionType.LZ4:
                out = bytes(module.decompress(data))
            else:
                out = bytes(module.ZstdDecompressor().decompressobj().decompress(data))
        except Exception as exc:
            raise CodecError(f"{kind.name}-compressed message body is corrupt: {exc}") from None
    if max_size is not None and len(out) > max_size:
        raise CodecError(f"decompressed message body exceeds the limit of {max_size} bytes")
    return out


def _inflate(data: bytes, max_size: int | None) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, 0 if max_size is None else max_size + 1)
    except zlib.error as exc:
        raise CodecError(f"zlib-compressed message body is corrupt: {exc}") from None
    if max_size is not None and len(out) > max_size:
        raise CodecError(f"decompressed message body exceeds the limit of {max_size} bytes")
    if not inflater.eof:
        raise CodecError(f"zlib-compressed message body is truncated ({len(data)} bytes end mid-stream)")
    return out


def decompress_for_flag(data: bytes, sys_flag: int, max_size: int | None = None) -> bytes:
    """``data`` decompressed if ``sys_flag`` says it is compressed, else unchanged."""
    if not sys_flag & sysflag.COMPRESSED:
        return data
    return decompress(data, compression_type_of(sys_flag), max_size)
