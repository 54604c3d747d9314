"""TLS options, with Apache's setting names: the servers' (``rmq broker``, ``rmq namesrv``) and every
client command's (``rmq --tls ...``).

A server's mode defaults to Apache's (permissive: TLS and plain clients on one port) and takes ``tls.*``
settings from its config file and from ``--tls-config`` (Apache's ``tls.properties``). Client commands use
TLS when ``rmq --tls`` or ``RMQ_TLS=true`` says so (Apache's tools: ``-Dtls.enable=true``), with the client
settings of ``--tls-config``/``RMQ_TLS_CONFIG``.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.errors import CliError

if TYPE_CHECKING:  # imported when used: every rmq call pays for what it imports at start
    import ssl

    from rocketmq_wire.transport.tls import TlsConfig

TLS_ENV = "RMQ_TLS"
TLS_CONFIG_ENV = "RMQ_TLS_CONFIG"


class ServerTlsMode(enum.StrEnum):
    disabled = "disabled"
    permissive = "permissive"
    enforcing = "enforcing"


TlsModeOption = Annotated[
    ServerTlsMode | None,
    typer.Option(
        "--tls-mode",
        case_sensitive=False,
        help="tls.server.mode: disabled, permissive (TLS and plain clients) or enforcing (TLS only) "
        "[default: permissive, as Apache]",
    ),
]
TlsConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--tls-config",
        exists=True,
        dir_okay=False,
        readable=True,
        help="Apache's tls.properties (tls.config.file): certificates, test mode, client auth",
    ),
]


def server_tls(
    settings: Mapping[str, str], mode: ServerTlsMode | None, config_file: Path | None
) -> TlsConfig:
    """A server's TLS settings: the ``tls.*`` ones of its config file, then the options given."""
    from rocketmq_wire.transport.tls import CONFIG_FILE, SERVER_MODE, TlsConfig, TlsError

    chosen = {key: value for key, value in settings.items() if key.startswith("tls.")}
    if mode is not None:
        chosen[SERVER_MODE] = mode.value
    if config_file is not None:
        chosen[CONFIG_FILE] = str(config_file)
    try:
        return TlsConfig.from_settings(chosen)
    except TlsError as exc:
        raise CliError(str(exc)) from None


def client_ssl_from_env() -> ssl.SSLContext | None:
    """The TLS context client commands connect with, or None for plain connections (``RMQ_TLS``)."""
    enabled = os.environ.get(TLS_ENV, "").strip().lower()
    if enabled in ("", "0", "false", "no", "off"):
        return None
    if enabled not in ("1", "true", "yes", "on"):
        raise CliError(f"{TLS_ENV}={enabled!r}: use true or false")
    from rocketmq_wire.transport.tls import TlsError, client_context

    try:
        return client_context(os.environ.get(TLS_CONFIG_ENV, "").strip() or None)
    except TlsError as exc:
        raise CliError(str(exc)) from None
