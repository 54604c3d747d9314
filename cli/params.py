"""What option and argument values must look like, checked while the command line is read.

Every command shares these checks (as typer callbacks and parsers), so a wrong value is one
``error: Invalid value for '--port': …`` line and exit code 2 before anything connects, binds or writes --
rather than a failure (or a traceback) deep in a server or client later, with the option no longer named.

The option types several command modules declare alike (``--broker``, ``--cluster``, a consumer group) live
here too, so that a command module never borrows them from another command module.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import math
import os
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from rocketmq_wire.topics import validate_group, validate_topic
from rocketmq_wire.transport.address import parse_address, parse_namesrv_list

#: Counts and sizes travel as Java ``int`` fields; a larger number could not be sent.
JAVA_INT_MAX = 2**31 - 1
#: The producer group of ``rmq send`` and ``rmq message recall`` unless ``--group`` names another.
CLI_PRODUCER_GROUP = "rmq-cli-producer"
#: Broker ids are Java ``long`` fields.
JAVA_LONG_MAX = 2**63 - 1
#: The longest timeout an option accepts (an hour): anything longer is a typo, not a wish.
MAX_TIMEOUT_MS = 3_600_000
#: Times are checked against the years a broker can store (epoch milliseconds of 9999-12-31T23:59:59.999Z).
MAX_EPOCH_MS = 253_402_300_799_999


def finite(value: float | None) -> float | None:
    """A number option's value: typer's range checks compare, and every comparison with NaN is false, so
    ``nan`` would pass them (typer 0.29's pydantic parsing refused it; the versions this project allows
    do not)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def port(value: int | None) -> int | None:
    """A port to listen on: 0 (any free one) to 65535."""
    if value is not None and not 0 <= value <= 0xFFFF:
        raise typer.BadParameter(f"{value} is not a port (0..65535; 0 picks a free one)")
    return value


def _address(text: str) -> str:
    """One ``host:port`` to connect to (port 1..65535)."""
    try:
        _, number = parse_address(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if number == 0:
        raise typer.BadParameter(f"address {text!r} has port 0, which nothing can be reached on")
    return text.strip()


def namesrv_addresses(value: str | None) -> str | None:
    """``host:port;host:port`` (Apache's namesrvAddr syntax); blank is left for the command to report as
    missing, with the ways to name one."""
    if value is None or not value.strip():
        return None
    try:
        return ";".join(_address(item) for item in parse_namesrv_list(value))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def broker_address(value: str | None) -> str | None:
    """One broker's ``host:port``."""
    return None if value is None else _address(value)


def topic_name(value: str | None) -> str | None:
    """A topic name as Apache accepts it (letters, digits, ``%|-_``, at most 127 characters)."""
    if value is not None and (problem := validate_topic(value)) is not None:
        raise typer.BadParameter(f"{value!r}: {problem[1]}")
    return value


def group_name(value: str | None) -> str | None:
    """A producer or consumer group name as Apache accepts it."""
    if value is not None and (problem := validate_group(value)) is not None:
        raise typer.BadParameter(f"{value!r}: {problem}")
    return value


def not_blank(value: str | None) -> str | None:
    """Names, keys and ids: an empty one can only be a mistake (an unset shell variable, say)."""
    if value is not None and not value.strip():
        raise typer.BadParameter("must not be empty")
    return value


def log_level(value: str) -> str:
    """DEBUG, INFO, WARNING, ERROR (any case), as the name ``logging`` knows."""
    name = value.strip().upper()
    if not isinstance(logging.getLevelName(name), int):
        raise typer.BadParameter(f"unknown log level {value!r}: use DEBUG, INFO, WARNING or ERROR")
    return name


def listen_host(value: str | None) -> str | None:
    """An address to bind, resolved now so that a typo is reported as such, not as a failed start."""
    if value is None:
        return None
    if not value.strip():
        raise typer.BadParameter("must not be empty (0.0.0.0 listens on every interface)")
    try:
        socket.getaddrinfo(value, None, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) else str(exc)
        raise typer.BadParameter(f"{value!r}: {reason}") from None
    return value


def ip_address(value: str | None) -> str | None:
    """An IP address given out to clients (a broker's ``brokerIP1``)."""
    if value is not None:
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise typer.BadParameter(f"{value!r} is not an IP address") from None
    return value


def epoch_ms(value: int, option: str) -> int:
    """A point in time in epoch milliseconds that brokers can compare with their store times."""
    if not 0 <= value <= MAX_EPOCH_MS:
        raise typer.BadParameter(f"{value} ms is not between 1970 and 9999", param_hint=option)
    return value


def local_epoch_ms(moment: dt.datetime, text: str, option: str) -> int:
    """``moment`` (local time unless it has an offset) in epoch milliseconds."""
    try:
        return epoch_ms(int(moment.astimezone().timestamp() * 1000), option)
    except (ValueError, OverflowError):
        raise typer.BadParameter(f"{text!r} is not between 1970 and 9999", param_hint=option) from None


def moment_ms(text: str, option: str) -> int:
    """Epoch milliseconds, or an ISO date-time (local time unless it has an offset), as epoch milliseconds."""
    if text.isdigit():
        return epoch_ms(int(text), option)
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"cannot read {text!r} as a time: use epoch milliseconds or 2024-05-01T12:00:00",
            param_hint=option,
        ) from None
    return local_epoch_ms(moment, text, option)


