"""Mutated golden frames: a decoder may accept or refuse them, but only with CodecError."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_wire import CodecError, FrameDecoder, RemotingCommand
from tests.golden import load_golden


def _mutate(frame: bytes, rng: random.Random) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 6)):
        choice = rng.random()
        pos = rng.randrange(len(data))
        if choice < 0.5:
            data[pos] = rng.randrange(256)
        elif choice < 0.7:
            del data[pos : pos + rng.randint(1, 8)]
        elif choice < 0.85:
            data[pos:pos] = rng.randbytes(rng.randint(1, 8))
        else:
            # keep the length prefix consistent so the header parsers, not the prefix check, see the damage
            data[0:4] = (len(data) - 4).to_bytes(4, "big")
    return bytes(data)


@settings(max_examples=600, deadline=None)
@given(st.integers(0, 10**9))
def test_mutated_frames_raise_only_codec_error(seed: int) -> None:
    frames = load_golden()
    rng = random.Random(seed)
    frame = _mutate(frames[rng.randrange(len(frames))].frame, rng)
    try:
        cmd = RemotingCommand.decode(frame)
    except CodecError:
        return
    cmd.fields()
    try:
        cmd.encode()
    except CodecError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9))
def test_stream_decoder_on_mutated_streams(seed: int) -> None:
    frames = load_golden()
    rng = random.Random(seed)
    stream = b"".join(_mutate(frames[rng.randrange(len(frames))].frame, rng) for _ in range(3))
    decoder = FrameDecoder()
    try:
        for i in range(0, len(stream), 37):
            decoder.feed(stream[i : i + 37])
    except CodecError:
        pass
