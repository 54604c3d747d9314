"""Offset ids and unique ids: layouts, generation, decoding, time resolution, refusal of malformed ids."""

from __future__ import annotations

import datetime as dt
import ipaddress
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import (
    UniqueIdGenerator,
    UniqueIdLayout,
    decode_cpp_unique_id,
    decode_offset_msg_id,
    decode_unique_id,
    default_unique_id_generator,
    encode_offset_msg_id,
    new_unique_id,
    offset_msg_id_of,
    unique_id_timestamp_ms,
)

UTC = dt.UTC
_ipv4 = st.integers(0, 2**32 - 1).map(lambda n: str(ipaddress.IPv4Address(n)))
_ipv6 = (
    st.integers(0, 2**128 - 1).map(lambda n: ipaddress.IPv6Address(n)).filter(lambda a: a.ipv4_mapped is None)
)


def _ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    return int(dt.datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp() * 1000)


# --- offset ids -----------------------------------------------------------------------------------


def test_offset_id_layout() -> None:
    msg_id = encode_offset_msg_id("127.0.0.1:10911", 225)
    assert msg_id == "7F000001" + "00002A9F" + "00000000000000E1"
    parsed = decode_offset_msg_id(msg_id)
    assert (parsed.ip, parsed.port, parsed.offset, parsed.address) == (
        b"\x7f\0\0\x01",
        10911,
        225,
        "127.0.0.1:10911",
    )


@given(_ipv4, st.integers(0, 65535), st.integers(0, 2**63 - 1))
def test_ipv4_offset_ids_round_trip(ip: str, port: int, offset: int) -> None:
    msg_id = encode_offset_msg_id(f"{ip}:{port}", offset)
    assert len(msg_id) == 32 and msg_id == msg_id.upper()
    parsed = decode_offset_msg_id(msg_id)
    assert parsed.address == f"{ip}:{port}" and parsed.offset == offset
    assert decode_offset_msg_id(msg_id.lower()) == parsed


@given(_ipv6, st.integers(0, 65535), st.integers(0, 2**63 - 1))
def test_ipv6_offset_ids_round_trip(ip: ipaddress.IPv6Address, port: int, offset: int) -> None:
    msg_id = encode_offset_msg_id(f"[{ip}]:{port}", offset)
    assert len(msg_id) == 56
    parsed = decode_offset_msg_id(msg_id)
    assert parsed.ip == ip.packed and parsed.port == port and parsed.offset == offset
    assert encode_offset_msg_id(parsed.address, offset) == msg_id


@pytest.mark.parametrize(
    "msg_id",
    [
        "",
        "7F000001",
        "7F00000100002A9F00000000000000E",
        "7F00000100002A9F00000000000000EG",
        " " * 32,
        "x" * 56,
    ],
)
def test_malformed_offset_ids_are_codec_errors(msg_id: str) -> None:
    with pytest.raises(CodecError, match="hex digits"):
        decode_offset_msg_id(msg_id)


@pytest.mark.parametrize(
    ("address", "offset"),
    [
        ("nohost", 1),
        ("1.2.3.4", 1),
        ("1.2.3.4:x", 1),
        ("1.2.3.4:70000", 1),
        ("1.2.3.400:1", 1),
        ("1.2.3.4:1", 2**63),
    ],
)
def test_unencodable_offset_ids_are_codec_errors(address: str, offset: int) -> None:
    with pytest.raises(CodecError):
        encode_offset_msg_id(address, offset)


def test_offset_id_needs_a_4_or_16_byte_ip() -> None:
    with pytest.raises(CodecError):
        offset_msg_id_of(b"\x01\x02\x03", 1, 1)


# --- unique ids: Java layout ------------------------------------------------------------------------------


class _Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def test_java_layout_fields() -> None:
    clock = _Clock(_ms(2026, 11, 22, 2, 21, 21))
    gen = UniqueIdGenerator("10.1.2.3", pid=0x12345, process_hash=0x5FFD2B27, clock=clock, tz=UTC)
    first = gen.next_id()
    assert gen.prefix == "0A010203" + "2345" + "5FFD2B27"
    elapsed = clock.now - _ms(2026, 11, 1)
    assert first == gen.prefix + f"{elapsed:08X}" + "0000"
    parts = decode_unique_id(first)
    assert parts.layout is UniqueIdLayout.JAVA
    assert (parts.ip, parts.pid, parts.process_hash, parts.offset_ms, parts.counter) == (
        "10.1.2.3",
        0x2345,
        0x5FFD2B27,
        elapsed,
        0,
    )
    assert parts.timestamp_ms(clock.now + 5, UTC) == clock.now
    assert decode_unique_id(gen.next_id()).counter == 1


def test_ipv6_prefix_gives_56_digits() -> None:
    gen = UniqueIdGenerator("fd00::2", pid=1, process_hash=2, clock=_Clock(_ms(2026, 1, 5)), tz=UTC)
    uniq = gen.next_id()
    assert len(uniq) == 56 and uniq.startswith("FD000000000000000000000000000002")
    assert decode_unique_id(uniq).ip == "fd00::2"