#: Duration units and how many of the smallest one written (ms, or s) each is.
_DURATION_UNITS = {"ms": ("ms", 1), "s": ("s", 1), "m": ("s", 60), "h": ("s", 3600), "d": ("s", 86_400)}
_DURATION = re.compile(r"(\d+)(ms|s|m|h|d)?")


def delay(text: str, option: str) -> tuple[int, bool]:
    """A delay such as ``1500ms``, ``30s``, ``5m``, ``2h`` or ``1d`` (a bare number is seconds): its length
    and whether it is in milliseconds (``ms``) rather than whole seconds (every other unit), the two forms
    Java's ``setDelayTimeMs`` and ``setDelayTimeSec`` write."""
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise typer.BadParameter(
            f"cannot read {text!r} as a delay: use 1500ms, 30s, 5m, 2h or 1d", param_hint=option
        )
    unit, factor = _DURATION_UNITS[found.group(2) or "s"]
    value = int(found.group(1)) * factor
    if value > JAVA_LONG_MAX:
        raise typer.BadParameter(f"{text!r} is longer than a Java long can hold", param_hint=option)
    return value, unit == "ms"


def store_dir(text: str) -> Path:
    """A directory to keep data in, created now if missing: a file, a blank value or a place where nothing
    can be created is refused before the server starts (and logs) anything."""
    if not text.strip():
        raise typer.BadParameter("must not be empty")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise typer.BadParameter(f"{text!r} is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise typer.BadParameter(f"cannot create {text!r}: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise typer.BadParameter(f"{text!r} is not writable")
    return path


def data_file(text: str) -> Path:
    """A file a server reads at start and rewrites later: it may be missing, but it must not be a directory
    and its folder must be creatable, or the first write would fail long after the start."""
    if not text.strip():
        raise typer.BadParameter("must not be empty")
    path = Path(text)
    if path.is_dir():
        raise typer.BadParameter(f"{text!r} is a directory, not a file")
    if path.exists() and not os.access(path, os.R_OK):
        raise typer.BadParameter(f"{text!r} is not readable")
    store_dir(str(path.parent))
    return path


def split_list(text: str | None) -> list[str] | None:
    """mqadmin's comma-separated option values, each trimmed, empty ones dropped."""
    if text is None:
        return None
    return [item.strip() for item in text.split(",") if item.strip()]


def one_of(names: str, what: str) -> Callable[[str | None], str | None]:
    """A typer callback accepting one of ``rocketmq_wire.bodies.auth.<names>`` whatever its case, giving
    back Apache's spelling. The names are looked up only when the option is given: ``rmq`` does not load
    the wire bodies to read a command line."""

    def check(value: str | None) -> str | None:
        if value is None:
            return None
        from rocketmq_wire.bodies import auth

        known: tuple[str, ...] = getattr(auth, names)
        found = auth.canonical_name(value, known)
        if found is None:
            raise typer.BadParameter(f"{value.strip()!r} is not {what} (one of {', '.join(known)})")
        return found

    return check


# -- option types shared by several command modules ----------------------------------------------------------

#: ``-b``: the one broker a command acts on.
Broker = Annotated[
    str | None,
    typer.Option("--broker", "-b", callback=broker_address, help="One broker, host:port"),
]
#: ``-c`` of the commands that change every broker of a cluster, slaves included.
Cluster = Annotated[str | None, typer.Option("--cluster", "-c", help="Every broker of this cluster")]
#: ``-c`` of the commands that only show brokers: a filter on the NameServers' broker list.
ClusterName = Annotated[str | None, typer.Option("--cluster", "-c", help="Only the brokers of this cluster")]
#: ``-g`` of the commands that send as a producer (``rmq send``, ``rmq message recall``).
ProducerGroup = Annotated[str, typer.Option("--group", "-g", callback=group_name, help="Producer group")]
#: The consumer group a group command is about.
Group = Annotated[str, typer.Argument(callback=group_name, help="Consumer group")]
