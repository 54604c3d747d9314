"""RocketMQ's "host:port" address strings.

Name servers, broker addresses in route data and the ``clientAddr`` fields all use this form, so the
transport keys its connections by it and reports peers in it (Java's ``RemotingHelper`` style, no slash).
"""

from __future__ import annotations

from typing import Any


def parse_address(addr: str) -> tuple[str, int]:
    """Split at the last colon (so bare IPv6 hosts work, as in Java); "[v6]:port" brackets are removed."""
    host, sep, port_text = addr.strip().rpartition(":")
    if not sep or not host:
        raise ValueError(f"address {addr!r} is not of the form host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"address {addr!r} has a non-numeric port") from None
    if not 0 <= port <= 0xFFFF:
        raise ValueError(f"address {addr!r} has port {port} outside 0..65535")
    return host, port


def parse_namesrv_list(namesrv: str | list[str] | tuple[str, ...]) -> list[str]:
    """``"host:port;host:port"`` (Java's ``namesrvAddr`` syntax) or a sequence of addresses, as a list."""
    items = namesrv.split(";") if isinstance(namesrv, str) else list(namesrv)
    addrs = [item.strip() for item in items if item.strip()]
    if not addrs:
        raise ValueError("no NameServer address given")
    return addrs


def format_address(sockaddr: Any) -> str:
    """``(host, port, ...)`` as returned by ``getpeername`` to "host:port"; anything else via ``str``."""
    if isinstance(sockaddr, tuple) and len(sockaddr) >= 2:
        return f"{sockaddr[0]}:{sockaddr[1]}"
    return "" if sockaddr is None else str(sockaddr)
