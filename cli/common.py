"""What the cluster commands share: where the NameServers are, credentials, running an admin call, and
printing (rich tables for people, ``--json`` for scripts).

The NameServer comes from ``--namesrv``/``-n``, else ``NAMESRV_ADDR`` (as for Apache's tools); there is no
silent default, because talking to a wrong cluster is worse than being told to name one. Request headers are
JSON unless ``ROCKETMQ_SERIALIZE_TYPE=ROCKETMQ``, the variable Apache's mqadmin and clients read too.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from cli import params
from cli.errors import CliError, debugging
from cli.tls_options import client_ssl_from_env
from rocketmq_wire.codes import SerializeType

if TYPE_CHECKING:
    import ssl as ssl_module

    from rich.progress import Progress

    from admin import Admin

T = TypeVar("T")

NAMESRV_ENV = "NAMESRV_ADDR"
SERIALIZE_ENV = "ROCKETMQ_SERIALIZE_TYPE"

Namesrv = Annotated[
    str | None,
    typer.Option(
        "--namesrv",
        "-n",
        envvar=NAMESRV_ENV,
        show_envvar=True,
        callback=params.namesrv_addresses,
        help="NameServer address(es), host:port;host:port",
    ),
]
AccessKey = Annotated[
    str | None, typer.Option("--access-key", envvar="RMQ_ACCESS_KEY", help="ACL AccessKey (signs requests)")
]
SecretKey = Annotated[str | None, typer.Option("--secret-key", envvar="RMQ_SECRET_KEY", help="ACL SecretKey")]
TimeoutMs = Annotated[
    float,
    typer.Option(
        "--timeout-ms",
        min=1,
        max=params.MAX_TIMEOUT_MS,
        callback=params.finite,
        help="Timeout of each request, in ms",
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of tables")]


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """Which cluster to talk to and how."""

    namesrv: str
    access_key: str | None = None
    secret_key: str | None = None
    timeout_ms: float = 3000
    serialize_type: SerializeType = SerializeType.JSON
    #: TLS for every connection (``rmq --tls``), else plain.
    ssl: ssl_module.SSLContext | None = None

    def admin(self) -> Admin:
        from admin import Admin

        return Admin(
            self.namesrv,
            access_key=self.access_key,
            secret_key=self.secret_key,
            timeout_ms=self.timeout_ms,
            ssl=self.ssl,
            serialize_type=self.serialize_type,
        )


def serialize_type_from_env() -> SerializeType:
    """``ROCKETMQ_SERIALIZE_TYPE`` (JSON or ROCKETMQ, any case); unset or empty means JSON."""
    value = os.environ.get(SERIALIZE_ENV, "").strip().upper()
    if not value:
        return SerializeType.JSON
    try:
        return SerializeType[value]
    except KeyError:
        raise CliError(f"{SERIALIZE_ENV}={value!r}: choose JSON or ROCKETMQ") from None


def target(
    namesrv: str | None,
    access_key: str | None = None,
    secret_key: str | None = None,
    timeout_ms: float = 3000,
) -> Target:
    """The target from the common options; one readable error when something is missing."""
    if not namesrv or not namesrv.strip():
        raise CliError(
            f"no NameServer address: pass --namesrv/-n host:port or set {NAMESRV_ENV} "
            "(`rmq quickstart --serve` starts a local one)"
        )
    if (access_key is None) != (secret_key is None):
        raise CliError("--access-key and --secret-key go together")
    return Target(
        namesrv.strip(), access_key, secret_key, timeout_ms, serialize_type_from_env(), client_ssl_from_env()
    )


def quiet_logging() -> None:
    """Library warnings (a NameServer failing over, a retry) would break the one-line-error rule; a
    command reports what matters itself."""
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")


class _Held(logging.Handler):
    """Keeps records instead of writing them (not even at exit, when ``logging`` flushes every handler)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class StartupLogging:
    """A server command's log on standard error, held back while the server starts.

    A server that cannot start (port taken, store locked) then ends with its one ``error:`` line instead of
    after its own "listening on ..." lines; once it serves, :meth:`started` writes the held lines out in
    order and later ones go straight through. ``RMQ_DEBUG=1`` holds nothing back.
    """

    FORMAT = "%(asctime)s %(levelname)-5s %(name)s: %(message)s"

    def __init__(self, level: str) -> None:
        self._out = logging.StreamHandler()
        self._out.setFormatter(logging.Formatter(self.FORMAT))
        self._held = _Held()
        root = logging.getLogger()
        root.setLevel(level)
        root.addHandler(self._out if debugging() else self._held)

    def started(self) -> None:
        root = logging.getLogger()
        if self._held in root.handlers:
            root.removeHandler(self._held)
            root.addHandler(self._out)
            for record in self._held.records:
                self._out.handle(record)
            self._held.records.clear()


def run_async(work: Awaitable[T]) -> T:
    """Run a coroutine to completion (its failures are reported by :func:`cli.errors.friendly`)."""

    import asyncio

    async def main() -> T:
        return await work

    quiet_logging()
    return asyncio.run(main())


def with_admin(where: Target, work: Callable[[Admin], Awaitable[T]]) -> T:
    """Run ``work(admin)`` against the target cluster and close the admin client afterwards."""

    async def main() -> T:
        async with where.admin() as admin:
            return await work(admin)

    return run_async(main())


#: Width of tables written to a pipe or file: wide enough that ids and addresses are never cut short.
PIPE_WIDTH = 240


def out() -> Console:
    """Standard output, never wrapping text (ids and JSON must stay whole); on a terminal tables fit its
    width, into a pipe they are as wide as their content needs."""
    width = None if sys.stdout.isatty() else PIPE_WIDTH
    return Console(highlight=False, soft_wrap=True, emoji=False, width=width)


def cell(value: object) -> Text:
    """A table cell showing ``value`` as it is (server data is never read as rich markup)."""
    return Text("" if value is None else str(value))


def err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON (records through ``dataclasses.asdict``, enums by value)."""
    out().out(json.dumps(to_plain(data), ensure_ascii=False, indent=2), highlight=False)


def to_plain(data: Any) -> Any:
    """JSON-ready data from records, enums, bytes, tuples and mappings."""
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return {f.name: to_plain(getattr(data, f.name)) for f in dataclasses.fields(data)}
    if isinstance(data, dict):
        return {str(k): to_plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [to_plain(v) for v in data]
    if isinstance(data, enum.Enum):
        return data.value
    return data


def walking(what: str) -> Progress:
    """A progress bar on standard error for a command that walks many brokers, clients or queues.

    It never touches standard output (``--json`` stays clean) and shows only on a terminal, so pipes and
    logs get no control characters; ``transient`` clears it once the walk is over.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = err()
    return Progress(
        TextColumn(what),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
