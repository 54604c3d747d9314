"""Body compression: Java's zlib level 5, the 5.x codec bits, optional codecs, corrupt input."""

from __future__ import annotations

import importlib.util
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import (
    CompressionType,
    compress,
    compressed_sys_flag,
    compression_type_of,
    decompress,
    decompress_for_flag,
    sysflag,
)


@given(st.binary(max_size=3000))
def test_zlib_round_trip_at_javas_level(body: bytes) -> None:
    packed = compress(body)
    assert packed == zlib.compress(body, 5)
    assert decompress(packed) == body


@pytest.mark.parametrize(
    ("flag", "kind"),
    [
        (sysflag.COMPRESSED, CompressionType.ZLIB),  # producers before the codec bits existed
        (sysflag.COMPRESSED | sysflag.COMPRESSION_ZLIB_TYPE, CompressionType.ZLIB),
        (sysflag.COMPRESSED | sysflag.COMPRESSION_LZ4_TYPE, CompressionType.LZ4),
        (sysflag.COMPRESSED | sysflag.COMPRESSION_ZSTD_TYPE, CompressionType.ZSTD),
    ],
)
def test_codec_bits(flag: int, kind: CompressionType) -> None:
    assert compression_type_of(flag) is kind
    assert compressed_sys_flag(0, kind) == sysflag.COMPRESSED | (int(kind) << 8)


def test_java_producers_mark_zlib_bodies_0x301() -> None:
    assert compressed_sys_flag(0) == 0x301
    assert compressed_sys_flag(sysflag.TRANSACTION_PREPARED_TYPE) == 0x305


@pytest.mark.parametrize("bits", [4, 5, 6, 7])
def test_unknown_codec_bits_are_refused(bits: int) -> None:
    with pytest.raises(CodecError, match=f"unknown compression type {bits}"):
        compression_type_of(sysflag.COMPRESSED | (bits << 8))


def test_uncompressed_bodies_pass_through() -> None:
    assert decompress_for_flag(b"plain", 0) == b"plain"
    assert decompress_for_flag(zlib.compress(b"packed"), sysflag.COMPRESSED) == b"packed"


@pytest.mark.parametrize(
    ("data", "match"),
    [(b"not zlib at all", "corrupt"), (zlib.compress(b"x" * 100)[:-3], "truncated"), (b"", "truncated")],
)
def test_corrupt_zlib_is_a_codec_error(data: bytes, match: str) -> None:
    with pytest.raises(CodecError, match=match):
        decompress(data)


def test_trailing_bytes_after_the_stream_are_ignored_as_java_does() -> None:
    assert decompress(zlib.compress(b"body") + b"trailer") == b"body"


def test_output_limit() -> None:
    bomb = zlib.compress(b"\0" * 1_000_000)
    with pytest.raises(CodecError, match="exceeds the limit of 1000"):
        decompress(bomb, max_size=1000)
    assert len(decompress(bomb, max_size=1_000_000)) == 1_000_000


@given(st.binary(max_size=100))
def test_arbitrary_input_raises_only_codec_errors(data: bytes) -> None:
    for kind in CompressionType:
        try:
            decompress(data, kind)
        except CodecError:
            pass


@pytest.mark.parametrize(
    ("kind", "package"), [(CompressionType.LZ4, "lz4"), (CompressionType.ZSTD, "zstandard")]
)
def test_optional_codecs(kind: CompressionType, package: str) -> None:
    if importlib.util.find_spec(package) is None:
        with pytest.raises(CodecError, match=f"install the optional '{package}' package"):
            decompress(b"anything", kind)
        with pytest.raises(CodecError, match=package):
            compress(b"anything", kind)
    else:
        assert decompress(compress(b"body " * 100, kind), kind) == b"body " * 100
