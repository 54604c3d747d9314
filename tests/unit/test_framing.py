"""Streaming frame decoding: arbitrary chunking, size limits checked before buffering."""

from __future__ import annotations

import random
import struct
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire import CodecError, FrameDecoder, FrameTooLargeError, RemotingCommand, SerializeType
from rocketmq_wire.framing import MAX_FRAME_SIZE


def _commands(n: int) -> list[RemotingCommand]:
    return [
        RemotingCommand(
            code=10 + i,
            opaque=i,
            ext_fields={"k": str(i)},
            body=bytes([i % 256]) * i,
            serialize_type=SerializeType(i % 2),
        )
        for i in range(n)
    ]


@given(st.lists(st.integers(1, 97), min_size=1, max_size=40))
def test_any_chunking_yields_the_same_commands(cuts: list[int]) -> None:
    commands = _commands(25)
    stream = b"".join(c.encode() for c in commands)
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    pos = 0
    for size in cuts * (len(stream) // sum(cuts) + 1):
        out += decoder.feed(stream[pos : pos + size])
        pos += size
        if pos >= len(stream):
            break
    assert [c.encode() for c in out] == [c.encode() for c in commands]
    assert decoder.buffered == 0


def test_byte_by_byte() -> None:
    commands = _commands(5)
    stream = b"".join(c.encode() for c in commands)
    decoder = FrameDecoder()
    out = []
    for i in range(len(stream)):
        out += decoder.feed(stream[i : i + 1])
    assert len(out) == 5


def test_oversized_frame_is_refused_from_its_length_prefix_alone() -> None:
    decoder = FrameDecoder()
    tracemalloc.start()
    try:
        with pytest.raises(FrameTooLargeError) as info:
            decoder.feed(struct.pack(">I", 1 << 30) + b"\x00" * 16)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.limit == MAX_FRAME_SIZE
    assert peak < 1 << 20, f"refusing a 1 GiB frame allocated {peak} bytes"
    with pytest.raises(CodecError, match="already failed"):
        decoder.feed(b"more")


def test_limit_counts_the_prefix_like_java() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(struct.pack(">I", 97))
    ok = FrameDecoder(max_frame_size=100)
    assert ok.feed(struct.pack(">I", 96)) == []


def test_too_short_frame_length() -> None:
    with pytest.raises(CodecError, match="too short"):
        FrameDecoder().feed(struct.pack(">I", 2) + b"xx")


def test_garbage_after_good_frames_keeps_the_good_ones_out_of_the_error() -> None:
    good = _commands(2)
    decoder = FrameDecoder()
    got = decoder.feed(b"".join(c.encode() for c in good))
    assert len(got) == 2
    with pytest.raises(CodecError):
        decoder.feed(struct.pack(">II", 8, 4) + b"zzzz")


def test_random_split_of_golden_like_traffic() -> None:
    rng = random.Random(7)
    commands = _commands(200)
    stream = b"".join(c.encode() for c in commands)
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    pos = 0
    while pos < len(stream):
        n = rng.randint(1, 300)
        out += decoder.feed(stream[pos : pos + n])
        pos += n
    assert [c.opaque for c in out] == list(range(200))


def test_frames_taken_one_at_a_time_leave_the_rest_as_bytes() -> None:
    """push/next: a reader that stops part-way keeps the untaken frames as their bytes, in order."""
    frames = [RemotingCommand(code=10, opaque=i, body=b"b" * i).encode() for i in range(5)]
    decoder = FrameDecoder()
    decoder.push(b"".join(frames) + frames[0][:3])
    first = decoder.next()
    assert first is not None and first.opaque == 0
    assert decoder.buffered == sum(map(len, frames[1:])) + 3
    decoder.push(frames[0][3:])  # completes a sixth frame behind the four waiting
    rest = []
    while (cmd := decoder.next()) is not None:
        rest.append(cmd.opaque)
    assert rest == [1, 2, 3, 4, 0] and decoder.buffered == 0
    decoder.push(b"\x00\x00\x00\x02ab")
    with pytest.raises(CodecError):
        decoder.next()
    with pytest.raises(CodecError):
        decoder.push(b"more")
