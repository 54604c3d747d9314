"""Who a client is to brokers: its client id and the address baked into message ids.

Brokers key client connections by client id (``ip@instanceName``), so two producers (or consumers) in one
process must not share one by accident; Java 4.9.x makes the instance name ``<pid>#<nanotime>`` for exactly
that reason, and so do we.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import time

logger = logging.getLogger("client.identity")

# A documentation address: connecting a UDP socket to it sends nothing but makes the kernel pick the
# interface (and so the source address) it would route through.
_PROBE_ADDRESS = ("192.0.2.1", 9)


def local_ip() -> str:
    """The address of the interface with a route out, else the host name's, else loopback."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(_PROBE_ADDRESS)
            address = str(probe.getsockname()[0])
            if address and address != "0.0.0.0":
                return address
    except OSError:
        pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        logger.debug("no usable local address found; using 127.0.0.1 in ids")
        return "127.0.0.1"


def default_instance_name() -> str:
    """``<pid>#<nanoseconds>``, as a 4.9.x Java client names a client left at the default instance name."""
    return f"{os.getpid()}#{time.monotonic_ns()}"


def client_id(ip: str, instance_name: str, unit_name: str | None = None) -> str:
    """Java's ``buildMQClientId``: ``ip@instanceName`` (plus ``@unitName`` when one is set)."""
    text = f"{ip}@{instance_name}"
    return f"{text}@{unit_name}" if unit_name else text


def check_ip(ip: str) -> str:
    """Refuse a ``client_ip`` that is not an IP address (it must fit the binary unique message id)."""
    try:
        return str(ipaddress.ip_address(ip))
    except ValueError:
        raise ValueError(f"client_ip {ip!r} is not an IP address") from None


def resolve_ip(configured: str | None) -> str:
    """The address a client announces: the configured ``client_ip`` (checked), else the local one."""
    return check_ip(configured) if configured else local_ip()
