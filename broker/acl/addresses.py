"""Apache's white-address patterns: which client addresses an entry of ``globalWhiteRemoteAddresses`` or an
account's ``whiteRemoteAddress`` lets in.

The forms, as Apache's ``RemoteAddressStrategyFactory`` reads them:

* blank -- nobody (an account without a white address must sign);
* ``*``, ``*.*.*.*``, ``*:*:*:*:*:*:*:*`` -- everybody;
* ``192.168.1.{1,2,3}`` / ``2001:db8::{1,2}`` -- a prefix and a brace list of last parts;
* ``192.168.1.1,192.168.1.2`` -- a comma list of whole addresses;
* ``192.168.0.*``, ``192.168.1.1-5``, ``10.*.*.*`` -- a range (``*`` or ``a-b``) in one octet; only the
  *first* octet that is a range is checked, the octets after it are not (Apache reads ``10.1.*.7`` as
  ``10.1.*``);
* ``1:2:3:4:5:6:7:*``, ``1:2:3:4:5:6:7:1-ff``, ``2::ac5:78:1-200:*`` -- an IPv6 range (hex bounds) in the
  last group, or in the one before a final ``*``; the prefix is expanded as Apache expands it;
* anything else -- one IPv4 or IPv6 address.

A malformed pattern raises :class:`AclError` when the file is read, so a typo is reported at load time
instead of silently matching nothing.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Protocol

from broker.acl.errors import AclError

_OCTET_MAX = 255
_GROUP_MAX = 0xFFFF
_EVERYBODY = frozenset({"*", "*.*.*.*", "*:*:*:*:*:*:*:*"})


class AddressPattern(Protocol):
    """A compiled white-address entry."""

    def matches(self, host: str) -> bool:
        """Whether a client at ``host`` (an IP address without port) is let in."""
        ...


def host_of(remote_address: str) -> str:
    """The host part of a connection's ``ip:port`` (cut at the last colon, as Apache cuts it)."""
    host, sep, _port = remote_address.rpartition(":")
    if not sep:
        return remote_address
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _full_ipv6(text: str) -> str:
    """Eight 4-digit upper-case groups: the one spelling Apache compares IPv6 addresses in."""
    return ipaddress.IPv6Address(text).exploded.upper()


def _normal(host: str) -> str:
    return _full_ipv6(host) if _is_ipv6(host) else host


def _expand_prefix(text: str, groups: int) -> str:
    """Apache's ``expandIP`` for the fixed part of an IPv6 range: ``::`` widened so that the text has
    ``groups`` groups (when it has a ``::`` to widen), each group zero-padded to four upper-case digits."""
    text = text.upper()
    missing = groups - text.count(":")
    if missing > 0:
        text = text.replace("::", ":" * (missing + 1))
    return ":".join(part.rjust(4, "0") for part in text.split(":"))


def _bad(pattern: str) -> AclError:
    return AclError(f"Netaddress examine scope Exception netaddress is {pattern}")


class _Nobody:
    def matches(self, host: str) -> bool:
        return False


class _Everybody:
    def matches(self, host: str) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class _OneOf:
    """A set of whole addresses (one address, a comma list or a brace list)."""

    addresses: frozenset[str]

    @classmethod
    def of(cls, texts: list[str]) -> _OneOf:
        addresses = set()
        for text in texts:
            text = text.strip()
            if _is_ipv4(text):
                addresses.add(text)
            elif _is_ipv6(text):
                addresses.add(_full_ipv6(text))
            else:
                raise AclError(f"Netaddress examine Exception netaddress is {text}")
        return cls(frozenset(addresses))

    def matches(self, host: str) -> bool:
        return _normal(host) in self.addresses


@dataclass(frozen=True, slots=True)
class _Ipv4Range:
    """``head`` (the fixed octets, dot included) then one octet between ``low`` and ``high``."""

    head: str
    index: int
    low: int
    high: int

    def matches(self, host: str) -> bool:
        if not _is_ipv4(host) or not host.startswith(self.head):
            return False
        return self.low <= int(host.split(".")[self.index]) <= self.high


