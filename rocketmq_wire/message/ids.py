"""The two kinds of message id.

* The **unique id** (``UNIQ_KEY`` property, the ``msgId`` of a Java ``SendResult``) is made by the producer:
  a fixed prefix (IP, process id, a per-process hash) then the milliseconds since the start of the current
  month and a counter, all as upper-case hex. Java writes it big-endian, 16 bytes with an IPv4 address and 28
  with an IPv6 one. The C++ client bundled with PyPI's ``rocketmq`` 0.4.x writes a 16-byte variant with its
  integers little-endian, counts from midnight of the previous month's last day, and wraps its counter at 256;
  it is decoded with :func:`decode_cpp_unique_id`.
* The **offset id** (``offsetMsgId``, the ``msgId`` of a send response) is made by the broker: store host IP,
  port and commit-log offset, 16 or 28 bytes as upper-case hex. It is an address: a client decodes it to ask
  that broker for the message at that offset.

The month-relative timestamp inside a unique id is resolved against a reference time, as Java's
``getNearlyTimeFromID`` does: the latest month start that puts the id before the reference.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import ipaddress
import os
import re
import struct
import threading
import time
from collections.abc import Callable

from rocketmq_wire.errors import CodecError
from rocketmq_wire.message.hosts import format_host, parse_host

_HEX = re.compile(r"[0-9A-Fa-f]*")
_JAVA_TAIL = struct.Struct(">HIIH")  # pid, per-process hash, ms since month start, counter
_CPP_TAIL = struct.Struct("<HIIH")


def _hex_bytes(text: str, what: str, lengths: tuple[int, ...]) -> bytes:
    if len(text) not in lengths or not _HEX.fullmatch(text):
        expected = " or ".join(str(n) for n in lengths)
        raise CodecError(f"{what} must be {expected} hex digits, got {text!r}")
    return bytes.fromhex(text)


# --- offset ids -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetMessageId:
    """A decoded offset id: where the message is stored."""

    ip: bytes
    port: int
    offset: int

    @property
    def address(self) -> str:
        """The store host as ``"ip:port"``."""
        return format_host(self.ip, self.port)


def offset_msg_id_of(ip: bytes, port: int, offset: int) -> str:
    """The offset id of a message stored at ``offset`` by the broker at ``ip`` (4 or 16 bytes):``port``."""
    if len(ip) not in (4, 16):
        raise CodecError(f"store host IP must be 4 or 16 bytes, got {len(ip)}")
    try:
        return (ip + struct.pack(">iq", port, offset)).hex().upper()
    except struct.error:
        raise CodecError(f"port {port} or offset {offset} does not fit an offset message id") from None


def encode_offset_msg_id(address: str, offset: int) -> str:
    """The offset id of a message stored at ``offset`` by the broker at ``address`` (``"ip:port"``)."""
    if 0 <= offset <= _MAX_LONG:
        # A broker writes one per stored message: the address part is the same for all of them.
        return _offset_id_prefix(address) + format(offset, "016X")
    ip, port = parse_host(address)
    return offset_msg_id_of(ip, port, offset)


_MAX_LONG = (1 << 63) - 1


@functools.lru_cache(maxsize=1024)
def _offset_id_prefix(address: str) -> str:
    ip, port = parse_host(address)
    return offset_msg_id_of(ip, port, 0)[:-16]


def decode_offset_msg_id(msg_id: str) -> OffsetMessageId:
    raw = _hex_bytes(msg_id, "an offset message id", (32, 56))
    ip_len = len(raw) - 12
    port, offset = struct.unpack_from(">iq", raw, ip_len)
    return OffsetMessageId(raw[:ip_len], port, offset)


# --- unique ids -----------------------------------------------------------------------------------


class UniqueIdLayout(enum.Enum):
    JAVA = "java"
    CPP_LEGACY = "cpp-legacy"


@dataclasses.dataclass(frozen=True, slots=True)
class UniqueIdParts:
    """The fields of a unique id.

    For :attr:`UniqueIdLayout.CPP_LEGACY` ids ``pid`` holds only the high half of the process id (the C++
    client overwrote the low half with the IP) and ``process_hash`` is a random number.
    """

    layout: UniqueIdLayout
    ip: str
    pid: int
    process_hash: int
    offset_ms: int
    counter: int

    def timestamp_ms(self, reference_ms: int | None = None, tz: dt.tzinfo | None = None) -> int:
        """When the id was made, resolved against ``reference_ms`` (now by default) in zone ``tz`` (local).

        Producers count from the start of a month in their own local time zone, so ``tz`` should be the
        producer's, and an id older than about a month cannot be placed. Java ids resolve as Java's
        ``getNearlyTimeFromID`` does (the latest month start that keeps the id before the reference); legacy
        C++ ids to the month start nearest the reference, since their base is uncertain by an hour.
        """
        reference = _now_ms() if reference_ms is None else reference_ms
        if self.layout is UniqueIdLayout.JAVA:
            base = _month_start_ms(reference, tz, 0)
            if base + self.offset_ms >= reference:
                base = _month_start_ms(reference, tz, 1)
            return base + self.offset_ms
        candidates = (_cpp_month_base_ms(reference, tz, back) + self.offset_ms for back in (-1, 0, 1))
        return min(candidates, key=lambda when: abs(when - reference))


def decode_unique_id(uniq_id: str) -> UniqueIdParts:
    """The fields of a unique id a Java client made (32 hex digits with IPv4, 56 with IPv6)."""
    raw = _hex_bytes(uniq_id, "a Java unique message id", (32, 56))
    ip_len = len(raw) - 12
    pid, process_hash, offset_ms, counter = _JAVA_TAIL.unpack_from(raw, ip_len)
    ip = str(ipaddress.ip_address(raw[:ip_len]))
    return UniqueIdParts(UniqueIdLayout.JAVA, ip, pid, process_hash, offset_ms, counter)


def decode_cpp_unique_id(uniq_id: str) -> UniqueIdParts:
    """The fields of a unique id made by the legacy C++ client (``rocketmq-client-cpp`` 1.x/2.0)."""
    raw = _hex_bytes(uniq_id, "a C++ unique message id", (32,))
    pid_high, process_hash, offset_ms, counter = _CPP_TAIL.unpack_from(raw, 4)
    ip = str(ipaddress.IPv4Address(raw[3::-1]))
    return UniqueIdParts(UniqueIdLayout.CPP_LEGACY, ip, pid_high, process_hash, offset_ms, counter)


def unique_id_timestamp_ms(uniq_id: str, reference_ms: int | None = None, tz: dt.tzinfo | None = None) -> int:
    """When a Java unique id was made (see :meth:`UniqueIdParts.timestamp_ms`)."""
    return decode_unique_id(uniq_id).timestamp_ms(reference_ms, tz)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _local_datetime(ms: int, tz: dt.tzinfo | None) -> dt.datetime:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, tz)
    except (OverflowError, OSError, ValueError):
        raise CodecError(f"timestamp {ms} ms is outside the range this platform can convert") from None


def _month_start_ms(ms: int, tz: dt.tzinfo | None, months_back: int) -> int:
    """Midnight starting the month ``months_back`` months before the one holding ``ms`` (-1: the next)."""
    when = _local_datetime(ms, tz)
    month_index = when.year * 12 + when.month - 1 - months_back
    start = dt.datetime(month_index // 12, month_index % 12 + 1, 1, tzinfo=tz)
    return int(start.timestamp()) * 1000


def _cpp_month_base_ms(ms: int, tz: dt.tzinfo | None, months_back: int) -> int:
    # The legacy C++ client asks mktime() for day 0 of the month (which normalises to the previous day) with
    # an uninitialised DST flag; in the captured runs mktime took it as set, starting the count an hour early.
    return _month_start_ms(ms, tz, months_back) - 86_400_000 - 3_600_000


def _fake_ip(now_ms: int) -> bytes:
    """Java's stand-in when no address is known: the low four bytes of the current time."""
    return (now_ms & 0xFFFFFFFF).to_bytes(4, "big")


