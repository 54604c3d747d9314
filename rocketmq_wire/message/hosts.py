"""Socket addresses as messages carry them: IP bytes (4 or 16) and a 4-byte port, shown as ``"ip:port"``.

RocketMQ writes addresses without brackets even for IPv6 (``fd00::2:10911``) and splits them at the last
colon; we write them the same way and read either form. Both directions are cached because a pull body repeats
the same two or three addresses in every message.
"""

from __future__ import annotations

import functools
import ipaddress

from rocketmq_wire.errors import CodecError


@functools.lru_cache(maxsize=4096)
def format_host(ip: bytes, port: int) -> str:
    """``"ip:port"`` from an address field read off the wire."""
    if len(ip) == 4:
        return f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}:{port}"
    if len(ip) == 16:
        return f"{ipaddress.IPv6Address(ip).compressed}:{port}"
    raise CodecError(f"an IP address is 4 or 16 bytes, not {len(ip)}")


@functools.lru_cache(maxsize=4096)
def parse_host(address: str) -> tuple[bytes, int]:
    """The IP bytes and port of ``"ip:port"`` (or ``"[ipv6]:port"``).

    An IPv4-mapped IPv6 address becomes its 4-byte IPv4 form, as Java's ``InetAddress`` turns it into an
    ``Inet4Address``.
    """
    text = address.strip()
    if text.startswith("["):
        host, closing, rest = text[1:].partition("]")
        if not closing or not rest.startswith(":"):
            raise CodecError(f"malformed bracketed address {address!r}: expected '[ip]:port'")
        port_text = rest[1:]
    else:
        host, colon, port_text = text.rpartition(":")
        if not colon:
            raise CodecError(f"address {address!r} has no ':port'")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise CodecError(f"address {address!r} does not start with an IP address") from None
    if not port_text.isdigit():
        raise CodecError(f"address {address!r} has a malformed port {port_text!r}")
    port = int(port_text)
    if port > 0xFFFF:
        raise CodecError(f"address {address!r} has port {port}, beyond 65535")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.packed, port
    return ip.packed, port