@dataclass(frozen=True, slots=True)
class _Ipv6Range:
    """``head`` (fixed groups, expanded) then group ``index`` between ``low`` and ``high``."""

    head: str
    index: int
    low: int
    high: int

    def matches(self, host: str) -> bool:
        if not _is_ipv6(host):
            return False
        full = _full_ipv6(host)
        if not full.startswith(self.head) or self.index >= 8:
            return False
        return self.low <= int(full.split(":")[self.index], 16) <= self.high


def _bounds(text: str, pattern: str, base: int, top: int) -> tuple[int, int] | None:
    """``*`` -> the whole span; ``a-b`` -> (a, b); anything else -> None (not a range part)."""
    text = text.strip()
    if text == "*":
        return 0, top
    if "-" not in text:
        return None
    if text.startswith("-"):
        raise _bad(pattern)
    pieces = [piece for piece in text.split("-") if piece]
    try:
        low, high = int(pieces[0], base), int(pieces[1], base)
    except (IndexError, ValueError):
        raise _bad(pattern) from None
    if not 0 <= low <= high <= top:
        raise _bad(pattern)
    return low, high


def _ipv4_range(pattern: str) -> _Ipv4Range:
    parts = [part for part in pattern.split(".") if part]
    if len(parts) != 4:
        raise _bad(pattern)
    for index in (1, 2, 3):
        span = _bounds(parts[index], pattern, 10, _OCTET_MAX)
        if span is None or span[1] == 0:
            continue
        for octet in parts[:index]:
            if not octet.strip().isdigit() or int(octet) > _OCTET_MAX:
                raise _bad(pattern)
        head = "".join(f"{octet.strip()}." for octet in parts[:index])
        return _Ipv4Range(head, index, span[0], span[1])
    raise _bad(pattern)


def _ipv6_range(pattern: str) -> _Ipv6Range:
    star, minus = pattern.find("*"), pattern.find("-")
    if star > -1 and star != len(pattern) - 1:
        raise _bad(pattern)
    last_colon = pattern.rfind(":")
    if minus > -1:
        # the range sits in the last group, or in the one before a final ``*``
        limit = pattern.rfind(":", 0, last_colon) if star > -1 else last_colon
        if minus <= limit:
            raise _bad(pattern)
    parts = [part for part in pattern.split(":") if part]
    span = None
    for part in parts[1:]:
        span = _bounds(part, pattern, 16, _GROUP_MAX)
        if span is not None and span[1] > 0:
            break
    if span is None or span[1] == 0:
        raise _bad(pattern)
    if star > -1 and minus > -1:
        prefix, groups = pattern[: pattern.rfind(":", 0, last_colon)], 6
    else:
        prefix, groups = pattern[:last_colon], 7
    head = _expand_prefix(prefix, groups)
    for group in head.split(":"):
        try:
            if not 0 <= int(group, 16) <= _GROUP_MAX:
                raise _bad(pattern)
        except ValueError:
            raise _bad(pattern) from None
    return _Ipv6Range(head, len(head.split(":")), span[0], span[1])


def _brace_list(pattern: str) -> _OneOf:
    brace = pattern.find("{")
    separator = ":" if ":" in pattern else "."
    last = [part for part in pattern.split(separator) if part][-1]
    if brace < 0 or not last.startswith("{"):
        raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
    if separator == "." and len([part for part in pattern.split(".") if part]) < 4:
        raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
    head = pattern[:brace]
    tails = [tail for tail in pattern[brace + 1 : -1].split(",") if tail]
    return _OneOf.of([head + tail for tail in tails])


def compile_pattern(text: str | None) -> AddressPattern:
    """The matcher for one white-address entry (see the module text for the forms)."""
    if text is None or not text.strip():
        return _Nobody()
    pattern = text.strip()
    if pattern in _EVERYBODY:
        return _Everybody()
    if pattern.endswith("}"):
        return _brace_list(pattern)
    if "," in pattern:
        return _OneOf.of([part for part in pattern.split(",") if part])
    if "*" in pattern or "-" in pattern:
        return _ipv6_range(pattern) if ":" in pattern else _ipv4_range(pattern)
    return _OneOf.of([pattern])