def test_counter_wraps_as_a_java_short() -> None:
    gen = UniqueIdGenerator("1.2.3.4", pid=1, process_hash=2, clock=_Clock(_ms(2026, 1, 5)), tz=UTC)
    counters = [decode_unique_id(gen.next_id()).counter for _ in range(65537)]
    assert counters[:2] == [0, 1] and counters[65535] == 65535 and counters[65536] == 0


def test_month_rollover_restarts_the_offset() -> None:
    clock = _Clock(_ms(2026, 1, 31, 23, 59, 59))
    gen = UniqueIdGenerator("1.2.3.4", pid=1, process_hash=2, clock=clock, tz=UTC)
    before = decode_unique_id(gen.next_id())
    clock.now = _ms(2026, 2, 1, 0, 0, 1)
    after = decode_unique_id(gen.next_id())
    assert before.offset_ms == _ms(2026, 1, 31, 23, 59, 59) - _ms(2026, 1, 1)
    assert after.offset_ms == 1000
    assert after.timestamp_ms(clock.now + 1, UTC) == clock.now


def test_small_clock_step_back_clamps_to_the_month_start() -> None:
    clock = _Clock(_ms(2026, 3, 1, 0, 0, 0) + 10)
    gen = UniqueIdGenerator("1.2.3.4", pid=1, process_hash=2, clock=clock, tz=UTC)
    gen.next_id()
    clock.now -= 500
    assert decode_unique_id(gen.next_id()).offset_ms == 0


def test_time_resolution_picks_the_previous_month_when_needed() -> None:
    made = _ms(2026, 4, 30, 12)
    uniq = UniqueIdGenerator("1.2.3.4", pid=1, process_hash=2, clock=_Clock(made), tz=UTC).next_id()
    assert unique_id_timestamp_ms(uniq, _ms(2026, 5, 2), UTC) == made
    assert unique_id_timestamp_ms(uniq, made + 1, UTC) == made


def test_other_time_zones_count_from_their_own_midnight() -> None:
    zone = dt.timezone(dt.timedelta(hours=8))
    made = _ms(2026, 6, 10, 3)
    uniq = UniqueIdGenerator("1.2.3.4", pid=1, process_hash=2, clock=_Clock(made), tz=zone).next_id()
    parts = decode_unique_id(uniq)
    assert parts.offset_ms == made - int(dt.datetime(2026, 6, 1, tzinfo=zone).timestamp() * 1000)
    assert parts.timestamp_ms(made + 1, zone) == made
    assert parts.timestamp_ms(made + 1, UTC) != made


def test_default_generator_is_shared_but_producers_can_own_one() -> None:
    assert default_unique_id_generator() is default_unique_id_generator()
    a, b = new_unique_id(), new_unique_id()
    assert a != b and a[:20] == b[:20]
    own = UniqueIdGenerator("1.2.3.4", pid=1, process_hash=2)
    assert decode_unique_id(own.next_id()).counter == 0  # its own counter, untouched by the shared one
    assert decode_unique_id(b).counter == (decode_unique_id(a).counter + 1) & 0xFFFF


def test_unknown_address_uses_javas_stand_in() -> None:
    gen = UniqueIdGenerator(None, pid=1, process_hash=2, clock=_Clock(0x1122334455))
    assert gen.prefix.startswith("22334455")


@pytest.mark.parametrize("ip", ["not-an-ip", b"\x01\x02"])
def test_bad_generator_addresses_are_codec_errors(ip: str | bytes) -> None:
    with pytest.raises(CodecError):
        UniqueIdGenerator(ip)


@given(st.text(max_size=60))
def test_decoding_arbitrary_text_raises_only_codec_errors(text: str) -> None:
    for decode in (decode_unique_id, decode_cpp_unique_id, decode_offset_msg_id):
        try:
            decode(text)
        except CodecError:
            pass


# --- unique ids: legacy C++ layout --------------------------------------------------------------------------


def _cpp_id(ip: str, pid: int, rand: int, period: int, seq: int) -> str:
    """Built as the legacy C++ client lays it out: little-endian words, the pid's low half under the IP."""
    raw = bytearray(16)
    raw[2:6] = struct.pack("<I", pid)
    raw[0:4] = struct.pack("<I", int(ipaddress.IPv4Address(ip)))
    raw[6:10] = struct.pack("<I", rand)
    raw[10:14] = struct.pack("<I", period)
    raw[14:16] = struct.pack("<H", seq & 0xFF)
    return raw.hex().upper()


def test_cpp_layout_fields_and_time() -> None:
    # Counted from an hour before midnight of the previous month's last day (see ids._cpp_month_base_ms).
    base = _ms(2026, 10, 31) - 3_600_000
    made = _ms(2026, 11, 22, 3, 41, 45)
    uniq = _cpp_id("127.0.0.1", 0x2A0001, 0xB169, made - base, 3)
    parts = decode_cpp_unique_id(uniq)
    assert parts.layout is UniqueIdLayout.CPP_LEGACY
    assert (parts.ip, parts.pid, parts.process_hash, parts.counter) == ("127.0.0.1", 0x2A, 0xB169, 3)
    assert parts.timestamp_ms(made + 1000, UTC) == made
    assert parts.timestamp_ms(made - 1000, UTC) == made  # nearest month base, either side of the reference


def test_cpp_ids_are_16_bytes() -> None:
    with pytest.raises(CodecError):
        decode_cpp_unique_id("00" * 28)