class UniqueIdGenerator:
    """Makes unique ids as a Java producer does; each producer owns one.

    ``ip`` defaults to Java's stand-in for an unknown address (this package does no I/O, so it does not look
    the host's address up: pass it in). ``process_hash`` stands in for Java's class-loader hash and defaults
    to a random 31-bit number; ``clock`` returns epoch milliseconds and ``tz`` is the zone months start in.
    """

    def __init__(
        self,
        ip: str | bytes | None = None,
        *,
        pid: int | None = None,
        process_hash: int | None = None,
        clock: Callable[[], int] | None = None,
        tz: dt.tzinfo | None = None,
    ) -> None:
        self._clock = clock or _now_ms
        self._tz = tz
        if ip is None:
            ip_bytes = _fake_ip(self._clock())
        elif isinstance(ip, bytes):
            ip_bytes = ip
        else:
            try:
                ip_bytes = ipaddress.ip_address(ip).packed
            except ValueError:
                raise CodecError(f"{ip!r} is not an IP address") from None
        if len(ip_bytes) not in (4, 16):
            raise CodecError(f"a unique id's IP must be 4 or 16 bytes, got {len(ip_bytes)}")
        pid = os.getpid() if pid is None else pid
        if process_hash is None:
            process_hash = int.from_bytes(os.urandom(4), "big") & 0x7FFFFFFF
        self._prefix = (ip_bytes + struct.pack(">HI", pid & 0xFFFF, process_hash & 0xFFFFFFFF)).hex().upper()
        self._lock = threading.Lock()
        self._counter = 0
        self._month_start = 0
        self._next_month_start = 0

    @property
    def prefix(self) -> str:
        """The fixed part every id of this generator starts with."""
        return self._prefix

    def next_id(self) -> str:
        now = self._clock()
        with self._lock:
            if now >= self._next_month_start or now < self._month_start - 1_000_000:
                self._month_start = _month_start_ms(now, self._tz, 0)
                self._next_month_start = _month_start_ms(now, self._tz, -1)
            counter = self._counter
            self._counter = (counter + 1) & 0xFFFF
            elapsed = now - self._month_start
        if -1_000_000 < elapsed < 0:  # the clock stepped back a little: Java clamps to the month start
            elapsed = 0
        return f"{self._prefix}{elapsed & 0xFFFFFFFF:08X}{counter:04X}"


@functools.cache
def default_unique_id_generator() -> UniqueIdGenerator:
    """A process-wide generator for callers that do not keep their own."""
    return UniqueIdGenerator()


def new_unique_id() -> str:
    return default_unique_id_generator().next_id()
