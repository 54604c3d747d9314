"""The HA link's framing without I/O: the slave's 8-byte reports, the master's 12-byte transfer headers,
and bytes arriving in arbitrary pieces."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.ha.protocol import (
    HAProtocolError,
    ReportReader,
    Transfer,
    TransferReader,
    encode_header,
    encode_report,
    encode_transfer,
)


def test_report_is_an_8_byte_big_endian_long() -> None:
    assert encode_report(0) == bytes(8)
    assert encode_report(0x0102030405060708) == bytes([1, 2, 3, 4, 5, 6, 7, 8])
    assert encode_report(2**63 - 1) == b"\x7f" + b"\xff" * 7
    with pytest.raises(ValueError):
        encode_report(-1)


def test_header_is_offset_then_size_big_endian() -> None:
    assert encode_header(1 << 32, 0x20) == b"\x00\x00\x00\x01\x00\x00\x00\x00" + b"\x00\x00\x00\x20"
    assert encode_transfer(7) == struct.pack(">qi", 7, 0)  # a heartbeat is a header alone
    assert encode_transfer(7, b"abc") == struct.pack(">qi", 7, 3) + b"abc"
    with pytest.raises(ValueError):
        encode_header(-1, 0)
    with pytest.raises(ValueError):
        encode_header(0, -1)


def test_report_reader_keeps_a_partial_report_and_takes_the_newest_complete_one() -> None:
    reader = ReportReader()
    stream = encode_report(100) + encode_report(200) + encode_report(300)
    assert reader.feed(stream[:5]) is None
    assert reader.feed(stream[5:8]) == 100
    # The rest of 200 and a part of 300: the newest complete report is 200.
    assert reader.feed(stream[8:20]) == 200
    assert reader.feed(stream[20:23]) is None
    assert reader.feed(stream[23:]) == 300
    # Several whole reports at once: only the newest counts, as Apache's master reads them.
    assert reader.feed(encode_report(400) + encode_report(500)) == 500


def test_report_reader_refuses_a_negative_offset() -> None:
    with pytest.raises(HAProtocolError):
        ReportReader().feed(struct.pack(">q", -5))


def _stream(transfers: list[Transfer]) -> bytes:
    return b"".join(encode_transfer(t.offset, t.body) for t in transfers)


_TRANSFERS = [
    Transfer(0, b"first"),
    Transfer(5, b""),
    Transfer(5, bytes(range(256)) * 3),
    Transfer(773, b"x"),
    Transfer(774, b""),
]


@given(st.lists(st.integers(1, 40), min_size=1, max_size=30))
def test_transfer_reader_gives_the_same_transfers_however_the_bytes_are_cut(cuts: list[int]) -> None:
    stream = _stream(_TRANSFERS)
    reader = TransferReader()
    out: list[Transfer] = []
    position = 0
    while position < len(stream):
        for size in cuts:
            out += reader.feed(stream[position : position + size])
            position += size
    assert out == _TRANSFERS
    assert reader.buffered == 0
    assert [t.is_heartbeat for t in out] == [False, True, False, False, True]
    assert out[2].end == 5 + 768


def test_pending_header_is_known_before_its_body_arrives() -> None:
    reader = TransferReader()
    data = encode_transfer(4096, b"0123456789")
    assert reader.feed(data[:11]) == [] and reader.pending_header() is None
    assert reader.feed(data[11:15]) == []
    assert reader.pending_header() == (4096, 10)
    assert reader.feed(data[15:]) == [Transfer(4096, b"0123456789")]
    assert reader.pending_header() is None


def test_transfer_reader_refuses_what_no_master_sends() -> None:
    with pytest.raises(HAProtocolError):
        TransferReader().feed(struct.pack(">qi", -1, 0))
    with pytest.raises(HAProtocolError):
        TransferReader().feed(struct.pack(">qi", 0, -1))
    with pytest.raises(HAProtocolError):
        TransferReader(max_body_size=1024).feed(struct.pack(">qi", 0, 1025))
    assert TransferReader(max_body_size=1024).feed(struct.pack(">qi", 0, 1024)) == []
