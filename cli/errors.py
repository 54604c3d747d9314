"""Turning failures into one readable line and a non-zero exit, never a traceback.

Exit codes: 2 for a wrong command line (usage), 1 for a failure while running, 130 for Ctrl-C.
``RMQ_DEBUG=1`` adds the traceback behind an ``error:`` line, for bug reports.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

P = ParamSpec("P")
R = TypeVar("R")

DEBUG_ENV = "RMQ_DEBUG"

_stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class CliError(Exception):
    """A user-facing failure: its message is printed as is."""


#: What a command may fail with at run time: the user's input, files, the network and the peers. Each
#: library's errors share one base class whose message already says what failed and where; they are named
#: here as (module, class), because a command imports only the libraries it uses (``rmq --help`` none).
LIBRARY_ERRORS: tuple[tuple[str, str], ...] = (
    ("admin.errors", "AdminError"),
    ("producer.errors", "ProducerError"),
    ("consumer.errors", "ConsumerError"),
    ("rocketmq_wire.transport.errors", "RemotingError"),
    ("rocketmq_wire.errors", "CodecError"),
    ("broker.store.message_store", "StoreLockedError"),
)


def expected_errors() -> tuple[type[BaseException], ...]:
    """:class:`CliError`, OS errors, timeouts and the :data:`LIBRARY_ERRORS` of the libraries loaded so
    far: an exception of a library that was never imported cannot have been raised."""
    loaded = tuple(
        getattr(sys.modules[module], name) for module, name in LIBRARY_ERRORS if module in sys.modules
    )
    return (CliError, *loaded, OSError, TimeoutError)


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "") == "1"


def one_line(text: str) -> str:
    """Messages can quote user input or a peer's remark with line breaks; the error stays one line."""
    return " ".join(text.split())


def print_error(message: str) -> None:
    """``error: message`` on standard error, the message shown literally (it may hold ``[…]``)."""
    _stderr.print(f"[bold red]error:[/] {escape(one_line(message))}")


def fail(message: str, code: int = 1) -> typer.Exit:
    print_error(message)
    return typer.Exit(code)


def friendly(func: Callable[P, R]) -> Callable[P, R]:
    """Run a command, mapping expected failures to ``error: …`` and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None
        except Exception as exc:
            if not isinstance(exc, expected_errors()):
                raise
            if debugging():
                traceback.print_exc()
            raise fail(str(exc) or type(exc).__name__) from None

    return wrapper


def internal_error(exc: Exception) -> NoReturn:
    """The last resort for a failure nobody foresaw: still one line (the traceback with ``RMQ_DEBUG=1``)."""
    if debugging():
        traceback.print_exception(exc)
    print_error(f"internal error: {type(exc).__name__}: {exc}")
    sys.exit(1)


class OneLineErrorsGroup(TyperGroup):
    """The root command group: a usage error (missing argument, bad option value) is one ``error:`` line
    and exit code 2, instead of a usage block and a boxed message; any other failure is one line too."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as exc:
            # typer has already shown the help for a bare group (it tells this case by the class name too)
            if type(exc).__name__ != "NoArgsIsHelpError":
                ctx = getattr(exc, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                print_error(f"{exc.format_message()}{hint}")
            sys.exit(exc.exit_code)
        except typer.Abort:
            print_error("aborted")
            sys.exit(1)
        except Exception as exc:
            internal_error(exc)
        sys.exit(result if isinstance(result, int) else 0)
